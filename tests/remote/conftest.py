"""A real `transformers serve` on a free loopback port, serving the built-in model from its folder."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def builtin_dir():
    from examples import builtin_model

    if not builtin_model.available():
        pytest.fail("the built-in model folder is incomplete")
    return builtin_model.MODEL_DIR


@pytest.fixture(scope="session")
def serve(tmp_path_factory, builtin_dir):
    """One server for the module's tests; it loads each model folder on first request."""
    from tests.serving import ServeProcess, warm_up

    proc = ServeProcess(tmp_path_factory.mktemp("serve"))
    try:
        warm_up(proc.url, builtin_dir)
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def special_markers_dir(tmp_path_factory, builtin_dir):
    """The built-in model with its reasoning/tool markers made special tokens."""
    from tests.serving import special_markers_copy

    return special_markers_copy(builtin_dir, tmp_path_factory.mktemp("special") / "model")
