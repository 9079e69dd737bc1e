"""What the next JSON-action step may do, and the note that tells the model why.

A small model copies its last action, answers with an intention ("I will add the test"), or
restates the request as its answer. After each step `step_note` looks at the turn so far and
returns a note (sent after the conversation, so llama.cpp's cached prefix stays) and a limit
that the JSON schema enforces: only an answer, only a tool call, only certain tools, or
anything (see `step_note`).
"""

from __future__ import annotations

import json
import re

from memento.config import JsonActionSettings
from memento.core.messages import (
    AssistantMessage,
    Content,
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

LIMIT_NOTE = "You have used the tool steps of this turn: answer now with what you know."
REPEAT_NOTE = "You just repeated the same tool call; its result is above. Answer now."
CYCLE_NOTE = (
    "Your last two calls repeat the two before them; their results are above. Do not send "
    "them again: take the next step (change what the request asks for), or answer."
)
FAILED_AGAIN_NOTE = (
    "Your last call failed twice in the same way; do not send it again. Use what its result "
    "shows: copy oldText from the file's text as shown, read the file, or write the whole file."
)
"""A failed call repeated once more gets another try (the step is not answer-only)."""
DONE_NOTE = (
    "Your last call repeats one that succeeded earlier in this turn: its change is made "
    "already (see its first result above). Do not send it again. Take the next step the "
    "request still needs, in another place or file, or answer."
)
"""The first repeat of a change that succeeded gets a warning; a second repeat, an answer."""
AGAIN_NOTE = (
    "You just sent the same call again; its result is the one above. Do not send it again: "
    "take the next step the request needs (a change, if it asks for one), or answer."
)
OWED_NOTE = (
    "The request asks for a change, and no file has changed yet: do not read again. Make the "
    "change now, with edit (oldText copied from the file's text above) or write (the whole new "
    "content of the file)."
)
"""A change request whose turn repeats its reads without changing anything (see `step_note`)."""
CHANGING = frozenset({"edit", "write", "bash"})
ANY_CALL = "*"
"""A step that must call a tool, whichever (see `step_note`)."""
CHANGE_CALL = "edit|write"
"""A step that must call edit or write (a limit naming tools, separated by `|`)."""
WORDS_NOTE = (
    "Your last change writes {written}, where the request says {asked}: use the user's words "
    "exactly as given, with the same case. Make it so now: edit {call}"
)
"""A string in a change that is a phrase of the request in another case ("Hello world")."""
QUOTED_NOTE = (
    "The request gives the exact words to write, {asked}; your last change writes more: "
    "{written}. Write only the request's words: edit {call}"
)
"""A string in a change that has the request's quoted words and more (a docstring that goes on)."""
NAMED_NOTE = (
    "The request also names {files}, which no step of this turn has used yet: make the change "
    "the request asks for there now, or read it first."
)
"""After a change, the files the request names that the turn has not read or changed."""
_FILE_NAME = re.compile(r"[\w./-]*\w\.[A-Za-z]\w{1,5}\b")
_LITERAL = re.compile(r"'([^'\n]{2,80})'|\"([^\"\n]{2,80})\"")

Limit = bool | str
"""True: only an answer; False: anything; a string: only a call, of `ANY_CALL` tool or of the
tools it names (`CHANGE_CALL`, a tool's name)."""


def allows(limit: str, tool: str) -> bool:
    """Whether a step limited to `limit` (a string `Limit`) may call `tool`."""
    return limit == ANY_CALL or tool in limit.split("|")


def turn_calls(messages: list[Message]) -> list[ToolCall]:
    """The tool calls made since the last user message (this turn's steps so far)."""
    calls: list[ToolCall] = []
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage):
            calls[:0] = message.tool_calls()
    return calls


def step_note(
    messages: list[Message], settings: JsonActionSettings, *, change_asked: bool = False
) -> tuple[str | None, Limit]:
    """A note for the next step and what that step may do (`Limit`).

    - Only an answer: after the step cap, a call repeated a third time, a pair of calls
      taking turns twice, or a change sent a third time after it succeeded.
    - Only edit: after a change that wrote the user's words in another case.
    - Only a call (ANY_CALL): after a failed edit or write, a change while the request
      names a file the turn has not used, or a result that proposes the next call; and, when the prompt asks for a change
      (`change_asked`), until an edit or write has succeeded (an answer there restates
      the request or says what it would do). Reads repeated meanwhile get OWED_NOTE and
      only edit or write.
    - A warning and anything: a call repeated once, or a change sent again after it succeeded.
    """
    calls = turn_calls(messages)
    if len(calls) >= settings.max_steps:
        return LIMIT_NOTE, True
    if not calls:
        return None, ANY_CALL if change_asked else False
    if (words := _other_case(messages, calls[-1])) is not None:
        return words, "edit"
    fresh = not any(_same(calls[-1], earlier) for earlier in calls[:-1])
    if fresh and (named := _named_unused(messages, calls)) is not None:
        return named, ANY_CALL  # an answer here is an intention ("I will add the test")
    failed = _failed_ids(messages)
    owed = change_asked and not any(c.name in ("edit", "write") and c.id not in failed for c in calls)
    if (repeated := _repeat_note(calls, failed, owed=owed)) is not None:
        return repeated
    if calls[-1].id in failed and calls[-1].name in ("edit", "write"):
        return None, ANY_CALL  # an answer after a failed change gives up, or repeats the error
    if _proposes_a_call(messages, calls[-1]):
        return None, ANY_CALL  # "To rename it there too: edit {…}": an answer would skip it
    return None, ANY_CALL if owed else False


_PROPOSED = re.compile(r'\b(?:edit|write|bash) \{"')
"""A tool result that proposes the next call as `<tool> {json arguments}` (edit's rename note)."""


def _proposes_a_call(messages: list[Message], call: ToolCall) -> bool:
    result = next(
        (m for m in messages if isinstance(m, ToolResultMessage) and m.tool_call_id == call.id), None
    )
    return result is not None and not result.is_error and _PROPOSED.search(result.text()) is not None


def _repeat_note(calls: list[ToolCall], failed: set[str], *, owed: bool) -> tuple[str, Limit] | None:
    """The note when the last call repeats earlier ones (see `step_note`); None when it does not."""
    repeats = [
        i
        for i, later in enumerate(calls)
        if later.name in CHANGING
        and any(_same(later, earlier) and earlier.id not in failed for earlier in calls[:i])
    ]
    if repeats and repeats[-1] == len(calls) - 1:
        # A change sent again after it succeeded: small models copy their last action.
        return (REPEAT_NOTE, True) if len(repeats) >= 2 else (DONE_NOTE, False)
    if len(calls) >= 2 and _same(calls[-1], calls[-2]):
        third = len(calls) >= 3 and _same(calls[-2], calls[-3])
        if calls[-1].id in failed and not third:
            return FAILED_AGAIN_NOTE, ANY_CALL
        if owed and calls[-1].name not in CHANGING:
            return OWED_NOTE, CHANGE_CALL  # read, read: the change is what is missing
        if not third:  # read, read: the model copied its last step; one warning first
            return AGAIN_NOTE, False
        return REPEAT_NOTE, True
    if len(calls) >= 4 and _same(calls[-1], calls[-3]) and _same(calls[-2], calls[-4]):
        # Two calls taking turns (read a, read b, read a, read b): a warning, then an answer.
        if owed:
            return OWED_NOTE, CHANGE_CALL
        again = len(calls) >= 5 and _same(calls[-1], calls[-5])
        return (REPEAT_NOTE if again else CYCLE_NOTE), again
    return None


def _failed_ids(messages: list[Message]) -> set[str]:
    return {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage) and m.is_error}


def _changed_for(messages: list[Message], call: ToolCall) -> str | None:
    """The request's text when `call` is a write or edit that succeeded, else None."""
    request = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
    if request is None or call.name not in ("write", "edit") or call.id in _failed_ids(messages):
        return None
    return plain_text(request.content)


def _other_case(messages: list[Message], call: ToolCall) -> str | None:
    """WORDS_NOTE when the last change has a string literal that the request has in another
    case, and not in this one; QUOTED_NOTE when a string of it has words the request quotes
    and goes on past them."""
    if (asked := _changed_for(messages, call)) is None:
        return None
    code = str(call.arguments.get("content", call.arguments.get("newText", "")))
    path = str(call.arguments.get("path", ""))
    for match in _LITERAL.finditer(code):
        literal = match.group(1) or match.group(2)
        right = _as_asked(literal, asked)
        if right is not None and right != literal:
            return WORDS_NOTE.format(
                written=json.dumps(literal), asked=json.dumps(right), call=_edit_call(path, literal, right)
            )
    for quoted in (m.group(1) or m.group(2) for m in _QUOTED.finditer(asked)):
        if len(quoted.split()) < 2:
            continue  # one word ("Welcome") is a word to use, not the whole text
        longer = next((s for s in _strings(code) if _goes_on(s, quoted)), None)
        if longer is not None:
            return QUOTED_NOTE.format(
                asked=json.dumps(quoted),
                written=json.dumps(longer[:80]),
                call=_edit_call(path, longer, quoted),
            )
    return None


def _as_asked(literal: str, asked: str) -> str | None:
    """The request's own text for `literal`: the same letters in another case, or (two or more
    words and nothing else) the same words with other punctuation ("Hello, world!" for
    "hello world"); None when the request does not have it."""
    if not literal.strip():
        return None
    if literal in asked:
        return literal
    at = asked.lower().find(literal.lower())
    if at != -1:
        return asked[at : at + len(literal)]
    words = re.findall(r"\w+", literal)
    if len(words) < 2 or re.fullmatch(r"[\w\s,.!?;:'-]+", literal) is None:
        return None
    found = re.search(r"\b" + r"\W+".join(map(re.escape, words)) + r"\b", asked, re.IGNORECASE)
    return found.group() if found else None


_QUOTED = re.compile(r'"([^"\n]{3,120})"|\u201c([^\u201d\n]{3,120})\u201d')
_TRIPLE = re.compile(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'', re.DOTALL)
MIN_MORE = 10
"""A string this much longer than the words the request quotes goes on past them."""


def _goes_on(string: str, quoted: str) -> bool:
    """`string` is the quoted words, then whitespace and more (a sentence or paragraph)."""
    rest = string.removeprefix(quoted)
    return rest != string and rest[:1].isspace() and len(rest.strip()) >= MIN_MORE


def _strings(code: str) -> list[str]:
    """The strings of a change: its quoted literals, or the whole text when it has no quote
    marks (prose, which the edit tools make a docstring)."""
    found = [a or b for a, b in _TRIPLE.findall(code)]
    found += [m.group(1) or m.group(2) for m in _LITERAL.finditer(_TRIPLE.sub("", code))]
    if not found and not any(q in code for q in "\"'"):
        found.append(code.strip())
    return [s.strip() for s in found]


def _edit_call(path: str, old: str, new: str) -> str:
    return json.dumps({"path": path, "oldText": old, "newText": new})


def _named_unused(messages: list[Message], calls: list[ToolCall]) -> str | None:
    """NAMED_NOTE when the last call was a change and the request names files (`name.ext`)
    that no call of this turn has had as its path."""
    if (asked := _changed_for(messages, calls[-1])) is None:
        return None
    used = {str(c.arguments.get("path", "")).removeprefix("./") for c in calls}
    named = dict.fromkeys(m.group().removeprefix("./") for m in _FILE_NAME.finditer(asked))
    unused = [n for n in named if n not in used and n.rsplit("/", 1)[-1] not in used]
    return NAMED_NOTE.format(files=" and ".join(unused[:3])) if unused else None


def _same(a: ToolCall, b: ToolCall) -> bool:
    return a.name == b.name and json.dumps(a.arguments, sort_keys=True) == json.dumps(
        b.arguments, sort_keys=True
    )


def plain_text(content: str | list[Content]) -> str:
    """A message's content as text (images as a placeholder)."""
    if isinstance(content, str):
        return content
    parts = (
        b.text if isinstance(b, TextContent) else "[image omitted]"
        for b in content
        if isinstance(b, TextContent | ImageContent)  # not another provider's compaction items
    )
    return "\n".join(parts)
