"""The layered merge (memento.layers): partial values, user-level keys, trust, bad files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from memento.config import USER_LEVEL_KEYS, MementoConfig
from memento.configfile import normalize, read_config_file
from memento.layers import SettingsLayers, deep_merge, dotted, is_user_level, split_user_level
from memento.security.confine import Confinement
from memento.security.trust import TrustStore


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("MEMENTO_CONFIG_DIR", str(user))
    monkeypatch.setenv("MEMENTO_DATA_DIR", str(tmp_path / "data"))
    root = tmp_path / "ws"
    (root / ".memento").mkdir(parents=True)
    return root, user


def test_deep_merge_keeps_what_a_patch_does_not_name_and_null_removes() -> None:
    base = {"provider": {"kind": "openai", "base_url": "u"}, "tools": {"bash": "deny"}}
    merged = deep_merge(base, {"tools": {"max_output_chars": 5000}, "provider": {"base_url": None}})
    assert merged == {"provider": {"kind": "openai"}, "tools": {"bash": "deny", "max_output_chars": 5000}}
    assert base["provider"] == {"kind": "openai", "base_url": "u"}  # inputs untouched


def test_camel_and_snake_case_name_the_same_field() -> None:
    assert normalize({"provider": {"baseUrl": "a", "api_key_env": "B", "local": {"nCtx": 1}}}) == {
        "provider": {"base_url": "a", "api_key_env": "B", "local": {"n_ctx": 1}}
    }
    assert dotted(("provider", "local", "server_command")) == "provider.local.serverCommand"


def _fields(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, info in model.model_fields.items():
        path = (*prefix, name)
        out.append(path)
        for kind in (info.annotation, *getattr(info.annotation, "__args__", ())):
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                out += _fields(kind, path)
    return out


BEHAVIOUR_WITH_TELLING_NAMES = {
    "compaction.prune.protectedPaths",  # workspace globs that are never pruned
    "checkpoints.mutatingTools",
    "checkpoints.exclude",
    "tools.bashTimeout",
}


def test_every_setting_that_names_a_program_a_place_or_a_permission_is_user_level() -> None:
    telling = ("command", "url", "env", "dir", "path", "provider", "key", "bash", "permission")
    for path in _fields(MementoConfig):
        name = dotted(path)
        if any(word in path[-1].lower() for word in telling) and name not in BEHAVIOUR_WITH_TELLING_NAMES:
            assert is_user_level(path), f"{name} looks user-level: add it to config.USER_LEVEL_KEYS"
    assert set(USER_LEVEL_KEYS) >= {
        "tools.bash",
        "provider",
        "compaction.summaryProvider",
        "advisor.provider",
    }


def test_split_names_the_user_level_keys_a_workspace_sets() -> None:
    values = normalize(
        {"tools": {"bash": "allow", "bashTimeout": 5}, "provider": {"local": {"serverCommand": ["sh"]}}}
    )
    kept, removed = split_user_level(values)
    assert kept == {"tools": {"bash_timeout": 5}}
    assert removed == ["provider.local.serverCommand", "tools.bash"]


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"a = '\xff'", "not UTF-8 (byte 0xff at offset 5)"),
        (b"a = " + b"[" * 50_000 + b"]" * 50_000, "nested too deeply"),
        (b"a = " + b"{b = " * 50_000 + b"1" + b"}" * 50_000, "nested too deeply"),
        (b"[x\n", "invalid TOML"),
    ],
)
def test_unreadable_files_say_why(tmp_path: Path, data: bytes, reason: str) -> None:
    file = read_config_file(write(tmp_path / "config.toml", data))
    assert file.values == {} and file.problem is not None and reason in file.problem
    assert str(tmp_path / "config.toml") in file.problem


def test_a_directory_a_fifo_and_a_huge_file_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "dir.toml").mkdir()
    os.mkfifo(tmp_path / "fifo.toml")  # would block a reader forever
    write(tmp_path / "big.toml", "# " + "x" * 2_000_000)
    for name, reason in (
        ("dir.toml", "not a regular file"),
        ("fifo.toml", "not a regular file"),
        ("big.toml", "limit"),
    ):
        problem = read_config_file(tmp_path / name).problem
        assert problem is not None and reason in problem


def test_a_file_linked_out_of_its_folder_is_not_read(tmp_path: Path) -> None:
    secret = write(tmp_path / "secret.toml", "[tools]\nbash = 'allow'\n")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "config.toml").symlink_to(secret)
    file = read_config_file(tmp_path / "ws" / "config.toml", Confinement.of(tmp_path / "ws"))
    assert file.values == {} and file.problem is not None and "through a symlink" in file.problem


def resolved(root: Path, init: Any = None, *pushes: Any):  # -> Resolved
    layers = SettingsLayers(root)
    layers.initialize(init)
    for settings in pushes:
        layers.push(settings)
    return layers.resolve()


def test_untrusted_workspace_keeps_behaviour_keys_and_drops_user_level_ones(dirs: tuple[Path, Path]) -> None:
    root, user = dirs
    write(user / "config.toml", '[provider]\nkind = "openai"\nbaseUrl = "https://mine/v1"\n')
    write(
        root / ".memento" / "config.toml",
        '[provider]\nbaseUrl = "https://theirs"\n[compaction]\nkeepRecentTokens = 3000\n',
    )
    result = resolved(root)
    assert result.config.provider.base_url == "https://mine/v1"
    assert result.config.compaction.keep_recent_tokens == 3000
    assert result.ignored == ["provider.baseUrl"] and not result.trusted
    assert (
        result.sources["provider.baseUrl"] == "user"
        and result.sources["compaction.keepRecentTokens"] == "workspace"
    )
    warning = result.ignored_warning()
    assert warning is not None and "provider.baseUrl" in warning and "memento trust" in warning


def test_trust_is_pinned_to_the_content(dirs: tuple[Path, Path]) -> None:
    root, _ = dirs
    config = write(root / ".memento" / "config.toml", '[tools]\nbash = "allow"\n')
    layers = SettingsLayers(root)
    _, reason = layers.record_trust()
    assert reason is None
    assert layers.resolve().config.tools.bash == "allow" and layers.resolve().trusted
    config.write_text('[tools]\nbash = "allow"\n# one more line\n')
    after = layers.resolve()
    assert after.config.tools.bash == "ask" and after.ignored == ["tools.bash"]
    assert TrustStore().recorded(root) is not None  # the record stays; it no longer matches


def test_the_editor_beats_a_trusted_workspace_and_can_veto_it(dirs: tuple[Path, Path]) -> None:
    root, _ = dirs
    write(root / ".memento" / "config.toml", '[tools]\nbash = "allow"\n')
    SettingsLayers(root).record_trust()
    assert resolved(root, {"memento": {"tools": {"bash": "deny"}}}).config.tools.bash == "deny"
    vetoed = resolved(root, {"workspaceTrusted": False})
    assert vetoed.config.tools.bash == "ask" and not vetoed.trusted
    layers = SettingsLayers(root)
    layers.initialize({"workspaceTrusted": False})
    assert layers.record_trust()[1] is not None


def test_pushes_refine_initialization_options_and_bad_values_cost_only_themselves(
    dirs: tuple[Path, Path],
) -> None:
    root, _ = dirs
    result = resolved(
        root,
        {"provider": {"kind": "openai", "baseUrl": "https://x/v1", "model": "m"}},
        {"memento": {"tools": {"bash": "deny"}}},
        {"memento": {"provider": {"contextWindow": "huge", "model": "n"}}},
        None,
        {},
    )
    assert result.config.provider.base_url == "https://x/v1" and result.config.provider.model == "n"
    assert result.config.tools.bash == "deny"
    assert result.config.provider.context_window == 128_000
    assert any("provider.contextWindow" in p and "didChangeConfiguration" in p for p in result.problems)


def test_the_user_file_is_a_layer_below_the_workspace(dirs: tuple[Path, Path]) -> None:
    root, user = dirs
    write(user / "config.toml", "[compaction]\nkeepRecentTokens = 1000\nreserveTokens = 2000\n")
    write(root / ".memento" / "config.toml", "[compaction]\nkeepRecentTokens = 3000\n")
    result = resolved(root)
    assert (result.config.compaction.keep_recent_tokens, result.config.compaction.reserve_tokens) == (
        3000,
        2000,
    )


def test_editor_settings_nested_too_deeply_are_refused_not_fatal(dirs: tuple[Path, Path]) -> None:
    root, _ = dirs
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    layers = SettingsLayers(root)
    layers.initialize({"tools": {"bash": "deny"}})
    layers.push({"memento": deep})
    result = layers.resolve()
    assert result.config.tools.bash == "deny"
    assert any("nested too deeply" in p for p in result.problems)
