"""Messages as pi stores them inside `message` entries (pi session format v3).

Every model allows extra fields so a message written by pi or oh-my-pi survives a
load/save round trip unchanged. Fields are camelCase on disk and on the wire.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag
from pydantic.alias_generators import to_camel

from memento.util.jsonish import field, get

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]


STORED = {"stored": True}
"""Validation context for data read from disk or the wire: keep exactly the fields it had."""


class Wire(BaseModel):
    """Base for everything stored or sent: camelCase aliases, unknown fields kept.

    A model read with `context=STORED` dumps exactly the fields it was read with, so pi
    files round-trip unchanged. A model built in code dumps every field that is not None,
    so its defaults reach the file (pi omits `undefined`, so do we).
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        serialize_by_alias=True,
        defer_build=True,
    )

    def model_post_init(self, context: Any, /) -> None:
        if not get(context, "stored"):
            fields = type(self).model_fields
            self.__pydantic_fields_set__.update(n for n in fields if getattr(self, n) is not None)

    def dump(self) -> dict[str, Any]:
        """JSON-ready dict of the fields this model carries."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class TextContent(Wire):
    type: Literal["text"] = "text"
    text: str


class ThinkingContent(Wire):
    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: str | None = None


class ImageContent(Wire):
    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ToolCall(Wire):
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict[str, Any])


class ProviderItems(Wire):
    """Memento: what a provider's own compaction returned, sent back verbatim in place of the
    summary text to that provider (same wire format and model); every other provider reads
    the text block beside it. Built when a request is assembled, never stored in a message."""

    type: Literal["providerItems"] = "providerItems"
    api: str
    """The wire format that reads the items (`openai-responses`, `anthropic-messages`)."""
    model: str
    items: list[dict[str, Any]] = Field(default_factory=list[dict[str, Any]])


class OtherContent(Wire):
    """A content block of a type we do not know; kept as it is."""

    type: str


_CONTENT_TAGS = ("text", "thinking", "image", "toolCall", "providerItems")


def _content_tag(value: Any) -> str:
    kind = field(value, "type")
    return kind if kind in _CONTENT_TAGS else "other"


Content = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[ThinkingContent, Tag("thinking")]
    | Annotated[ImageContent, Tag("image")]
    | Annotated[ToolCall, Tag("toolCall")]
    | Annotated[ProviderItems, Tag("providerItems")]
    | Annotated[OtherContent, Tag("other")],
    Discriminator(_content_tag),
]


Number = int | float


class Cost(Wire):
    input: Number = 0
    output: Number = 0
    cache_read: Number = 0
    cache_write: Number = 0
    total: Number = 0


class Usage(Wire):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)
    estimated: bool | None = None
    """Memento: counted locally because the provider reported none (llama-cpp-python's
    server when streaming); absent when the provider counted."""


class UserMessage(Wire):
    role: Literal["user"] = "user"
    content: str | list[Content]
    timestamp: int


class AssistantMessage(Wire):
    role: Literal["assistant"] = "assistant"
    content: list[Content] = Field(default_factory=list[Content])
    api: str = ""
    provider: str = ""
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    timestamp: int = 0

    def text(self) -> str:
        return "".join(c.text for c in self.content if isinstance(c, TextContent))

    def tool_calls(self) -> list[ToolCall]:
        return [c for c in self.content if isinstance(c, ToolCall)]


class ToolResultMessage(Wire):
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[Content] = Field(default_factory=list[Content])
    is_error: bool = False
    timestamp: int = 0

    def text(self) -> str:
        return "".join(c.text for c in self.content if isinstance(c, TextContent))


class CustomMessage(Wire):
    """Extension message in the model context (TTSR reminders, advisor notes, wake-up digest)."""

    role: Literal["custom"] = "custom"
    custom_type: str
    content: str | list[Content]
    display: bool = False
    timestamp: int = 0


class BashExecutionMessage(Wire):
    """A shell command the user ran themselves (pi's `!cmd`); sent as a user message."""

    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    timestamp: int = 0


class CompactionSummaryMessage(Wire):
    """The summary of a compaction, first in the rebuilt context; wrapped into a user message when sent."""

    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int = 0
    timestamp: int = 0
    remote: ProviderItems | None = None
    """Memento: the provider's own compaction items (a compaction its provider wrote)."""


class BranchSummaryMessage(Wire):
    """The summary of an abandoned branch; wrapped into a user message when sent."""

    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str | None = None
    timestamp: int = 0


class OtherMessage(Wire):
    """A role we do not interpret (system, developer, …), or a message that does not match
    its role's schema; preserved as it is."""

    role: str


_TYPED_ROLES = (
    "user",
    "assistant",
    "toolResult",
    "custom",
    "bashExecution",
    "compactionSummary",
    "branchSummary",
)


def _message_tag(value: Any) -> str:
    if isinstance(value, OtherMessage):
        return "other"  # already read as uninterpreted (e.g. off its role's schema): stays so
    role = field(value, "role")
    return role if role in _TYPED_ROLES else "other"


Message = Annotated[
    Annotated[UserMessage, Tag("user")]
    | Annotated[AssistantMessage, Tag("assistant")]
    | Annotated[ToolResultMessage, Tag("toolResult")]
    | Annotated[CustomMessage, Tag("custom")]
    | Annotated[BashExecutionMessage, Tag("bashExecution")]
    | Annotated[CompactionSummaryMessage, Tag("compactionSummary")]
    | Annotated[BranchSummaryMessage, Tag("branchSummary")]
    | Annotated[OtherMessage, Tag("other")],
    Discriminator(_message_tag),
]
