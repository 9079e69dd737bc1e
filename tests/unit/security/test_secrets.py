"""One redaction step and the environment of child processes (memento.security.secrets)."""

from __future__ import annotations

import json

from memento.config import MementoConfig
from memento.security.secrets import REDACTED, Secrets

KEY = "sk-unit-4f2a9b7c1d"
ENV = {
    "OPENAI_API_KEY": KEY,
    "MY_PROVIDER_VAR": "pk-named-by-apiKeyEnv-81",
    "GITHUB_TOKEN": "ghp_0123456789abcdef",
    "SHORT_TOKEN": "abc",
    "AWS_REGION": "eu-west-1",
    "PATH": "/usr/bin",
    "HOME": "/home/me",
}


def secrets() -> Secrets:
    config = MementoConfig.model_validate({"provider": {"kind": "openai", "apiKeyEnv": "MY_PROVIDER_VAR"}})
    return Secrets.from_config(config, ENV)


def test_values_of_key_variables_are_redacted_but_short_ones_and_plain_settings_are_not() -> None:
    s = secrets()
    text = f"{KEY} pk-named-by-apiKeyEnv-81 ghp_0123456789abcdef abc eu-west-1"
    assert s.redact(text) == f"{REDACTED} {REDACTED} {REDACTED} abc eu-west-1"


def test_json_escaped_values_are_redacted_in_serialized_messages() -> None:
    tricky = 'sk-"quoted\\key-77'
    s = Secrets.from_config(MementoConfig(), {"X_API_KEY": tricky})
    body = json.dumps({"message": f"echo {tricky}"})
    assert tricky not in json.loads(s.redact_json(body))["message"]
    assert json.loads(s.redact_json(body)) == {"message": f"echo {REDACTED}"}


def test_redact_tree_returns_the_same_object_when_nothing_changed() -> None:
    s = secrets()
    clean = {"a": ["x", {"b": "y"}]}
    assert s.redact_tree(clean) is clean
    dirty = {"a": ["x", {"b": f"key {KEY}"}]}
    assert s.redact_tree(dirty) == {"a": ["x", {"b": f"key {REDACTED}"}]}


def test_a_secret_split_across_deltas_is_redacted_whole() -> None:
    stream = secrets().stream()
    text = f"the key is {KEY}, done; sk-unit is not a key"
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
    out = "".join(stream.feed("text", piece) for piece in pieces)
    out += "".join(stream.flush().values())
    assert out == f"the key is {REDACTED}, done; sk-unit is not a key"


def test_child_processes_lose_key_and_denied_variables() -> None:
    env = secrets().child_env(ENV, PAGER="cat")
    assert env == {"PATH": "/usr/bin", "HOME": "/home/me", "PAGER": "cat"}


def test_the_process_set_only_grows() -> None:
    first = Secrets.from_config(MementoConfig(), {"A_API_KEY": "first-secret-value"})
    second = Secrets.from_config(MementoConfig(), {"B_API_KEY": "second-secret-value"})
    merged = first.merged(second)
    assert merged.redact("first-secret-value second-secret-value") == f"{REDACTED} {REDACTED}"


def test_any_split_of_any_text_redacts_as_the_whole_text_would() -> None:
    import random

    values = {"A_API_KEY": "aaXaaYaaZ-1", "B_TOKEN": "aaXaaYaa"}  # one a prefix of the other
    s = Secrets.from_config(MementoConfig(), values)
    rng = random.Random(7)
    alphabet = "aXYZ-1 "
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        text += rng.choice(["", "aaXaaYaaZ-1", "aaXaaYaa", "aaXaa"]) + "".join(
            rng.choice(alphabet) for _ in range(5)
        )
        stream = s.stream()
        out, at = "", 0
        while at < len(text):
            step = rng.randint(1, 6)
            out += stream.feed("k", text[at : at + step])
            at += step
        out += "".join(stream.flush().values())
        assert out == s.redact(text), text
