"""Server configuration, parity comparison and special-token checks (no server needed)."""

import json
import sys
from pathlib import Path

import pytest

from playground import remote, remote_panel

ROOT = Path(__file__).resolve().parents[2]


def test_remote_spec_with_options():
    s = remote.parse_remote_spec("gpu=http://10.0.0.5:8000/v1,model=Qwen/Qwen3-8B,key_env=GPU_KEY,tokenizer=/m/tok")
    assert (s.name, s.base_url, s.model, s.tokenizer, s.key_env) == \
        ("gpu", "http://10.0.0.5:8000/v1", "Qwen/Qwen3-8B", "/m/tok", "GPU_KEY")
    assert s.host == "10.0.0.5:8000" and s.trust_env
    assert remote.parse_remote_spec("a=https://h.example/").base_url == "https://h.example/v1"
    assert remote.parse_remote_spec("a=http://h:1/api/v1/").base_url == "http://h:1/api/v1"


@pytest.mark.parametrize("spec, message", [
    ("http://h:8000/v1", "expected NAME=URL"),
    ("bad name=http://h/v1", "expected NAME=URL"),
    ("a=ftp://h/v1", "not an http"),
    ("a=http://user:pw@h/v1", "credentials"),
    ("a=http://h/v1?x=1", "no query"),
    ("a=http://h:99999/v1", "invalid port"),
    ("a=http://h/v1,color=red", "unknown option"),
    ("a=http://h/v1,model=x,model=y", "given twice"),
    ("a=http://h/v1,key_env=not a var", "key_env must name"),
])
def test_bad_remote_specs_say_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match=message):
        remote.parse_remote_spec(spec)


def test_app_flags(monkeypatch):
    sys.path.insert(0, str(ROOT))
    import app

    a = app.parse_args(["--remote", "one=http://127.0.0.1:8000/v1", "--remote", "two=http://h:9/v1,model=m"])
    assert [s.name for s in a.remotes] == ["one", "two"] and a.remotes[1].model == "m"
    assert a.allow_any_remote is False and app.parse_args(["--allow-any-remote"]).allow_any_remote
    with pytest.raises(SystemExit):
        app.parse_args(["--remote", "x=http://a/v1", "--remote", "x=http://b/v1"])  # duplicate name


def test_api_key_comes_from_the_environment_and_is_never_shown(monkeypatch):
    monkeypatch.setenv("SECRET_KEY_VAR", "sk-very-secret")
    s = remote.parse_remote_spec("vllm=http://127.0.0.1:8000/v1,key_env=SECRET_KEY_VAR")
    assert s.api_key() == "sk-very-secret"
    with remote._client(s) as c:
        assert c.headers["authorization"] == "Bearer sk-very-secret"
    shown = repr(s) + str(remote_panel.backend_choices([s], True)) + remote.RemoteSource(s, "m").label
    assert "sk-very-secret" not in shown and "SECRET_KEY_VAR" not in shown
    monkeypatch.delenv("SECRET_KEY_VAR")
    with remote._client(s) as c:
        assert "authorization" not in c.headers
    # a typed URL gets no key and nothing from this machine's environment
    custom = remote.custom_server("http://127.0.0.1:8000")
    assert custom.key_env is None and custom.trust_env is False and custom.base_url.endswith("/v1")


def test_typed_urls_need_the_flag():
    servers = [remote.parse_remote_spec("ts=http://127.0.0.1:1/v1,model=m")]
    assert remote_panel.source_for("local", "", "x", servers, False) is None
    src = remote_panel.source_for("ts", "", "", servers, False)
    assert src.model == "m" and src.server is servers[0]
    with pytest.raises(ValueError, match="--allow-any-remote"):
        remote_panel.source_for(remote_panel.CUSTOM, "http://169.254.169.254/v1", "m", servers, False)
    with pytest.raises(ValueError, match="No server named"):
        remote_panel.source_for("other", "", "m", servers, True)
    assert remote_panel.source_for(remote_panel.CUSTOM, "http://10.1.2.3:8000", "m", servers, True).server.host \
        == "10.1.2.3:8000"
    assert [v for _, v in remote_panel.backend_choices(servers, False)] == ["local", "ts"]


def test_refused_fields():
    detail = "Unexpected fields in the request: {'skip_special_tokens'}"
    assert remote.refused_fields(422, detail, {"skip_special_tokens": False, "seed": 1}) == ["skip_special_tokens"]
    assert remote.refused_fields(422, detail, {"seed": 1}) == []  # not sent: nothing to drop
    assert remote.refused_fields(500, detail, {"skip_special_tokens": False}) == []
    assert remote.refused_fields(400, "Extra inputs are not permitted: seed, chat_template_kwargs",
                                 {"seed": 1, "chat_template_kwargs": {}}) == ["chat_template_kwargs", "seed"]
    assert remote.refused_fields(400, "model not found", {"seed": 1}) == []


def test_openai_messages_wire_format():
    history = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "reasoning_content": "r", "_raw": "raw text",
         "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
        {"role": "tool", "content": "sunny", "name": "get_weather"},
    ]
    wire = remote.openai_messages(history)
    assert "_raw" not in wire[1] and wire[1]["content"] == ""
    call = wire[1]["tool_calls"][0]
    assert call == {"id": "call_0", "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})}}
    assert wire[2]["tool_call_id"] == "call_0"
    assert history[1]["tool_calls"][0]["function"]["arguments"] == {"city": "Oslo"}  # input untouched


def test_compare_messages_field_by_field():
    ours = {"role": "assistant", "reasoning_content": "think", "content": "Hi!\n",
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}], "lang": "en"}
    server = {"content": "Hi!", "reasoning": "thought",
              "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 2}"}},
                             {"id": "y", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}
    rows = {r["field"]: r["verdict"] for r in remote.compare_messages(ours, server)}
    assert rows == {"content": "whitespace", "reasoning (reasoning_content)": "differs",
                    "tool_calls (count)": "differs", "tool_calls[0].name": "same",
                    "tool_calls[0].arguments": "differs", "tool_calls[1].name": "differs",
                    "tool_calls[1].arguments": "differs", "lang": "template only"}
    same = remote.compare_messages({"role": "assistant", "content": "x"},
                                   {"content": "x", "reasoning": None, "tool_calls": []})
    assert {r["verdict"] for r in same} == {"same"}
    thinking = remote.compare_messages({"thinking": "t"}, {"reasoning": "t"})
    assert thinking[1] == {"field": "reasoning (thinking)", "template": "t", "server": "t", "verdict": "same"}


def test_parity_html_escapes_and_flags_sampling():
    rows = remote.compare_messages({"content": "<script>alert(1)</script>\u202e"}, {"content": "<b>"})
    page = remote_panel.parity_html(rows, "m @ s", {"temperature": 0.7})
    assert "<script>" not in page and "&lt;script&gt;" in page and "⟨U+202E⟩" in page
    assert 'id="parity-differs"' in page and "Sampling was on (temperature 0.7)" in page


def test_stripped_special_delimiters(tmp_path):
    from examples import builtin_model
    from transformers import AutoTokenizer

    from tests.serving import special_markers_copy

    from playground.session import template_to_text

    special = AutoTokenizer.from_pretrained(special_markers_copy(builtin_model.MODEL_DIR, tmp_path / "m"))
    plain = AutoTokenizer.from_pretrained(builtin_model.MODEL_DIR)
    tpl = template_to_text(plain.response_template)
    stripped = special.decode(special.encode("<think>\nhm</think>\n\nHello<|im_end|>"), skip_special_tokens=True)
    assert "</think>" not in stripped
    found = remote.stripped_special_delimiters(stripped, tpl, special)
    assert set(found) == {"<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>"}
    # the shipped tokenizer keeps its markers; only the end-of-turn token is special
    kept = plain.decode(plain.encode("hm</think>\n\nHello<|im_end|>"), skip_special_tokens=True)
    assert "</think>" in kept and remote.stripped_special_delimiters(kept, tpl, plain) == []
    assert remote.stripped_special_delimiters("Hello", tpl, plain) == ["<|im_end|>"]
    assert remote.stripped_token_warning([], True) == ""
    assert "refused skip_special_tokens" in remote.stripped_token_warning(["<think>"], True)


def test_remote_models_follow_the_model_policy(tmp_path):
    from examples import builtin_model

    from playground import policy
    from playground.limits import Limits
    from playground.ui import build_ui

    server = remote.parse_remote_spec(f"ts=http://127.0.0.1:1/v1,model={builtin_model.MODEL_DIR}")
    bare = remote.parse_remote_spec("open=http://127.0.0.1:1/v1")
    previous = policy.configure(policy.ModelPolicy(allowed=("Qwen/Qwen3-0.6B",), hide_paths=True))
    try:
        # the operator's model is trusted; its folder is shown the way the policy shows folders
        lm = remote.RemoteSource(server, "").load()
        assert lm.model is None and lm.tokenizer.response_template
        assert builtin_model.MODEL_DIR not in remote.RemoteSource(server, "").label
        # a name a visitor types goes through the allow-list: the model box's own refusal, which is the same
        # whether or not such a folder exists
        for typed in (str(tmp_path), str(tmp_path / "missing"), "someone/else"):
            with pytest.raises(remote.ModelLoadError) as err:
                remote.RemoteSource(bare, typed).load()
            with pytest.raises(policy.ModelRefused) as box:
                policy.current().resolve(typed)
            assert str(err.value) == str(box.value) and "does not load" in str(err.value)
        with pytest.raises(remote.ModelLoadError):
            remote.RemoteSource(server, "/etc").load()  # another name on a configured server: not trusted
        # typed server URLs are refused on a public deployment
        with pytest.raises(ValueError, match="private use"):
            build_ui(builtin_model.MODEL_DIR, preload=False, limits=Limits.public_space(), allow_any_remote=True)
    finally:
        policy.configure(previous)
