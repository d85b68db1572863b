"""Model policy (issue #10 item 5): allow-list, one cache entry per resolved model, size check from metadata,
bounded LRU of loaded models, messages that say nothing about the server's files."""

import os

import pytest

from playground import backends, policy
from playground.policy import ModelCache, ModelPolicy, ModelRefused


@pytest.fixture
def public_rules(tiny_model_dir):
    rules = ModelPolicy(allowed=(f"tiny={tiny_model_dir}", "Qwen/Qwen3-0.6B"), hide_paths=True)
    previous = policy.configure(rules)
    yield rules
    policy.configure(previous)


def test_public_policy_loads_only_allowed_models_and_hides_the_file_system(public_rules, tiny_model_dir, tmp_path):
    lm = backends.load_model("tiny")
    assert lm.name == "tiny"
    with pytest.raises(backends.ModelLoadError):  # the folder's absolute path: refused like any other path
        backends.load_model(tiny_model_dir)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "config.json").write_text("{}")
    messages = set()
    for name in (str(secret), str(tmp_path / "missing"), "/etc/passwd", "/etc", "../../etc", "gpt2", "~"):
        with pytest.raises(backends.ModelLoadError) as info:
            backends.load_model(name)
        text = str(info.value)
        assert "It loads: tiny, Qwen/Qwen3-0.6B." in text
        assert "python app.py --model" in text  # how to run any model locally
        messages.add(text.replace(policy.shown(name), "NAME"))
    assert len(messages) == 1, messages  # existing folder, file, missing path, hub id: the same answer
    long_name = "x" * 5000
    with pytest.raises(backends.ModelLoadError) as info:
        backends.load_model(long_name)
    assert "at most" in str(info.value) and len(str(info.value)) < 300


def test_a_public_server_does_not_answer_to_the_real_path_of_an_allowed_folder(tiny_model_dir, tmp_path,
                                                                                  monkeypatch):
    """The model box loaded '/work/.../examples/builtin_model/model' (the built-in model, allowed by its absolute
    path and shown as 'examples/builtin_model/model'), so a visitor could confirm where the app lives by trying
    paths."""
    monkeypatch.chdir(os.path.dirname(os.path.dirname(tiny_model_dir)))
    rel = os.path.relpath(tiny_model_dir)
    public = ModelPolicy(allowed=(rel, "abs=" + os.path.realpath(tiny_model_dir)), hide_paths=True)
    assert public.resolve("abs").key == public.resolve(rel).key
    assert public.resolve(rel).location == os.path.realpath(tiny_model_dir)
    assert public.resolve("./" + rel).key == public.resolve(rel).key  # spellings of the allowed name still work
    with pytest.raises(ModelRefused):  # not even when the operator allowed it by its absolute path
        ModelPolicy(allowed=(os.path.realpath(tiny_model_dir),), hide_paths=True).resolve(
            os.path.realpath(tiny_model_dir))
    with pytest.raises(ModelRefused) as info:
        public.resolve(os.path.realpath(tiny_model_dir))
    with pytest.raises(ModelRefused) as other:
        public.resolve(str(tmp_path / "not-there"))
    assert str(info.value).split("'")[2:] == str(other.value).split("'")[2:]  # the same answer as any refusal
    private = ModelPolicy(allowed=(rel,))
    assert private.resolve(os.path.realpath(tiny_model_dir)).key == public.resolve(rel).key


def test_allow_any_hub_never_opens_a_local_folder(tiny_model_dir, tmp_path, monkeypatch):
    rules = ModelPolicy(allowed=("tiny=" + tiny_model_dir,), allow_any_hub=True, hide_paths=True)
    assert rules.resolve("org/some-model").source == "hub"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "local").mkdir(parents=True)  # a folder that looks like a hub id
    with pytest.raises(ModelRefused) as info:
        rules.resolve("org/local")
    assert "or any hub id" in str(info.value)
    with pytest.raises(ModelRefused):
        rules.resolve("/abs/path")


def test_every_spelling_of_a_folder_is_one_cache_entry(tiny_model_dir, tmp_path):
    previous = policy.configure(ModelPolicy())
    try:
        link = tmp_path / "link"
        os.symlink(tiny_model_dir, link)
        rel = os.path.relpath(tiny_model_dir)
        spellings = [tiny_model_dir, tiny_model_dir + "/", tiny_model_dir + "//", tiny_model_dir + "/.", str(link),
                     rel, "./" + rel, os.path.join(os.path.dirname(tiny_model_dir), "..",
                                                    os.path.basename(os.path.dirname(tiny_model_dir)),
                                                    os.path.basename(tiny_model_dir))]
        loaded = {id(backends.load_model(s).model) for s in spellings}
        assert len(loaded) == 1
        keys = {policy.current().resolve(s).key for s in spellings}
        assert keys == {"folder:" + os.path.realpath(tiny_model_dir)}
    finally:
        policy.configure(previous)


def test_size_check_from_recorded_hub_metadata():
    rules = ModelPolicy(allowed=("HuggingFaceTB/SmolLM3-3B",), hide_paths=True)
    smollm3 = rules.resolve("HuggingFaceTB/SmolLM3-3B")
    recorded = {"BF16": 3_075_098_624}  # get_safetensors_metadata("HuggingFaceTB/SmolLM3-3B").parameter_count
    need_gpu = int(3_075_098_624 * 2 * policy.LOAD_OVERHEAD)
    assert rules.check_size(smollm3, "cuda", metadata=recorded, free_memory=16 * 2**30, free_disk=50 * 2**30) \
        == need_gpu
    with pytest.raises(ModelRefused) as info:  # a T4 with another model already loaded
        rules.check_size(smollm3, "cuda", metadata=recorded, free_memory=6 * 2**30, free_disk=50 * 2**30)
    assert "3.08B parameters" in str(info.value) and "GPU memory" in str(info.value)
    with pytest.raises(ModelRefused) as info:  # on CPU it loads as float32: 4 bytes a parameter
        rules.check_size(smollm3, "cpu", metadata=recorded, free_memory=12 * 2**30, free_disk=50 * 2**30)
    assert f"needs about {3_075_098_624 * 4 * policy.LOAD_OVERHEAD / 2**30:.1f} GiB of CPU memory" in str(info.value)
    with pytest.raises(ModelRefused) as info:  # the download would fill the disk
        rules.check_size(smollm3, "cuda", metadata=recorded, free_memory=80 * 2**30, free_disk=2 * 2**30)
    assert "disk" in str(info.value)
    # An unknown hub id whose size cannot be read is refused when only an allow-any switch let it in.
    anyhub = ModelPolicy(allowed=(), allow_any_hub=True)
    with pytest.raises(ModelRefused) as info:
        anyhub.check_size(anyhub.resolve("org/x"), "cuda")  # no network here: no metadata
    assert "cannot be checked" in str(info.value)


def test_size_check_of_a_local_folder_reads_its_safetensors(tiny_model_dir):
    rules = ModelPolicy()
    tiny = rules.resolve(tiny_model_dir)
    counts = policy.parameter_counts(tiny)
    lm = backends.load_model(tiny_model_dir)
    assert sum(counts.values()) == sum(p.numel() for p in lm.model.parameters())
    with pytest.raises(ModelRefused):
        rules.check_size(tiny, "cpu", free_memory=1000)


def test_model_cache_is_a_bounded_lru():
    evicted = []
    cache = ModelCache(max_loaded=2, on_evict=evicted.append)
    loads = []

    def loader(v):
        return lambda: loads.append(v) or v

    assert cache.get(("a",), loader("A")) == "A"
    assert cache.get(("b",), loader("B")) == "B"
    assert cache.get(("a",), loader("A2")) == "A"  # cached, and now most recent
    assert cache.get(("c",), loader("C")) == "C"  # evicts b, the least recently used
    assert evicted == ["B"] and cache.keys() == [("a",), ("c",)] and loads == ["A", "B", "C"]
    with pytest.raises(RuntimeError):
        cache.get(("d",), lambda: (_ for _ in ()).throw(RuntimeError("load failed")))
    assert cache.get(("d",), loader("D")) == "D"  # a failed load is retried, not cached
