"""`TranscriptState`: a transcript and the ops that change it (`memento.core.transcript`).

The server's projection changes its transcript only through it, and every change is told
as the op a front end applies: a copy that applies the ops (`apply`) ends equal. A Python
front end (`memento chat`) and the tests keep their copies with it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, assert_never, cast

from memento.core.transcript import (
    CHILDREN,
    PART_TYPES,
    AppendOp,
    Item,
    NodeType,
    OpType,
    RemoveOp,
    ReplyItem,
    ResetOp,
    SubagentCard,
    TextOp,
    TextPart,
    ThinkingPart,
    ToolPart,
    UpdateOp,
)


def children(node: NodeType) -> list[Any] | None:
    """The list a node's children live in (None for a node that has none)."""
    match node:
        case ReplyItem():
            return node.parts
        case ToolPart():
            return node.subagents
        case SubagentCard():
            return node.items
        case _:
            return None


def walk(node: NodeType) -> Iterator[NodeType]:
    """The node and every node under it."""
    yield node
    for child in children(node) or ():
        yield from walk(child)


def coalesce(ops: list[OpType]) -> list[OpType]:
    """Consecutive text appends to one part merged (what a front end may do before drawing)."""
    out: list[OpType] = []
    for op in ops:
        last = out[-1] if out else None
        if isinstance(op, TextOp) and isinstance(last, TextOp) and last.key == op.key:
            out[-1] = TextOp(item=op.item, key=op.key, text=last.text + op.text)
        else:
            out.append(op)
    return out


class TranscriptError(ValueError):
    """An op that does not fit the transcript (an unknown key, a node of the wrong kind)."""


Sink = Callable[[OpType], None]


class TranscriptState:
    """A transcript and the ops that change it. Every change goes through `append`, `update`,
    `text`, `remove` and `reset`, each of which tells `sink` the op it performed: a copy that
    applies those ops (`apply`) ends equal to this one."""

    def __init__(self, items: list[Item] | None = None) -> None:
        self.items: list[Item] = []
        self._nodes: dict[str, NodeType] = {}
        self._parent: dict[str, str | None] = {}
        self._top: dict[str, str] = {}
        self._position: dict[str, int] | None = None
        self.sink: Sink | None = None
        for item in items or []:
            self.append(None, item)

    # -- reading ----------------------------------------------------------------------------
    def get(self, key: str) -> NodeType | None:
        return self._nodes.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._nodes

    def parent(self, key: str) -> str | None:
        """The key of the node that holds `key` (None for a top-level item)."""
        return self._parent.get(key)

    def top(self, key: str) -> str:
        """The key of the top-level item that holds `key`."""
        return self._top[key]

    def position(self, key: str) -> int | None:
        """Where the top-level item `key` is in `items`."""
        if self._position is None:
            self._position = {item.key: i for i, item in enumerate(self.items)}
        return self._position.get(key)

    def dump(self) -> list[dict[str, Any]]:
        return [item.wire() for item in self.items]

    # -- changing ---------------------------------------------------------------------------
    def _tell(self, op: OpType) -> None:
        if self.sink is not None:
            self.sink(op)

    def append(self, parent: str | None, node: NodeType) -> None:
        if node.key in self._nodes:
            raise TranscriptError(f"append: key {node.key!r} is taken")
        if parent is None:
            if isinstance(node, (*PART_TYPES, SubagentCard)):
                raise TranscriptError(f"append: a {node.kind} needs a parent")
            container: list[Any] = self.items
            top = node.key
            if self._position is not None:
                self._position[node.key] = len(self.items)
        else:
            owner = self._nodes.get(parent)
            found = children(owner) if owner is not None else None
            if found is None:
                raise TranscriptError(f"append: no container {parent!r}")
            container, top = found, self._top[parent]
        container.append(node)
        self._index(node, parent, top)
        if self.sink is not None:
            self._tell(AppendOp(item=top, parent=parent, node=node.model_copy(deep=True)))

    def _index(self, node: NodeType, parent: str | None, top: str) -> None:
        self._nodes[node.key] = node
        self._parent[node.key] = parent
        self._top[node.key] = top
        for child in children(node) or ():
            self._index(child, node.key, top)

    def update(self, new: NodeType) -> None:
        """Replace the node with `new`'s key by `new`, keeping the children it has."""
        old = self._nodes.get(new.key)
        if old is None or old.kind != new.kind:
            raise TranscriptError(f"update: no {new.kind} {new.key!r}")
        values = {name: getattr(new, name) for name in type(old).model_fields if name not in CHILDREN}
        _fields(old).update(values)  # plain fields, no validators: pydantic's setattr is not needed
        if self.sink is not None:
            self._tell(UpdateOp(item=self._top[new.key], node=old.model_copy()))

    def change(self, key: str, **fields: Any) -> bool:
        """Set some fields of a node (an `update` when anything differs); True when it did."""
        node = self._nodes.get(key)
        if node is None:
            raise TranscriptError(f"change: no node {key!r}")
        if all(getattr(node, name) == value for name, value in fields.items()):
            return False
        if self.sink is None:  # nobody follows (a transcript read from storage): just set them
            _fields(node).update(fields)
            return True
        self.update(node.model_copy(update=fields))
        return True

    def text(self, key: str, text: str) -> None:
        node = self._nodes.get(key)
        match node:
            case TextPart() | ThinkingPart():
                node.text += text
            case ToolPart():
                node.args += text
            case _:
                raise TranscriptError(f"text: no text part {key!r}")
        if self.sink is not None:
            self._tell(TextOp(item=self._top[key], key=key, text=text))

    def remove(self, key: str) -> None:
        node = self._nodes.get(key)
        if node is None:
            raise TranscriptError(f"remove: no node {key!r}")
        parent = self._parent[key]
        top = self._top[key]
        owner = self._nodes.get(parent) if parent is not None else None
        container: list[Any] | None = (
            self.items if parent is None else children(owner) if owner is not None else None
        )
        if container is not None:
            container.remove(node)
        for gone in walk(node):
            self._nodes.pop(gone.key, None)
            self._parent.pop(gone.key, None)
            self._top.pop(gone.key, None)
        if parent is None:
            self._position = None
        self._tell(RemoveOp(item=top, key=key))

    def prepend(self, items: list[Item]) -> None:
        """Put older items before the first (paged in from storage, not told: no copy holds
        them yet, and a copy pages them in by cursor the same way)."""
        for item in items:
            if item.key in self._nodes:
                raise TranscriptError(f"prepend: key {item.key!r} is taken")
        self.items[:0] = items
        for item in items:
            self._index(item, None, item.key)
        self._position = None

    def reset(self, items: list[Item] | None = None) -> None:
        """Start over (with `items`, not told one by one: a reset makes copies read it again)."""
        sink, self.sink = self.sink, None
        self.items, self._nodes, self._parent, self._top, self._position = [], {}, {}, {}, None
        for item in items or []:
            self.append(None, item)
        self.sink = sink
        self._tell(ResetOp())

    def apply(self, op: OpType) -> None:
        """Apply one op of a patch (a copy following the server's)."""
        match op:
            case AppendOp(parent=parent, node=node):
                self.append(parent, node.model_copy(deep=True))
            case UpdateOp(node=node):
                self.update(node)
            case TextOp(key=key, text=text):
                self.text(key, text)
            case RemoveOp(key=key):
                self.remove(key)
            case ResetOp():
                self.reset()
            case _:
                assert_never(op)


def _fields(node: NodeType) -> dict[str, Any]:
    return cast("dict[str, Any]", node.__dict__)
