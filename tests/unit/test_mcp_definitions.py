"""MCP server definitions as each tool documents its file — Memento's `mcp.servers` (user file
and editor settings), VS Code's `mcp.json` (user and `.vscode/`, JSONC, `servers`, `${input:…}`,
`${env:…}`, `envFile`), Claude Code's `.mcp.json` (`mcpServers`, `${VAR}`, `${VAR:-default}`)
and Cursor's `.cursor/mcp.json` (`mcpServers`, `${env:…}`, `${userHome}`) — resolve to the
same server; keys never leave; the repository's definitions are marked as such and set no
policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memento.config import McpSettings, MementoConfig
from memento.configfile import normalize, read_config_file
from memento.layers import SettingsLayers
from memento.mcp.definitions import Definition, find
from memento.mcp.jsonc import loads
from memento.mcp.names import model_name
from memento.mcp.policy import policy
from memento.mcp.trust import McpTrust
from memento.mcp.variables import Launch, Unresolved, resolve

TOKEN = "ghp_" + "s3cret" * 4
ENV = {"GH_TOKEN": TOKEN, "TOOLS_HOME": "/opt/tools"}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def expected(root: Path) -> Launch:
    return Launch(
        "stdio",
        command="/opt/tools/bin/github-mcp",
        args=("--root", str(root), "--read-only"),
        env={"GITHUB_TOKEN": TOKEN, "LOG_LEVEL": "debug"},
        cwd=str(root),
        secrets=(TOKEN,),
    )


def launches(root: Path, home: Path, settings: McpSettings) -> dict[str, Launch]:
    found = find(root, settings, home)
    assert found.problems == []
    return {
        d.source.name: resolve(d, root, home=home, environ=ENV, inputs=settings.inputs)
        for d in found.definitions
    }


def test_the_four_formats_with_their_variables_resolve_to_the_same_server(tmp_path: Path) -> None:
    root, home = tmp_path / "repo", tmp_path / "home"
    root.mkdir()
    write(
        root / ".vscode" / "mcp.json",
        """{
  // VS Code: JSONC, `servers`, `type`, inputs and envFile
  "inputs": [{"type": "promptString", "id": "gh", "description": "GitHub token", "password": true}],
  "servers": {
    "github": {
      "type": "stdio",
      "command": "${env:TOOLS_HOME}/bin/github-mcp",
      "args": ["--root", "${workspaceFolder}", "--read-only",],
      "env": {"GITHUB_TOKEN": "${input:gh}"},
      "envFile": "${workspaceFolder}/.env.mcp",
    },
  },
}""",
    )
    write(root / ".env.mcp", "# the server's own\nLOG_LEVEL=debug\n")
    write(
        root / ".mcp.json",
        json.dumps(
            {
                "mcpServers": {
                    "github": {
                        "command": "${TOOLS_HOME}/bin/github-mcp",
                        "args": ["--root", "${ROOT:-" + str(root) + "}", "--read-only"],
                        "env": {"GITHUB_TOKEN": "${GH_TOKEN}", "LOG_LEVEL": "${LOG_LEVEL:-debug}"},
                    }
                }
            }
        ),
    )
    write(
        root / ".cursor" / "mcp.json",
        json.dumps(
            {
                "mcpServers": {
                    "github": {
                        "command": "${env:TOOLS_HOME}/bin/github-mcp",
                        "args": ["--root", "${workspaceFolder}", "--read-only"],
                        "env": {"GITHUB_TOKEN": "${env:GH_TOKEN}", "LOG_LEVEL": "debug"},
                    }
                }
            }
        ),
    )
    # Memento's own, as a user config file says it (the layers keep the names as written).
    user = tmp_path / "user.toml"
    user.write_text(
        "[mcp.servers.github]\n"
        'command = "${env:TOOLS_HOME}/bin/github-mcp"\n'
        f'args = ["--root", "{root}", "--read-only"]\n'
        'env = { GITHUB_TOKEN = "${env:GH_TOKEN}", LOG_LEVEL = "debug" }\n'
        "[mcp.inputs]\n"
        f'gh = "{TOKEN}"\n'
    )
    settings = MementoConfig.model_validate(read_config_file(user).values).mcp
    resolved = launches(root, home, settings)

    assert set(resolved) == {"memento", "vscode", "claude", "cursor"}
    for source, launch in resolved.items():
        assert launch == expected(root), source


def test_user_files_of_vscode_and_cursor_are_read_and_a_url_means_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, home = tmp_path / "repo", tmp_path / "home"
    root.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("MEMENTO_VSCODE_USER_DIR", raising=False)
    write(
        home / ".config" / "Code" / "User" / "mcp.json",
        '{"servers": {"docs": {"type": "http", "url": "https://mcp.example/docs", "headers": {"Authorization": "Bearer ${input:key}"}}}}',
    )
    write(home / ".cursor" / "mcp.json", '{"mcpServers": {"web": {"url": "https://mcp.example/web"}}}')
    settings = McpSettings(inputs={"key": "k-0123456789"})
    found = find(root, settings, home)
    by_name = {d.name: d for d in found.definitions}
    assert {d.source.name for d in found.definitions} == {"vscode-user", "cursor-user"}
    assert not any(d.source.repository for d in found.definitions)
    docs = resolve(by_name["docs"], root, home=home, environ={}, inputs=settings.inputs)
    assert (docs.transport, docs.url, docs.headers) == (
        "http",
        "https://mcp.example/docs",
        {"Authorization": "Bearer k-0123456789"},
    )
    assert set(docs.secrets) == {"Bearer k-0123456789", "k-0123456789"}
    web = resolve(by_name["web"], root, home=home, environ={})
    assert (web.transport, web.url) == ("http", "https://mcp.example/web")


def test_what_cannot_start_says_why(tmp_path: Path) -> None:
    root = tmp_path
    write(
        root / ".mcp.json",
        '{"mcpServers": {"a": {"command": "x", "env": {"K": "${MISSING}"}}, "b": {"args": []}, "c": {"type": "pipe"}}}',
    )
    write(root / ".vscode" / "mcp.json", '{"servers": {"d": {"command": "x", "args": ["${input:nope}"]}}}')
    found = {d.name: d for d in find(root, McpSettings(), tmp_path / "home").definitions}
    reasons = {}
    for name, definition in found.items():
        with pytest.raises(Unresolved) as caught:
            resolve(definition, root, environ={})
        reasons[name] = str(caught.value)
    assert reasons == {
        "a": "environment variable MISSING is not set",
        "b": "a stdio server needs a `command`",
        "c": "unknown server type 'pipe' (stdio, http or sse)",
        "d": "input 'nope' has no value; set it in mcp.inputs.nope (user settings)",
    }


def test_a_broken_file_is_a_problem_not_a_failure(tmp_path: Path) -> None:
    write(tmp_path / ".cursor" / "mcp.json", "{not json")
    write(tmp_path / ".mcp.json", '{"mcpServers": {"ok": {"command": "x"}}}')
    found = find(tmp_path, McpSettings(), tmp_path / "home")
    assert [d.name for d in found.definitions] == ["ok"]
    [problem] = found.problems
    assert problem.startswith(f"cannot read {tmp_path / '.cursor' / 'mcp.json'}")


def test_names_in_settings_are_kept_as_written() -> None:
    raw = {
        "mcp": {
            "servers": {
                "myServer": {"envFile": ".env", "env": {"GITHUB_TOKEN": "x"}, "tools": {"getIssue": "deny"}}
            },
            "defaultPolicy": "ask",
            "policies": {"myServer/getIssue": "allow"},
        }
    }
    assert normalize(raw) == {
        "mcp": {
            "servers": {
                "myServer": {"env_file": ".env", "env": {"GITHUB_TOKEN": "x"}, "tools": {"getIssue": "deny"}}
            },
            "default_policy": "ask",
            "policies": {"myServer/getIssue": "allow"},
        }
    }


def test_a_workspace_config_servers_are_repository_servers_never_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMENTO_CONFIG_DIR", str(tmp_path / "user"))
    monkeypatch.setenv("MEMENTO_DATA_DIR", str(tmp_path / "data"))
    write(
        tmp_path / ".memento" / "config.toml",
        '[mcp.servers.db]\ncommand = "db-mcp"\npolicy = "allow"\n[mcp]\ndefaultPolicy = "allow"\n',
    )
    resolved = SettingsLayers(tmp_path).resolve()
    assert resolved.config.mcp.servers == {} and resolved.config.mcp.default_policy == "ask"
    assert resolved.ignored == ["mcp.defaultPolicy"]  # the file's other MCP keys wait for `memento trust`
    [db] = find(tmp_path, resolved.config.mcp, tmp_path / "home").definitions
    assert (db.source.name, db.source.repository) == ("memento-workspace", True)
    # Its own `policy = "allow"` grants nothing: the user's default applies.
    assert policy(resolved.config.mcp, db, "query") == "ask"


def test_policy_per_tool_then_server_then_default() -> None:
    from memento.mcp.definitions import Source

    user = Source("memento", None, repository=False, syntax="memento")
    own = Definition("gh", user, {"command": "x", "policy": "allow", "tools": {"delete_repo": "deny"}})
    settings = McpSettings(policies={"gh/create_issue": "ask"})
    assert [policy(settings, own, t) for t in ("list_issues", "delete_repo", "create_issue")] == [
        "allow",
        "deny",
        "ask",
    ]
    assert policy(McpSettings(policies={"gh": "deny"}), own, "delete_repo") == "deny"
    assert policy(McpSettings(), Definition("x", user, {"command": "x"}), "t") == "ask"


def test_trust_is_per_definition_and_lost_when_it_changes(tmp_path: Path) -> None:
    from memento.mcp.definitions import Source

    repo = Source("vscode", tmp_path / ".vscode" / "mcp.json", repository=True, syntax="vscode")
    store = McpTrust(tmp_path / "data" / "mcp-trust.json")
    first = Definition("db", repo, {"command": "db-mcp"})
    assert not store.is_trusted(tmp_path, first)
    store.trust(tmp_path, first)
    assert store.is_trusted(tmp_path, first)
    assert not store.is_trusted(tmp_path, Definition("db", repo, {"command": "db-mcp", "args": ["--rw"]}))
    assert not store.is_trusted(tmp_path / "other", first)
    assert store.revoke(tmp_path, first) and not store.is_trusted(tmp_path, first)


def test_jsonc_and_model_names() -> None:
    assert loads('{"a": "http://x//y", /* c */ "b": [1, 2,], // end\n}') == {"a": "http://x//y", "b": [1, 2]}
    assert model_name("my server", "get.thing") == "mcp__my_server__get_thing"
    long = model_name("s" * 40, "t" * 40)
    assert len(long) == 64 and long != model_name("s" * 40, "t" * 41)


def test_keys_in_the_mcp_settings_are_secrets() -> None:
    from memento.security.secrets import Secrets

    config = MementoConfig.model_validate({
        "mcp": {
            "inputs": {"gh": "ghp_input_value_123"},
            "servers": {"docs": {"url": "https://x", "headers": {"Authorization": "Bearer hdr-value-456"},
                                 "env": {"DOCS_TOKEN": "env-token-789", "LOG_LEVEL": "debug-verbose"}}},
        }
    })  # fmt: skip
    secrets = Secrets.from_config(config, environ={})
    shown = secrets.redact_tree(config.model_dump(mode="json", by_alias=True))["mcp"]
    assert shown["inputs"] == {"gh": "[redacted]"}
    assert shown["servers"]["docs"]["headers"] == {"Authorization": "[redacted]"}
    assert shown["servers"]["docs"]["env"] == {"DOCS_TOKEN": "[redacted]", "LOG_LEVEL": "debug-verbose"}
