"""Which GGUF file the local settings mean, where it lives, and whether the runtime is there."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from memento.config import LocalModelSettings
from memento.localmodel.catalog import CATALOG, ModelSpec
from memento.localmodel.prepare import ProgressFn, check_gguf, is_ready, prepare

INSTALL_HINT = (
    "the embedded model needs the `local` extra (llama-cpp-python); install it with\n"
    '  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
    "pip install --no-cache-dir 'memento-lsp[local]'\n"
    "or configure a provider in your editor or the user config file (memento doctor shows where it is)"
)


def cache_dir(settings: LocalModelSettings) -> Path:
    if settings.cache_dir:
        return Path(settings.cache_dir).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("memento", appauthor=False)) / "models"


def spec_for(settings: LocalModelSettings) -> ModelSpec | None:
    """The catalog model, or None when a GGUF path is configured instead."""
    return None if settings.gguf_path else CATALOG[settings.model]


def model_file(settings: LocalModelSettings) -> Path:
    if settings.gguf_path:
        return Path(settings.gguf_path).expanduser()
    spec = CATALOG[settings.model]
    return cache_dir(settings) / spec.filename


def alias(settings: LocalModelSettings) -> str:
    """The model id requests carry (and sessions record)."""
    return Path(settings.gguf_path).stem if settings.gguf_path else settings.model


def model_ready(settings: LocalModelSettings) -> bool:
    spec = spec_for(settings)
    path = model_file(settings)
    return path.is_file() if spec is None else is_ready(spec, path)


def ensure_model(settings: LocalModelSettings, progress: ProgressFn | None = None) -> Path:
    """The model file, assembled and verified first when needed (blocking: use a thread)."""
    spec = spec_for(settings)
    if spec is None:
        return check_gguf(model_file(settings))
    return prepare(spec, model_file(settings), progress, index_url=settings.index_url)


FROZEN_HINT = (
    "this self-contained server was built without the model's runtime (packaging/freeze.py bundles "
    "llama-cpp-python when the building environment has it); run a `memento` installed with the "
    "`local` extra (memento.server.importStrategy = fromEnvironment), or set "
    'provider.local.serverCommand to llama.cpp\'s server: ["llama-server", "-m", "{model}", "--port", '
    '"{port}", "-c", "{n_ctx}"]'
)


def runtime_hint() -> str:
    """How to get the runtime, for this installation."""
    import sys

    return FROZEN_HINT if getattr(sys, "frozen", False) else INSTALL_HINT


def runtime_available(settings: LocalModelSettings) -> bool:
    """Whether the model server can run: a custom command, or llama-cpp-python installed."""
    return bool(settings.server_command) or importlib.util.find_spec("llama_cpp") is not None
