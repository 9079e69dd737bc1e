"""What `memento chat` was asked for, and the settings that follow from it: the same layers
as the language server's (`memento.layers`: user file, trusted workspace file), with the
command-line flags on top in place of the editor's settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memento.config import MementoConfig
from memento.configfile import normalize
from memento.layers import Layer, Resolved, SettingsLayers


class ChatError(Exception):
    """A problem that stops `memento chat` before or between turns, told to the user as is."""


@dataclass
class ChatOptions:
    workspace: Path
    prompt: str | None = None
    provider: str | None = None
    provider_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    bash: str | None = None
    session: str | None = None
    resume: bool = False
    """Continue the most recent session of the workspace."""
    plain: bool | None = None
    """Plain text output; by default when stdout is not a terminal."""
    mode: Literal["act", "ask"] = "act"
    """`ask`: start read-only (no write, edit or bash offered); `/act` and `/ask` switch."""


def flag_settings(options: ChatOptions, named: str | None) -> dict[str, Any]:
    """The flags as a settings tree. A provider URL alone means an OpenAI-compatible server,
    unless the settings already name a remote kind (`named`); `--model` with the embedded
    model picks one of its catalog models."""
    provider: dict[str, Any] = {}
    kind = options.provider
    if kind is None and options.provider_url:
        kind = named if named in ("openai", "openai-responses", "anthropic") else "openai"
    model: dict[str, Any] = {"model": options.model}
    if (kind or named or "local") == "local" and options.model is not None:
        model = {"local": {"model": options.model}}  # the embedded model: a catalog name
    for key, value in (
        ("kind", kind),
        ("baseUrl", options.provider_url),
        ("apiKeyEnv", options.api_key_env),
        *model.items(),
    ):
        if value is not None:
            provider[key] = value
    out: dict[str, Any] = {}
    if provider:
        out["provider"] = provider
    if options.bash is not None:
        out["tools"] = {"bash": options.bash}
    return out


def load_settings(options: ChatOptions) -> Resolved:
    """The settings for this chat; `ChatError` when a file or a flag is invalid (a chat would
    rather stop than run on defaults the user did not ask for)."""
    layers = SettingsLayers(options.workspace)
    below = layers.resolve()
    if below.problems:
        raise ChatError("; ".join(p.removeprefix("Memento: ") for p in below.problems))
    flags = normalize(flag_settings(options, below.config.provider.kind))
    layers.extra.append(Layer("commandLine", "the command line", flags))
    resolved = layers.resolve()
    if resolved.problems:
        raise ChatError("; ".join(p.removeprefix("Memento: ") for p in resolved.problems))
    return resolved


def load_config(options: ChatOptions) -> MementoConfig:
    return load_settings(options).config
