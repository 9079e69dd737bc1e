"""Uncaught tracebacks pass the same redaction as log records (they would quote a key)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

KEY = "sk-uncaught-7c1d4f2a9b"

RAISE_IN_MAIN = "raise RuntimeError('provider said: bad key ' + os.environ['OPENAI_API_KEY'])"
RAISE_IN_THREAD = """
def boom():
    raise RuntimeError('provider said: bad key ' + os.environ['OPENAI_API_KEY'])
t = threading.Thread(target=boom, name='reader'); t.start(); t.join()
"""


@pytest.mark.parametrize("body", [RAISE_IN_MAIN, RAISE_IN_THREAD], ids=["main", "thread"])
def test_an_uncaught_traceback_quoting_a_key_is_redacted(body: str) -> None:
    script = f"import os, threading\nfrom memento.cli import _configure_logging\n_configure_logging('INFO')\n{body}"
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "OPENAI_API_KEY": KEY},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "RuntimeError: provider said: bad key" in done.stderr
    assert KEY not in done.stderr
