"""What makes a JSON value a JSON-RPC message, checked before pygls sees it, and the
leniency editors need ("no arguments" spelt five ways).

pygls drops what it cannot read (batches, a bad `jsonrpc`, object ids, a missing method)
without an answer, and answers some of the rest with a traceback in `data`. Here every
invalid request is named (`Invalid`) so that `rpc.MementoProtocol` answers it.

LSP has no batches. A JSON-RPC batch is refused, but each request in it is answered by its
own id (`batch_request_ids`), one message each as LSP clients read them: a client that sent
one still hears about every request it waits for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

from memento.util.jsonish import as_array, as_object


@dataclass
class Invalid:
    reason: str
    request_id: int | str | None
    """The id to answer with; None answers with id null (the id itself was unusable)."""
    answer: bool = True
    """False for what looks like the client's reply to one of ours: it is only logged."""


def valid_id(value: object) -> TypeGuard[int | str]:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


BATCH_REFUSED = "batches are not supported (LSP has none); send one message per frame"


def batch_request_ids(batch: list[Any]) -> list[int | str]:
    """The usable ids of the requests in a batch, in order (a repeated id once per request)."""
    ids: list[int | str] = []
    for item in batch:
        request = as_object(item)
        if request is not None and "method" in request and valid_id(request_id := request.get("id")):
            ids.append(request_id)
    return ids


def check(value: Any) -> Invalid | None:
    """Why `value` is not a JSON-RPC 2.0 request, notification or response (None: it is)."""
    if isinstance(value, list):
        return Invalid(BATCH_REFUSED, None)
    message = as_object(value)
    if message is None:
        return Invalid("a message must be a JSON object", None)
    has_id = "id" in message
    raw_id: Any = message.get("id")
    if has_id and not valid_id(raw_id):
        if raw_id is None and "error" in message and "method" not in message:
            return Invalid("the client reported an error about a message it could not read", None, False)
        return Invalid(f"invalid id {_shown(raw_id)}: an id is a string or an integer", None)
    request_id = raw_id if has_id and valid_id(raw_id) else None
    if message.get("jsonrpc") != "2.0":
        return Invalid(f'"jsonrpc" must be "2.0", not {_shown(message.get("jsonrpc"))}', request_id)
    if "method" not in message:
        if has_id and ("result" in message or "error" in message):
            return None  # the client's answer to one of our requests
        return Invalid("the message has no method", request_id)
    method = message["method"]
    if not isinstance(method, str) or not method:
        return Invalid(f"the method must be a non-empty string, not {_shown(method)}", request_id)
    params = message.get("params")
    if params is not None and not isinstance(params, dict | list):
        return Invalid(f"params must be an object or an array, not {_shown(params)}", request_id)
    return None


def is_request(message: dict[str, Any]) -> bool:
    return "method" in message and "id" in message


def normalize(message: dict[str, Any]) -> None:
    """Editors' ways of saying "no arguments" made one (in place): omitted params, null,
    `[]`, `[{}]` and `[[]]` become `{}` for our own methods; an executeCommand's `arguments`
    may be the single argument object itself, or any of those for none."""
    method = message.get("method")
    if method == "workspace/executeCommand" and (params := as_object(message.get("params"))) is not None:
        arguments = params.get("arguments")
        if is_empty(arguments):
            params["arguments"] = []
        elif isinstance(arguments, dict):
            params["arguments"] = [arguments]
    if isinstance(method, str) and method.startswith("memento/") and is_empty(message.get("params")):
        message["params"] = {}


def is_empty(params: Any) -> bool:
    """None, `{}`, `[]`, or one of those alone in a list (Lua's `{{}}` arrives as `[[]]`)."""
    listed = as_array(params)
    if listed is not None and len(listed) == 1:
        params = listed[0]
    return params is None or params == {} or params == []


def empty_alternatives(message: dict[str, Any]) -> list[dict[str, Any]]:
    """For a typed LSP method, the other spellings of "no arguments" to try when the one
    sent does not fit its params type (`{}` for a struct of optional fields, null for none)."""
    if not is_empty(message.get("params")):
        return []
    return [message | {"params": {}}, message | {"params": None}]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
