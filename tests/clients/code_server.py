"""code-server (the real VS Code workbench and extension host) for tests: a fresh user-data
and extensions folder per run, the packaged extension installed, bound to 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.frozen.build import frozen_dir, target
from tests.frozen.build import missing as frozen_missing

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "vscode-client"
ENTRY = CLIENT / "e2e/.harness/code-server/node_modules/code-server/out/node/entry.js"
CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
OUTPUT = CLIENT / "e2e" / "output"
"""Screenshots and logs of the last run, for a person to look at (ignored by git)."""
PORT = int(os.environ.get("MEMENTO_E2E_PORT", "0"))
"""0: a free port the system picks, so two runs on one machine never collide."""

WORKBENCH_SETTINGS: dict[str, Any] = {
    "telemetry.telemetryLevel": "off",
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "extensions.ignoreRecommendations": True,
    "update.mode": "none",
    "git.enabled": False,
    "npm.fetchOnlinePackageInfo": False,
    "typescript.disableAutomaticTypeAcquisition": True,
    "files.autoSave": "off",
}


def missing() -> list[str]:
    found: list[str] = []
    if not ENTRY.is_file():
        found.append("code-server (vscode-client/e2e/install.sh)")
    if not (CLIENT / "node_modules" / "playwright-core").is_dir():
        found.append("the extension's node modules (npm ci in vscode-client)")
    if not (CLIENT / "webview" / "node_modules").is_dir():
        found.append("the chat panel's node modules (npm ci in vscode-client/webview)")
    if not CHROMIUM.is_file():
        found.append(f"chromium ({CHROMIUM}; vscode-client/e2e/install.sh installs Debian's)")
    return found


def package_extension() -> dict[str, Path]:
    """Build the .vsix files from the sources as they are now: the universal one, and the
    platform one (with the frozen server) when that build is there (`npm run package` makes
    both, freezing the server first when it is missing)."""

    def npm(script: str) -> None:
        subprocess.run(
            ["npm", "run", script], cwd=CLIENT, check=True, capture_output=True, timeout=300,
            env=os.environ | {"MEMENTO_FROZEN": str(frozen_dir())},
        )  # fmt: skip

    npm("package:build")
    npm("package:universal")
    packages = {"universal": CLIENT / "memento.vsix"}
    if not frozen_missing():
        npm("package:platform")
        packages["platform"] = CLIENT / f"memento-{target()}.vsix"
    return packages


_LISTENING = re.compile(rb"HTTP server listening on (http://\S+)")


class _Log(threading.Thread):
    """Copies code-server's output to `log` as it comes; `listening` is set once it serves."""

    def __init__(self, process: subprocess.Popen[bytes], log: Path) -> None:
        super().__init__(daemon=True)
        self.process, self.log = process, log
        self.listening = threading.Event()
        self.address = ""
        """Where it serves, as it says once it listens ("http://127.0.0.1:41234/")."""
        self.tail = b""

    def run(self) -> None:
        assert self.process.stdout is not None
        with self.log.open("ab") as sink:
            for line in self.process.stdout:
                sink.write(line)
                sink.flush()
                self.tail = (self.tail + line)[-4000:]
                if (found := _LISTENING.search(line)) and not self.listening.is_set():
                    self.address = found.group(1).decode()
                    self.listening.set()


@contextmanager
def code_server(
    home: Path, workspace: Path, vsix: Path, settings: dict[str, Any], env: dict[str, str]
) -> Iterator[str]:
    """A running code-server with `vsix` installed; yields the workbench URL."""
    user = home / "user-data" / "User"
    user.mkdir(parents=True)
    (user / "settings.json").write_text(json.dumps(WORKBENCH_SETTINGS | settings, indent=2))
    # The extension runs on code-server's side, a remote of the browser's workbench: settings
    # scoped to the machine (`memento.server.*`, the provider's) are read from the Remote
    # settings there, as a user of code-server sets them.
    machine = home / "user-data" / "Machine"
    machine.mkdir(parents=True)
    (machine / "settings.json").write_text(json.dumps(settings, indent=2))
    extensions = home / "extensions"
    common = ["--user-data-dir", str(home / "user-data"), "--extensions-dir", str(extensions)]
    base_env = env | {
        "XDG_CONFIG_HOME": str(home / "xdg-config"),
        "XDG_DATA_HOME": str(home / "xdg-data"),
        "XDG_CACHE_HOME": str(home / "xdg-cache"),
        "EXTENSIONS_GALLERY": "{}",
        "VSCODE_CLI_TELEMETRY_OPTOUT": "1",
    }
    subprocess.run(
        ["node", str(ENTRY), *common, "--force", "--install-extension", str(vsix)],
        env=base_env, check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    OUTPUT.mkdir(parents=True, exist_ok=True)
    log = OUTPUT / "code-server.log"
    process = subprocess.Popen(
        [
            "node", str(ENTRY), *common, "--bind-addr", f"127.0.0.1:{PORT}", "--auth", "none",
            "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
            "--disable-getting-started-override", str(workspace),
        ],
        env=base_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: stopped as one below
    )  # fmt: skip
    output = _Log(process, log)
    output.start()
    try:
        if not output.listening.wait(timeout=60):
            raise RuntimeError(f"code-server did not start:\n{output.tail.decode(errors='replace')}")
        yield f"{output.address.rstrip('/')}/?folder={workspace}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):  # what is left of its group (extension host, server)
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)
        output.join(timeout=15)
        if process.stdout is not None:  # the group is gone, so the reader has seen the pipe's end
            process.stdout.close()
