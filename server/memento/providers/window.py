"""What an OpenAI-compatible server says its context window is, each server from its own
documented API.

| server | asked | read |
|---|---|---|
| vLLM | `GET {base}/models` | `data[].max_model_len` |
| OpenRouter | `GET {base}/models` | `data[].top_provider.context_length`, else `data[].context_length` |
| llama.cpp (`llama-server`) | `GET {root}/props` | `default_generation_settings.n_ctx` (one slot's window) |
|  | `GET {base}/models` | `data[].meta.n_ctx_train`: the model's trained length, a bound only |
| LM Studio | `GET {root}/api/v0/models` | `loaded_context_length`; `max_context_length` (a bound) |
| Ollama | `GET {root}/api/ps` | `models[].context_length` of the running model |
|  | `POST {root}/api/show` | `num_ctx` in `parameters` (a Modelfile override); else Ollama's default |
| llama-cpp-python | nothing | its `/v1/models` names no window: its refusal does (governance learns it) |

`{root}` is the base URL without its `/v1`. Asked in that order, each answer bounded in time
and size; the first exact figure wins, else the smallest bound. Every URL is the configured
base URL's scheme, host and port with a fixed path (a model name never goes into a path),
redirects are not followed, and nothing an answer says is used but one number: a discovery
answer can neither send the key elsewhere nor redirect a request.

Ollama's OpenAI endpoint takes no `num_ctx` (docs.ollama.com/api/openai-compatibility,
"Setting the context size": "The OpenAI API does not have a way of setting the context size
for a model"), so Memento cannot ask for the window it wants there; it reads the one Ollama
serves instead: `/api/ps` once the model is loaded, else the Modelfile's `num_ctx`, else
Ollama's documented default (4,096) until the model is loaded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import httpx

from memento.util.jsonish import as_array, as_object, get

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 2.0
"""One question to the server: a local server answers in milliseconds."""
DISCOVERY_TIMEOUT_S = 6.0
"""All questions together."""
MAX_ANSWER_BYTES = 8 * 1024 * 1024
"""OpenRouter's model list is a few MB; anything larger is not an answer."""
MIN_WINDOW = 256
MAX_WINDOW = 100_000_000
OLLAMA_DEFAULT_CTX = 4096
"""Ollama's context length when neither the Modelfile nor the server sets one (its FAQ)."""


@dataclass(frozen=True)
class Found:
    tokens: int
    origin: str
    """Where it was read, for the meter: "server /props n_ctx"."""
    exact: bool = True
    """False: a bound or a default (the model's maximum, a model not loaded yet); a later
    answer may be better, so it is asked again sooner."""


Parser = Callable[[object, str], "Found | None"]


@dataclass(frozen=True)
class Probe:
    method: Literal["GET", "POST"]
    url: str
    parse: Parser
    body: dict[str, Any] | None = None


def _tokens(value: object) -> int | None:
    """A window size, or None for anything that is not a plausible one."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if MIN_WINDOW <= value <= MAX_WINDOW else None


def _same_model(entry_id: object, model: str) -> bool:
    if not isinstance(entry_id, str):
        return False
    return entry_id == model or entry_id.removesuffix(":latest") == model.removesuffix(":latest")


def _entry(
    entries: list[Any] | None, model: str, key: str = "id", *, sole: bool = False
) -> dict[str, Any] | None:
    """The list entry for `model`; with `sole`, the only entry of a server that serves one
    model whatever it is called (llama.cpp, llama-cpp-python)."""
    objects = [o for e in entries or [] if (o := as_object(e)) is not None]
    for entry in objects:
        if _same_model(entry.get(key), model):
            return entry
    return objects[0] if sole and len(objects) == 1 else None


def from_models(payload: object, model: str) -> Found | None:
    """`GET /v1/models`: vLLM's `max_model_len`, OpenRouter's context length, llama.cpp's
    trained length (a bound)."""
    entry = _entry(as_array(get(payload, "data")), model, sole=True)
    if entry is None:
        return None
    if (n := _tokens(entry.get("max_model_len"))) is not None:
        return Found(n, "server /v1/models max_model_len")
    if (n := _tokens(get(entry.get("top_provider"), "context_length"))) is not None:
        return Found(n, "server /models top_provider.context_length")
    if (n := _tokens(entry.get("context_length"))) is not None:
        return Found(n, "server /models context_length")
    if (n := _tokens(get(entry.get("meta"), "n_ctx"))) is not None:
        return Found(n, "server /v1/models meta.n_ctx")
    if (n := _tokens(get(entry.get("meta"), "n_ctx_train"))) is not None:
        return Found(n, "server /v1/models meta.n_ctx_train (the model's maximum)", exact=False)
    return None


def from_props(payload: object, model: str) -> Found | None:
    """llama.cpp's `GET /props`: the window of one slot (what a request gets)."""
    n = _tokens(get(get(payload, "default_generation_settings"), "n_ctx"))
    return Found(n, "server /props n_ctx") if n is not None else None


def from_lmstudio(payload: object, model: str) -> Found | None:
    """LM Studio's `GET /api/v0/models`: the loaded context length, else the model's maximum."""
    entry = _entry(as_array(get(payload, "data")), model)
    if entry is None:
        return None
    if (n := _tokens(entry.get("loaded_context_length"))) is not None:
        return Found(n, "server /api/v0/models loaded_context_length")
    if (n := _tokens(entry.get("max_context_length"))) is not None:
        return Found(n, "server /api/v0/models max_context_length (not loaded)", exact=False)
    return None


def from_ollama_ps(payload: object, model: str) -> Found | None:
    """Ollama's `GET /api/ps`: the context length the running model was loaded with."""
    entries = as_array(get(payload, "models"))
    entry = _entry(entries, model, "model") or _entry(entries, model, "name")
    n = _tokens(entry.get("context_length")) if entry is not None else None
    return Found(n, "server /api/ps context_length") if n is not None else None


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def from_ollama_show(payload: object, model: str) -> Found | None:
    """Ollama's `POST /api/show`: a Modelfile's `num_ctx`; else Ollama's default, capped by
    the model's own context length (`model_info["<arch>.context_length"]`)."""
    parameters = get(payload, "parameters")
    match = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    if match is not None and (n := _tokens(int(match.group(1)))) is not None:
        return Found(n, "server /api/show num_ctx")
    info = as_object(get(payload, "model_info"))
    if info is None:
        return None
    lengths = [n for k, v in info.items() if k.endswith(".context_length") and (n := _tokens(v))]
    if not lengths:
        return None
    return Found(
        min(lengths[0], OLLAMA_DEFAULT_CTX), "Ollama's default context (model not loaded)", exact=False
    )


def server_root(base_url: str) -> str:
    """The server's root: the base URL without a trailing `/v1`."""
    base = base_url.rstrip("/")
    return base.removesuffix("/v1")


def probes(base_url: str, model: str) -> list[Probe]:
    base, root = base_url.rstrip("/"), server_root(base_url)
    return [
        Probe("GET", f"{base}/models", from_models),
        Probe("GET", f"{root}/props", from_props),
        Probe("GET", f"{root}/api/v0/models", from_lmstudio),
        Probe("GET", f"{root}/api/ps", from_ollama_ps),
        Probe("POST", f"{root}/api/show", from_ollama_show, {"model": model}),
    ]


async def _ask(client: httpx.AsyncClient, probe: Probe, headers: Mapping[str, str]) -> object | None:
    """The JSON answer of one probe; None when there is none worth reading."""
    request = client.build_request(
        probe.method,
        probe.url,
        json=probe.body,
        headers={**headers, "accept": "application/json"},
        timeout=PROBE_TIMEOUT_S,
    )
    response = await client.send(request, stream=True, follow_redirects=False)
    try:
        if response.status_code != 200:
            return None
        data = bytearray()
        async for chunk in response.aiter_bytes():
            data += chunk
            if len(data) > MAX_ANSWER_BYTES:
                return None
    finally:
        await response.aclose()
    try:
        return await asyncio.to_thread(json.loads, bytes(data))
    except ValueError:
        return None


async def discover_window(
    client: httpx.AsyncClient, base_url: str, model: str, headers: Mapping[str, str]
) -> Found | None:
    """The window the server at `base_url` serves `model` with; None when it does not say
    (or cannot be reached). Never raises for what the server does."""
    import httpx  # first used here, not at import (providers/http.py)

    bounds: list[Found] = []
    try:
        async with asyncio.timeout(DISCOVERY_TIMEOUT_S):
            for probe in probes(base_url, model):
                try:
                    payload = await _ask(client, probe, headers)
                except httpx.HTTPError as exc:
                    log.debug("window discovery: %s %s: %s", probe.method, probe.url, exc)
                    continue
                found = probe.parse(payload, model) if payload is not None else None
                if found is not None and found.exact:
                    return found
                if found is not None:
                    bounds.append(found)
    except TimeoutError:
        log.debug("window discovery at %s took too long", base_url)
    return min(bounds, key=lambda f: f.tokens) if bounds else None
