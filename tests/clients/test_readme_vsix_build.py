"""The README's VS Code build commands, exactly as written, in a fresh clone of this repository
(a `git clone` with the working tree's uncommitted changes copied over, so what is tested is
what a clone of the next commit would hold): they leave the universal .vsix with the extension
and the chat panel in it, and the platform .vsix with the frozen server too. npm takes the
packages from its cache where an earlier `npm ci` left them, and the packaging takes the frozen
server this checkout built (MEMENTO_FROZEN) where there is one, as `.ci/run` leaves it; else it
freezes one in the clone."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

from tests.frozen.build import frozen_dir, target
from tests.frozen.build import missing as frozen_missing

ROOT = Path(__file__).resolve().parents[2]

PACKAGED = (
    "extension/package.json",
    "extension/dist/extension.js",
    "extension/media/panel.html",
    "extension/media/panel.js",
    "extension/media/panel-highlight.js",
    "extension/media/panel-boot.js",
    "extension/media/panel.css",
)
"""What the extension needs at run time: its bundle and the chat panel's built page."""


def readme_build_commands() -> str:
    """The first fenced block of the README's "VS Code" section."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## VS Code\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```[^\n]*\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert block is not None, "the README's VS Code section has no command block"
    return block.group(1)


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=120
    ).stdout


def fresh_clone(target: Path) -> Path:
    """A clone of HEAD, then the working tree's changes on top: modified and new files copied
    (ignored ones, such as node_modules/ and build output, are not), deleted ones removed."""
    git("clone", "--quiet", "--no-checkout", str(ROOT), str(target), cwd=ROOT)
    git("checkout", "--quiet", "--detach", git("rev-parse", "HEAD", cwd=ROOT).strip(), cwd=target)
    changed = git("ls-files", "-z", "--modified", "--others", "--exclude-standard", cwd=ROOT)
    for name in filter(None, changed.split("\0")):
        source, copy = ROOT / name, target / name
        if source.is_file():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy)
    for name in filter(None, git("ls-files", "-z", "--deleted", cwd=ROOT).split("\0")):
        (target / name).unlink(missing_ok=True)
    return target


def test_the_readme_build_commands_make_the_vsix_in_a_fresh_clone(tmp_path: Path) -> None:
    commands = readme_build_commands()
    assert "npm run package" in commands, commands
    clone = fresh_clone(tmp_path / "memento")
    assert not (clone / "vscode-client" / "node_modules").exists()
    assert not (clone / "vscode-client" / "webview" / "node_modules").exists()

    env = dict(os.environ)
    if not frozen_missing():
        env["MEMENTO_FROZEN"] = str(frozen_dir())
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands],
        cwd=clone, capture_output=True, text=True, timeout=900, env=env,
    )  # fmt: skip
    assert done.returncode == 0, f"{commands}failed:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"

    vsix = clone / "vscode-client" / "memento.vsix"
    assert vsix.is_file(), f"no .vsix after {commands}"
    with zipfile.ZipFile(vsix) as package:
        names = set(package.namelist())
    assert not [name for name in PACKAGED if name not in names], sorted(names)
    assert not [name for name in names if "/webview/" in name or "/node_modules/" in name]
    assert not [name for name in names if "/bundled/" in name], "the universal package carries no server"

    platform = clone / "vscode-client" / f"memento-{target()}.vsix"
    with zipfile.ZipFile(platform) as package:
        entries = {info.filename: info for info in package.infolist()}
    assert not [name for name in PACKAGED if name not in entries]
    program = entries["extension/bundled/server/memento"]
    assert (program.external_attr >> 16) & 0o111, "the bundled server lost its executable bit"
    assert any(name.startswith("extension/bundled/server/_internal/") for name in entries)
