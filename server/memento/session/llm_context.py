"""The session context (pi 1.6 `buildSessionContext`) and its conversion for the model
(pi `convertToLlm`): summaries and shell runs become user messages with pi's wrapper texts.

`build_session_context` is pi's own view (what pi sees in the file); `llm_messages` is what
Memento sends: the same, with the prune and shake edits Memento recorded applied."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memento.core.entries import Entry
from memento.core.messages import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Content,
    CustomMessage,
    Message,
    TextContent,
    UserMessage,
)
from memento.session.pins import sent_path
from memento.session.projection import Leaf, ModelRef, project, session_path
from memento.util.yielding import paced

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"


@dataclass
class SessionContext:
    messages: list[Message]
    thinking_level: str
    model: ModelRef | None


def build_session_context(entries: Sequence[Entry], leaf_id: Leaf = None) -> SessionContext:
    """The context at `leaf_id` (default: the last entry; `BEFORE_ROOT`: empty)."""
    projection = project(session_path(entries, leaf_id))
    return SessionContext(projection.messages, projection.thinking_level, projection.model)


def bash_execution_text(message: BashExecutionMessage) -> str:
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code:
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated and message.full_output_path:
        text += f"\n\n[Output truncated. Full output: {message.full_output_path}]"
    return text


def _user(text: str, timestamp: int) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=timestamp)


def convert_to_llm(messages: Sequence[Message], *, keep_custom: bool = False) -> list[Message]:
    """Messages as a model takes them (pi `convertToLlm`).

    `keep_custom` leaves custom messages as they are (the providers send them as user
    messages) so the running session keeps their type; summaries always take pi's form.
    """
    out: list[Message] = []
    for message in paced(messages):
        match message:
            case BashExecutionMessage():
                if not message.exclude_from_context:
                    out.append(_user(bash_execution_text(message), message.timestamp))
            case CustomMessage() if not keep_custom:
                content: str | list[Content] = (
                    [TextContent(text=message.content)]
                    if isinstance(message.content, str)
                    else message.content
                )
                out.append(UserMessage(content=content, timestamp=message.timestamp))
            case BranchSummaryMessage():
                out.append(
                    _user(BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX, message.timestamp)
                )
            case CompactionSummaryMessage():
                text = COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX
                summary = _user(text, message.timestamp)
                if message.remote is not None and isinstance(summary.content, list):
                    # The provider that wrote it reads its own items; the others, the text.
                    summary.content.append(message.remote)
                out.append(summary)
            case _:
                out.append(message)
    return out


def llm_messages(path: Sequence[Entry]) -> list[Message]:
    """What a request carries for a root→leaf path: the projected context with the recorded
    prune and shake edits applied (`edits`) and the pins (`pins`), converted."""
    return convert_to_llm(project(sent_path(path)).messages, keep_custom=True)
