"""`:checkhealth memento` in a real Neovim: OK with the server command (a list, or one string
split as a shell splits it), the version the server reports, that it starts, and where each
effective setting came from (setup() → initializationOptions, configure() →
didChangeConfiguration, the files); an ERROR, with advice, when the command cannot be split,
is missing or exits before answering."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testkit import ScriptedModelServer

import memento
from tests.clients.nvim.harness import run_nvim
from tests.lsp.harness import provider_options

SPLIT = [
    "memento lsp",
    "  python3   -m memento lsp  ",
    "'/opt/my tools/python' -m memento lsp",
    '"/home/u/my env/bin/memento" lsp',
    "a\\ b c",
    '"a\\"b" c',
    '"a\\\\b" "a\\nb" \'a\\b\'',
    "x\"y z\"w a''b '' \"\"",
    'a\\\nb "c\\\nd"',
    "tab\tsep",
    "mix\"ed 'q'\"x",
    '"\\$HOME" \'$HOME\' "\\`x\\`"',
]
UNSPLITTABLE = {
    "'open": "a single quote is not closed",
    '"open': "a double quote is not closed",
    "  ": "it is empty",
    "end\\": "a backslash ends it",
}


def sh_words(text: str) -> list[str]:
    """What /bin/sh makes of `text` as the words of a simple command (the strings above
    expand nothing, so eval only splits and unquotes)."""
    done = subprocess.run(
        ["sh", "-c", 'eval "set -- $1"; printf "%s\\0" "$@"', "sh", text],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split("\0")[:-1]


def test_checkhealth_reports_the_server_its_version_and_the_settings_sources(
    neovim: Path, model_server: ScriptedModelServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    (workspace / ".memento").mkdir()
    (workspace / ".memento" / "config.toml").write_text("[compaction]\nreserveTokens = 4096\n")
    (workspace / "a.py").write_text("x = 1\n")
    spaced = tmp_path / "my tools" / "python"  # this Python, from a folder with a space
    spaced.parent.mkdir()
    spaced.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    spaced.chmod(0o755)
    observed = run_nvim(
        "plugin_health.lua",
        workspace=workspace,
        data_dir=data_dir,
        init_options=provider_options(model_server.openai_base_url),
        params={
            "missing": "memento-not-installed",
            "dead": [sys.executable, "-c", "raise SystemExit(3)"],
            "spaced": str(spaced),
            "file": "a.py",
            "split": SPLIT + list(UNSPLITTABLE),
        },
    ).observations

    healthy = observed["healthy"]
    assert not [line for line in healthy if "ERROR" in line or "WARNING" in line], healthy
    ok = [line.split("OK ", 1)[1] for line in healthy if "OK " in line]
    assert f"server command: {sys.executable} -m memento lsp ({sys.executable})" in ok
    assert f"the server starts and answers initialize: memento {memento.__version__} (root {workspace})" in ok
    assert f"effective settings read: provider openai, model scripted at {model_server.openai_base_url}" in ok
    # setup()'s settings went as initializationOptions, and that is where they came from.
    sources = [line for line in healthy if line.startswith("- from ")]
    assert sources[0] == "- from workspace: compaction.reserveTokens"
    assert sources[1].startswith("- from initializationOptions: provider.baseUrl,")
    assert len(sources) == 2
    assert f"- workspace file: {workspace / '.memento' / 'config.toml'}" in healthy
    assert observed["clients_after"] == [True]  # the server the check started is stopped again

    # One string, as a shell splits it: the quoted path with a space is one word.
    string = observed["string"]
    assert not [line for line in string if "ERROR" in line or "WARNING" in line], string
    assert observed["string_cmd"] == f"'{spaced}' -m memento lsp"
    assert f"- ✅ OK server command: '{spaced}' -m memento lsp ({spaced})" in string
    assert any("the server starts and answers initialize" in line for line in string)
    assert (
        f'- ❌ ERROR server command: setup({{ cmd = "\'{spaced} -m memento lsp" }}): a single quote is not closed'
        in observed["unsplittable"]
    )
    # What `:help memento` promises: the words /bin/sh makes of each string, or the reason.
    split = observed["split"]
    assert split[: len(SPLIT)] == [sh_words(text) for text in SPLIT]
    assert split[len(SPLIT) :] == [{"error": why} for why in UNSPLITTABLE.values()]

    # A configure() push is didChangeConfiguration; what setup() sent stays initializationOptions.
    configured = [line for line in observed["configured"] if line.startswith("- from ")]
    assert "- from didChangeConfiguration: compaction.estimator" in configured
    assert any(line.startswith("- from initializationOptions: provider.baseUrl,") for line in configured)
    pulled = observed["pulled"]
    assert pulled["provider"]["baseUrl"] == model_server.openai_base_url
    assert pulled["compaction"] == {"estimator": "chars4"}

    missing = observed["missing"]
    assert (
        "- ❌ ERROR server command: memento-not-installed: memento-not-installed is not an executable"
        in missing
    )
    dead = observed["dead"]
    assert "- ❌ ERROR the server did not answer initialize" in dead
    assert not any("effective settings" in line for line in missing + dead)
