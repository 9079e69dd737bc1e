"""Settings: one pydantic model for the user config file, `.memento/config.toml`,
`initializationOptions` and `workspace/didChangeConfiguration` (section `memento`). Every field
has a default. Where each value comes from, and which keys a workspace may set, is
`memento.layers`; `USER_LEVEL_KEYS` below says which keys are the user's alone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel


class Settings(BaseModel):
    # Built at import, not deferred: the engine validates every section at start, and a
    # deferred parent built first makes each nested section build its schema twice.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class RetrySettings(Settings):
    attempts: int = Field(default=4, ge=1, le=10)
    """Tries in all, the first included."""
    base_delay: float = Field(default=0.5, ge=0)
    """Seconds before the first retry; doubled each time, with jitter."""
    max_delay: float = Field(default=20.0, ge=0)


class LocalModelSettings(Settings):
    """The embedded model (`provider.kind = "local"`): which GGUF, and how its server runs."""

    model: Literal["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"] = "qwen2.5-coder-1.5b"
    """A model Memento assembles from PyPI parts (see memento/localmodel/catalog.py)."""
    gguf_path: str | None = None
    """Any GGUF file; replaces `model` when set."""
    n_ctx: int = Field(default=8192, ge=512)
    threads: int | None = Field(default=None, ge=1)
    """Threads for generation; when unset, one per physical core this process may run on
    (llama.cpp's own default; `memento doctor` shows the count and why)."""
    idle_timeout: float = Field(default=600.0, ge=0)
    """Seconds without a request before the model server is stopped (0: keep it running)."""
    startup_timeout: float = Field(default=180.0, gt=0)
    server_command: list[str] | None = None
    """Another OpenAI-compatible server to run instead of `llama_cpp.server` (e.g. llama.cpp's
    `llama-server`); placeholders {python} {model} {host} {port} {n_ctx} {threads} {alias}."""
    cache_dir: str | None = None
    """Where assembled models live; the user cache dir when unset."""
    index_url: str | None = None
    """The package index the model's parts come from (a PEP 691 simple index, fetched over
    HTTP); unset: pip's own configuration where pip runs, else https://pypi.org/simple."""


class JsonActionSettings(Settings):
    """`toolCalling = "json"`: the model answers one schema-constrained JSON action per step."""

    max_steps: int = Field(default=8, ge=1, le=100)
    """Tool steps per turn; after that the model may only answer."""
    result_chars: int = Field(default=6000, ge=500)
    """Tool results are cut to this many characters in the prompt (small context windows)."""
    temperature: float | None = Field(default=0.2, ge=0, le=2)
    """Sampling temperature of JSON actions (small models stray when it is high); None: the
    server's default."""
    thought: bool = True
    """Each tool call starts with a sentence of reasoning (`"thought"`), streamed as thinking."""
    questions_read_only: bool = True
    """A prompt shaped as a question gets a read-only turn (session/questions.py)."""
    change_first: bool = True
    """A prompt that asks for a change in the imperative ("Fix…", "Remove…"): the model calls
    tools, and may not answer, until an edit or write has succeeded (or the step cap)."""
    attach_files: int = Field(default=3, ge=0, le=10)
    """Workspace files a prompt names (`calc.py`) attached to it, at most this many small ones
    (session/mentions.py); 0: none."""


class ProviderCompactionSettings(Settings):
    """What the provider may do to the context itself."""

    remote: bool = False
    """Let the provider write the compaction summary (OpenAI Responses' compact endpoint,
    Anthropic's compaction) instead of a summary request of Memento's, where the provider
    offers one; when it is used is `governance/remote.py`."""


class ProviderConfig(Settings):
    kind: Literal["openai", "openai-responses", "anthropic", "local"] = "local"
    """`openai`: chat completions (any OpenAI-compatible server); `openai-responses`: OpenAI's
    Responses API; `anthropic`: Messages; `local`: the embedded model."""
    base_url: str = "http://127.0.0.1:11434/v1"
    """OpenAI-compatible servers take the `/v1` root; Anthropic the API root."""
    model: str = ""
    api_key_env: str | None = None
    """Name of the environment variable that holds the API key (the key itself is never stored)."""
    context_window: int = Field(default=128_000, gt=0)
    """The model's window in tokens. When not set: what the server says of itself (asked as a
    session starts), else this default (the catalog default); a refusal naming a smaller
    window overrides both (`session/window.py`)."""
    max_tokens: int = Field(default=8192, gt=0)
    connect_timeout: float = Field(default=10.0, gt=0)
    read_timeout: float = Field(default=300.0, gt=0)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    tool_calling: Literal["native", "json"] | None = None
    """How the model calls tools (the issue's `tool_mode`): `native` tool-call APIs, or `json`
    (schema-constrained JSON actions, the issue's `json_action`, for small models). Default:
    `json` for the local model, `native` otherwise."""
    json_action: JsonActionSettings = Field(default_factory=JsonActionSettings)
    local: LocalModelSettings = Field(default_factory=LocalModelSettings)
    compaction: ProviderCompactionSettings = Field(default_factory=ProviderCompactionSettings)

    @model_validator(mode="after")
    def _local_defaults(self) -> ProviderConfig:
        if self.kind == "local":
            # The embedded model's window is its server's n_ctx; replies stay short in it.
            if "context_window" not in self.model_fields_set:
                self.context_window = self.local.n_ctx
            if "max_tokens" not in self.model_fields_set:
                self.max_tokens = 1024
        if self.kind in ("anthropic", "openai-responses") and self.tool_calling == "json":
            raise ValueError(
                'toolCalling "json" needs an OpenAI-compatible server (kind "openai" or "local")'
            )
        return self

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def tool_mode(self) -> Literal["native", "json"]:
        return self.tool_calling or ("json" if self.kind == "local" else "native")


class ToolSettings(Settings):
    bash: Literal["ask", "allow", "deny"] = "ask"
    bash_timeout: float = Field(default=120.0, gt=0)
    max_output_chars: int = Field(default=30_000, ge=1000)
    grep_timeout: float = Field(default=10.0, gt=0, le=600)
    """Seconds one `grep` may search before it is stopped (its pattern comes from the model)."""
    tolerant_edits: bool = True
    """`edit` falls back to tolerant matchers (whitespace, indentation, first/last lines) when
    oldText is not in the file exactly; see session/harness/matching.py. A Markdown fence around
    a code file's whole content, oldText or newText is left out (session/harness/fences.py)."""
    syntax_guard: bool = True
    """`write`/`edit` refuse a change that leaves a file which parsed with syntax errors;
    `read` adds a file's syntax errors after its text."""
    loss_guard: bool = True
    """`write` refuses to replace a Python or JSON file with content that drops most of its
    definitions and lines; an append to a Python file may not redefine a name it has or be a
    bare string; a write that defines nothing and does not parse may not replace a file that
    defines something (session/harness/loss.py)."""

    def denied(self) -> frozenset[str]:
        """The tools the user's policy turns off (`bash = "deny"`, the only per-tool policy):
        never offered to a model — the session's, a subagent's, an agent definition's — nor
        named in its prompt, and refused when a model calls one anyway."""
        return frozenset({"bash"}) if self.bash == "deny" else frozenset()


DEFAULT_PROTECTED_PATHS = [
    "**/.memento/config.toml", ".git/", "**/.vscode/settings.json", "**/.vscode/tasks.json",
    "**/.vscode/launch.json", ".envrc", ".nvim.lua", ".exrc",
]  # fmt: skip
"""gitignore patterns: `.git/` and the bare names match at any depth; `**/` makes the others do
too (a subfolder opened as a workspace of its own reads its own `.vscode/` and `.memento/`)."""


class SecuritySettings(Settings):
    """The trust boundary's own settings (all user-level); see README "Security"."""

    protected_paths: list[str] = Field(default_factory=lambda: list(DEFAULT_PROTECTED_PATHS))
    """gitignore-style patterns (case-insensitive) that `write` and `edit` change only after
    the user allows it: files that make other programs run code or change Memento's permissions."""
    permission_timeout: float = Field(default=600.0, gt=0)
    """Seconds a permission request waits for the user's answer; then it is a deny."""
    env_deny: list[str] = Field(default_factory=lambda: ["*_API_KEY", "*_TOKEN", "*_SECRET", "AWS_*"])
    """Environment variables (glob patterns on names) removed from bash and other child processes."""
    secret_env: list[str] = Field(
        default_factory=lambda: ["*_API_KEY", "*_TOKEN", "*_SECRET", "*_PASSWORD", "AWS_SECRET_ACCESS_KEY"]
    )
    """Variables whose values are secrets: replaced by `[redacted]` in everything stored, logged,
    notified or sent to the model (with every variable an `apiKeyEnv` names), and removed from
    child processes."""


class PruneSettings(Settings):
    """Tool-result pruning (omp §3): superseded reads and useless results become short notices."""

    supersede_reads: bool = True
    drop_useless: bool = True
    protected_tools: list[str] = Field(default_factory=lambda: ["skill"])
    """Tools whose results are never pruned or shaken."""
    protected_paths: list[str] = Field(default_factory=lambda: [".memento/*"])
    """Glob patterns: reads of these workspace paths are never pruned or shaken."""
    cache_warm_suffix_tokens: int = Field(default=8_000, ge=0)
    """Only results followed by at most this many tokens (the cache-cold tail) are pruned…"""
    idle_flush_seconds: float = Field(default=5_400, ge=0)
    """…unless the context has been idle this long (longer than any provider cache lives)."""
    protect_tokens: int = Field(default=40_000, ge=0)
    minimum_savings: int = Field(default=20_000, ge=0)


class ShakeSettings(Settings):
    """Shake (omp §4): whole tool results and large fenced/XML blocks become placeholders."""

    enabled: bool = True
    protect_tokens: int = Field(default=16_000, ge=0)
    min_savings: int = Field(default=4_000, ge=0)
    fence_min_tokens: int = Field(default=400, ge=1)


class CompactionSettings(Settings):
    enabled: bool = True
    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000
    threshold_tokens: int | None = None
    """Compact above this many tokens (beats `threshold_percent`); see governance/tokens.py."""
    threshold_percent: float | None = None
    """Compact above this share of the window (1–99); else window − reserve."""
    estimator: Literal["tiktoken", "chars4"] = "tiktoken"
    """Local token estimate: cl100k (offline), or pi's chars/4 (for comparison with pi)."""
    prune: PruneSettings = Field(default_factory=PruneSettings)
    shake: ShakeSettings = Field(default_factory=ShakeSettings)
    summary_provider: ProviderConfig | None = None
    """A separate (cheaper) model for summaries; the session's model when unset."""
    ask_first: bool = False
    """Ask the user ("Compact now" / "Not yet") before an automatic compaction; see
    governance/README.md (an overflowing request still compacts without asking)."""


class AdvisorSettings(Settings):
    enabled: bool = False
    provider: ProviderConfig | None = None
    """The advisor's model (may be the same server with another model id); the session's when unset."""
    max_notes_per_update: int = Field(default=1, ge=1, le=20)
    """Notes delivered per advisor update; a blocker is always delivered."""
    immune_turns: int = Field(default=3, ge=0)
    """After an interrupting note, later concerns become asides for this many turns."""
    retry_delay: float = Field(default=1.0, ge=0)
    """Seconds between attempts of a failed advisor update (3 attempts, then it is dropped)."""
    sync_backlog: int = Field(default=0, ge=0, le=5)
    """0: never wait for the advisor; N: after a turn, wait up to 30 s while N updates are pending."""
    include_thinking: bool = True
    """Show the main agent's reasoning to the advisor."""


class TtsrSettings(Settings):
    """Stream rules (omp §8.1 defaults); see server/memento/ttsr/README.md."""

    enabled: bool = True
    context_mode: Literal["discard", "keep"] = "discard"
    """On an interrupt: drop the partial reply, or keep it in the session (stored as aborted,
    so it is shown and kept on disk but not sent back to the model, as pi)."""
    interrupt_mode: Literal["never", "prose-only", "tool-only", "always"] = "always"
    repeat_mode: Literal["once", "after-gap"] = "once"
    repeat_gap: int = Field(default=10, ge=0)
    """Completed turns before an `after-gap` rule may fire again."""
    builtin_rules: bool = True
    disabled_rules: list[str] = Field(default_factory=list[str])
    max_retries: int = Field(default=3, ge=0, le=20)
    """Interrupt-and-retry rounds per turn; one more violation ends the turn with an error."""
    fallback_window: int = Field(default=4096, ge=256, le=1_048_576)
    """Characters of a stream that a condition hyperscan cannot compile is searched over."""
    fallback_timeout_ms: float = Field(default=20.0, gt=0, le=1000)
    """Time limit of one such search; a condition that keeps timing out is skipped for the stream."""
    user_rules_dir: str | None = None
    """User-wide rules; default `<user config dir>/memento/rules` (or $MEMENTO_CONFIG_DIR/rules)."""


class CheckpointSettings(Settings):
    enabled: bool = True
    auto: bool = True
    """Take a checkpoint before the first mutating tool call of each turn."""
    mutating_tools: list[str] = Field(default_factory=lambda: ["write", "edit", "bash", "task"])
    max_file_bytes: int = Field(default=5 * 1024 * 1024, ge=0)
    """Files larger than this are left out of snapshots (and listed as skipped)."""
    exclude: list[str] = Field(
        default_factory=lambda: [
            "node_modules/", ".venv/", "__pycache__/", ".mypy_cache/", ".pytest_cache/",
            ".ruff_cache/", ".tox/",
        ]
    )  # fmt: skip
    """gitignore patterns left out of snapshots on top of the workspace's .gitignore."""
    exploration_tools: bool = False
    """Offer the model omp's `checkpoint {goal}` / `rewind {report}` exploration tools."""


class MemorySettings(Settings):
    enabled: bool = True
    wakeup_max_tokens: int = Field(default=3_000, ge=200)
    recent_decisions: int = Field(default=5, ge=0)
    epoch_size: int = Field(default=50, ge=2)
    """Decisions per epoch: the main log rolls into `decisions-epoch-N.log` beyond this."""
    recall_max: int = Field(default=3, ge=0)
    """Earlier decisions recalled into context per prompt or touched file, at most."""
    decision_tool: bool | None = None
    """Offer the model `log_decision`. Default: yes, except with JSON actions (small models
    spend their steps logging trivia instead of doing the task)."""


class TaskSettings(Settings):
    """Subagents: the `task` tool's children."""

    enabled: bool = True
    """Offered only to models that call tools natively: a small model speaking JSON actions
    (the embedded one) in an 8k window cannot run child sessions, and the tool's schema and
    line lengthen each of its steps."""
    max_concurrency: int = Field(default=4, ge=0, le=64)
    """Children running at once; 0 = unlimited. A change applies to the next launch in place."""
    max_yield_attempts: int = Field(default=3, ge=1, le=10)
    """Results a child may report that violate the output schema before its task fails."""


class SessionSettings(Settings):
    """Which conversation an editor shows when it starts."""

    resume: Literal["last", "new"] = "last"
    """`last`: reopen the workspace's most recent session (what `memento chat -c` does);
    `new`: start a new one each time."""


McpPolicy = Literal["allow", "ask", "deny"]
"""What a call to an MCP tool needs: nothing, the user's yes (the prompt bash uses), or it is
never offered."""


class McpServerSettings(Settings):
    """One server in Memento's own `mcp.servers`, in the shape of VS Code's `mcp.json`."""

    type: Literal["stdio", "http", "sse"] | None = None
    """Default: `stdio` with a `command`, `http` (streamable HTTP) with a `url`."""
    command: str | None = None
    args: list[str] = Field(default_factory=list[str])
    env: dict[str, str] = Field(default_factory=dict[str, str])
    env_file: str | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    disabled: bool = False
    policy: McpPolicy | None = None
    """The policy of every tool of this server (else `mcp.policies`, else `mcp.defaultPolicy`)."""
    tools: dict[str, McpPolicy] = Field(default_factory=dict[str, McpPolicy])
    """Per tool (the server's own tool name): beats `policy`."""


class McpSettings(Settings):
    """Model Context Protocol servers: their tools, resources and prompts (server/memento/mcp)."""

    enabled: bool = True
    servers: dict[str, McpServerSettings] = Field(default_factory=dict[str, McpServerSettings])
    """Servers by name. The user file's and the editor's start freely; a workspace
    `.memento/config.toml`'s are repository servers (they start once their definition is trusted)."""
    read_from: list[Literal["vscode", "claude", "cursor"]] = Field(
        default_factory=lambda: ["vscode", "claude", "cursor"]  # pyright: ignore[reportUnknownLambdaType]
    )
    """Other tools' files read too (never written): VS Code's `mcp.json` (user and
    `.vscode/mcp.json`), Claude Code's `.mcp.json`, Cursor's `.cursor/mcp.json` (and `~/.cursor`)."""
    policies: dict[str, McpPolicy] = Field(default_factory=dict[str, McpPolicy])
    """`"server"` or `"server/tool"` → allow | ask | deny, for servers from any source."""
    default_policy: McpPolicy = "ask"
    inputs: dict[str, str] = Field(default_factory=dict[str, str])
    """Values for `${input:id}` in VS Code-style definitions (treated as secrets)."""
    start_timeout: float = Field(default=30.0, gt=0)
    """Seconds a server may take to start and list its tools."""
    call_timeout: float = Field(default=600.0, gt=0)
    """Seconds one tool call may run before it is cancelled."""
    max_result_chars: int = Field(default=20_000, ge=1000)
    """A longer result is cut; the whole is kept and readable through `mcp_resource`."""


class MementoConfig(Settings):
    provider: ProviderConfig = Field(default_factory=ProviderConfig)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    advisor: AdvisorSettings = Field(default_factory=AdvisorSettings)
    ttsr: TtsrSettings = Field(default_factory=TtsrSettings)
    checkpoints: CheckpointSettings = Field(default_factory=CheckpointSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    task: TaskSettings = Field(default_factory=TaskSettings)
    session: SessionSettings = Field(default_factory=SessionSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    data_dir: str | None = None
    """Where sessions live; defaults to the user data dir (or $MEMENTO_DATA_DIR)."""
    system_prompt: str | None = None


USER_LEVEL_KEYS = (
    "tools.bash",
    "provider",
    "compaction.summaryProvider",
    "advisor.provider",
    "security",
    "dataDir",
    "ttsr.userRulesDir",
    "mcp",
)
"""Keys (and everything under them) that grant a permission, run a program, choose where
requests and keys go, or name paths outside the workspace. They come only from the editor and
the user config file; a workspace file sets them only once the user trusted its content.
A new setting of that kind must be added here (tests/unit/test_layers.py checks the names)."""


def user_data_dir() -> Path:
    """Memento's user data dir: $MEMENTO_DATA_DIR, else the platform's (sessions, trust records)."""
    if env := os.environ.get("MEMENTO_DATA_DIR"):
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("memento", appauthor=False))


def user_config_dir() -> Path:
    """Memento's user config dir: $MEMENTO_CONFIG_DIR, else the platform's (the user config
    file `config.toml`, user rules, the user's WATCHDOG.md)."""
    if env := os.environ.get("MEMENTO_CONFIG_DIR"):
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("memento", appauthor=False))


def data_dir(config: MementoConfig) -> Path:
    """Where sessions and caches live: the setting, else the user data dir."""
    if config.data_dir:
        return Path(config.data_dir).expanduser()
    return user_data_dir()
