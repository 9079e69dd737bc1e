# `make chat`: a virtual environment with Memento and its embedded model runtime, the model
# prepared once, then a chat in the terminal. `make test`: the test suite.

VENV ?= .venv
PYTHON ?= python3
MODEL ?= qwen2.5-coder-1.5b
# llama-cpp-python compiles from source. A native build may enable AMX kernels that die with
# SIGILL on some machines; these flags leave them out (and --no-cache-dir keeps pip from
# reusing a wheel built natively before).
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

BIN := $(VENV)/bin

.PHONY: chat test model

chat: $(VENV)/.local model
	$(BIN)/memento chat --model $(MODEL)

model: $(VENV)/.local
	$(BIN)/memento model prepare --model $(MODEL)

test: $(VENV)/.dev
	$(BIN)/python -m pytest

$(VENV)/.dev: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@

$(VENV)/.local: pyproject.toml $(VENV)/.dev
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --no-cache-dir -e '.[dev,local]'
	touch $@
