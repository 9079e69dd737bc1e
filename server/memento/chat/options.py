"""What `memento chat` was asked for, and the settings that follow from it: the workspace's
`.memento/config.toml` with the command-line flags on top, validated by the same model as the
language server's settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memento.config import MementoConfig, merge, parse_config, workspace_settings


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


def flag_settings(options: ChatOptions, workspace: dict[str, Any]) -> dict[str, Any]:
    """The flags as a settings tree. A provider URL alone means an OpenAI-compatible server,
    unless the workspace file already names a remote kind; `--model` with the embedded
    model picks one of its catalog models."""
    provider: dict[str, Any] = {}
    table = workspace.get("provider")
    named = table.get("kind") if isinstance(table, dict) else None  # pyright: ignore[reportUnknownMemberType]
    kind = options.provider
    if kind is None and options.provider_url:
        kind = named if named in ("openai", "anthropic") else "openai"
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


def load_config(options: ChatOptions) -> MementoConfig:
    """The settings for this chat; `ChatError` when the file or a flag is invalid (a chat
    would rather stop than run on defaults the user did not ask for)."""
    workspace, problem = workspace_settings(options.workspace)
    if problem:
        raise ChatError(problem)
    config, invalid = parse_config(merge(workspace, flag_settings(options, workspace)))
    if invalid:
        raise ChatError(invalid.replace(", using defaults", ""))
    return config
