"""Settings: one pydantic model for `.memento/config.toml`, `initializationOptions` and
`workspace/didChangeConfiguration` (section `memento`). Every field has a default."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel


class Settings(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class RetrySettings(Settings):
    attempts: int = Field(default=4, ge=1, le=10)
    """Tries in all, the first included."""
    base_delay: float = Field(default=0.5, ge=0)
    """Seconds before the first retry; doubled each time, with jitter."""
    max_delay: float = Field(default=20.0, ge=0)


class ProviderConfig(Settings):
    kind: Literal["openai", "anthropic", "local"] = "openai"
    base_url: str = "http://127.0.0.1:11434/v1"
    """OpenAI-compatible servers take the `/v1` root; Anthropic the API root."""
    model: str = ""
    api_key_env: str | None = None
    """Name of the environment variable that holds the API key (the key itself is never stored)."""
    context_window: int = Field(default=128_000, gt=0)
    max_tokens: int = Field(default=8192, gt=0)
    connect_timeout: float = Field(default=10.0, gt=0)
    read_timeout: float = Field(default=300.0, gt=0)
    retry: RetrySettings = Field(default_factory=RetrySettings)

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


class ToolSettings(Settings):
    bash: Literal["ask", "allow", "deny"] = "ask"
    bash_timeout: float = Field(default=120.0, gt=0)
    max_output_chars: int = Field(default=30_000, ge=1000)


class CompactionSettings(Settings):
    enabled: bool = True
    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000


class AdvisorSettings(Settings):
    enabled: bool = False
    provider: ProviderConfig | None = None


class TtsrSettings(Settings):
    enabled: bool = True


class MementoConfig(Settings):
    provider: ProviderConfig = Field(default_factory=ProviderConfig)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    advisor: AdvisorSettings = Field(default_factory=AdvisorSettings)
    ttsr: TtsrSettings = Field(default_factory=TtsrSettings)
    data_dir: str | None = None
    """Where sessions live; defaults to the user data dir (or $MEMENTO_DATA_DIR)."""
    system_prompt: str | None = None


def parse_config(raw: Any) -> tuple[MementoConfig, str | None]:
    """The settings in `raw`, or the defaults and a readable reason when they are invalid."""
    if raw is None:
        return MementoConfig(), None
    if isinstance(raw, dict) and "memento" in raw and isinstance(raw["memento"], dict):
        raw = raw["memento"]
    try:
        return MementoConfig.model_validate(raw), None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
        )
        return MementoConfig(), f"Memento: invalid settings, using defaults ({problems})"


def data_dir(config: MementoConfig) -> Path:
    """Where sessions and caches live: the setting, else $MEMENTO_DATA_DIR, else the user data dir."""
    if config.data_dir:
        return Path(config.data_dir).expanduser()
    if env := os.environ.get("MEMENTO_DATA_DIR"):
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("memento", appauthor=False))


def workspace_settings(root: Path) -> tuple[dict[str, Any], str | None]:
    """The raw settings of `<root>/.memento/config.toml`, or {} and a reason when unreadable."""
    path = root / ".memento" / "config.toml"
    if not path.is_file():
        return {}, None
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle), None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return {}, f"Memento: cannot read {path}: {exc}"


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` on top of `base`, recursively for nested tables."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)  # pyright: ignore[reportUnknownArgumentType]
        else:
            merged[key] = value
    return merged
