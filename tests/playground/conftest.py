import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random ChatML model with a response_template, built locally (no hub)."""
    from playground.tinymodel import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny") / "model"))


@pytest.fixture(scope="session")
def tiny_model_no_template(tmp_path_factory):
    from playground.tinymodel import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny2") / "model", with_response_template=False))
