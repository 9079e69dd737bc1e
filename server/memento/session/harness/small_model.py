"""The small-model harness: what `read`, `write` and `edit` do beyond plain tools, for models
(small ones most) that copy text back changed, quote or fence the code they send, and write
a whole file when they meant a small change. It plugs into the tools' seam
(`session/tools/seam.py`); each of its parts is one setting:

- `tools.tolerantEdits`: oldText found by the tolerant matchers (`locate.py`,
  `matching.py`), a Markdown fence (`fences.py`) or a pair of double quotes around code
  left out, a Python module's lost docstring quotes put back, an append to a file not
  there yet creating it;
- `tools.syntaxGuard`: a change that breaks a file's syntax refused, a read of a broken
  file noted (`syntax.py`);
- `tools.lossGuard`: changes that drop what a file defines refused (`loss.py`), additions
  merged as they were meant (`merge.py`), names a Python module now uses added to its
  imports (`names.py`).

Whichever parts are on, an edit that takes a name out says where it is still used
(`renames.py`). Every method is blocking (parsing, the files beside one): the tools call
them from a worker thread.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memento.config import ToolSettings
from memento.session.tools.base import ToolError
from memento.session.tools.seam import Change, EditTexts, Missing, Place, Places, Vetted, exact_place
from memento.session.tools.workspace import same_text, uses_crlf
from memento.util.languages import language_of

if TYPE_CHECKING:
    from memento.session.harness import merge

# The helpers (the matchers, the syntax and loss guards, ast-grep) load at the first edit,
# write or read that needs them, not with the session that holds the harness.


@dataclass(frozen=True)
class SmallModelHarness:
    tolerant_edits: bool = True
    syntax_guard: bool = True
    loss_guard: bool = True

    @classmethod
    def of(cls, settings: ToolSettings) -> SmallModelHarness:
        """The harness the `tools` settings choose."""
        return cls(settings.tolerant_edits, settings.syntax_guard, settings.loss_guard)

    @property
    def append_creates(self) -> bool:
        return self.tolerant_edits

    def prepare_edit(self, shown: str, text: str, old: str, new: str) -> EditTexts:
        from memento.session.harness import fences

        if not self.tolerant_edits or not fences.applies(shown):
            return EditTexts(old, new)
        old, new, unfenced = fences.unfence_edit(text, old, new)
        return EditTexts(old, new, f" ({unfenced})" if unfenced else "")

    def locate(self, shown: str, text: str, old: str, new: str) -> Place | Places | Missing:
        from memento.session.harness.locate import tolerant_place

        return (tolerant_place if self.tolerant_edits else exact_place)(shown, text, old, new)

    def vet(self, change: Change) -> Vetted:
        return self._vet_write(change) if change.old is None else self._vet_edit(change, change.old)

    def annotates(self, shown: str, size: int) -> bool:
        from memento.session.harness import syntax

        return self.syntax_guard and language_of(shown) is not None and size <= syntax.MAX_GUARDED_CHARS

    def read_note(self, shown: str, text: str) -> str:
        from memento.session.harness import syntax

        return syntax.read_note(shown, text) if self.syntax_guard else ""

    def _vet_edit(self, change: Change, old: str) -> Vetted:
        from memento.session.harness.renames import renamed_left

        shown, current, new = change.shown, change.before or "", change.new  # an edited file is there
        updated, summary, merged = change.after, change.summary, None
        if self.loss_guard and not old:
            merged = merged_append(shown, current, new)
            if merged is not None:
                updated, summary = merged.text, merged.summary
        if updated == current:
            return Vetted(updated, summary, change.note)  # the edit says it changes nothing
        if self.loss_guard and (refusal := _lost_by_edit(shown, current, updated, old, new, merged)):
            raise ToolError(refusal)
        updated, named = self._with_imports(change.path, shown, current, updated)
        note = change.note + named + self._syntax_note(shown, current, updated)
        left = renamed_left(updated, old, new, change.path, shown) if old else ""
        return Vetted(updated, summary, note + left)

    def _vet_write(self, change: Change) -> Vetted:
        from memento.session.harness import merge

        shown, old, content, note = change.shown, change.before, change.after, change.note
        if self.tolerant_edits:
            content, fixed = _tolerated(shown, content)
            note += fixed
        added = merge.merge_write(shown, old, content) if self.loss_guard else None
        if added is not None:
            content, note = added.text, f" ({added.summary})"
        elif self.loss_guard and (refusal := _lost_by_write(shown, old, content)):
            raise ToolError(refusal)
        if old is not None and same_text(old, content):
            return Vetted(content, note=note, appended=added is not None)  # the write says it changes nothing
        if self.loss_guard and old is not None and (same := _same_code(shown, old, content)):
            raise ToolError(same)
        content, named = self._with_imports(change.path, shown, old, content)
        note += named + self._syntax_note(shown, old, content)
        return Vetted(content, note=note, appended=added is not None)

    def _with_imports(self, path: Path, shown: str, before: str | None, text: str) -> tuple[str, str]:
        """`names.complete_imports` under the loss guard."""
        from memento.session.harness import names

        if not self.loss_guard:
            return text, ""
        completed = names.complete_imports(path, shown, before, text)
        return completed.text, completed.note

    def _syntax_note(self, shown: str, before: str | None, after: str) -> str:
        """The syntax guard's note on the change; `ToolError` when it refuses it."""
        from memento.session.harness import syntax

        if not self.syntax_guard:
            return ""
        verdict = syntax.guard(shown, before, after)
        if verdict.refusal:
            raise ToolError(verdict.refusal)
        return verdict.note


def merged_append(shown: str, current: str, new: str) -> merge.Merged | None:
    """An append merged as the model meant it (`merge.py`), CRLF line ends kept."""
    from memento.session.harness import merge

    crlf = uses_crlf(current)
    lf = current.replace("\r\n", "\n") if crlf else current
    found = merge.merge_append(shown, lf, new.replace("\r\n", "\n"))
    if found is None or not crlf:
        return found
    return merge.Merged(found.text.replace("\n", "\r\n"), found.summary)


def _lost_by_edit(
    shown: str, current: str, updated: str, old: str, new: str, merged: merge.Merged | None
) -> str | None:
    from memento.session.harness import loss

    if merged is not None:
        found = None
    elif not old:
        found = loss.check_append(shown, current, new)
    else:
        found = loss.check_edit(shown, current, updated, new)
    return (
        found
        or loss.check_self_import(shown, current, updated)
        or loss.check_returns(shown, current, updated)
    )


def _lost_by_write(shown: str, old: str | None, content: str) -> str | None:
    from memento.session.harness import loss

    return (
        loss.check_write(shown, old, content)
        or loss.check_emptied(shown, old, content)
        or loss.check_self_import(shown, old, content)
        or loss.check_returns(shown, old, content)
    )


def _tolerated(shown: str, content: str) -> tuple[str, str]:
    """`content` with what a model gets wrong in it undone, and what was undone, for the
    result."""
    from memento.session.harness import fences, merge, syntax

    note = ""
    if fences.applies(shown) and (bare := fences.unfenced(content)):
        content, note = bare, " (the Markdown fence around the content was left out)"
    if inner := syntax.unquoted(shown, content):
        return inner, note + " (without the double quotes around the content)"
    if fixed := merge.quoted_docstring(shown, content):
        return fixed, note + " (its first paragraph, prose, put in triple quotes: the docstring)"
    return content, note


def _same_code(shown: str, old: str, content: str) -> str | None:
    """Why a write of Python is no change: the same code and comments, blank lines and
    spacing aside. Not a success: the 1.5B, asked to fix calc.py, sent test_calc.py back as
    it was, less a blank line, and took that for its change."""
    from memento.session.harness import syntax

    if not shown.endswith((".py", ".pyi")) or len(old) > syntax.MAX_GUARDED_CHARS:
        return None
    try:
        same = ast.dump(ast.parse(old)) == ast.dump(ast.parse(content))
    except (SyntaxError, ValueError):
        return None
    if same and _comments(old) == _comments(content):
        return (
            f"{shown} has this code already: the write changes only blank lines or spacing. "
            "Make the change the request asks for (edit the lines to change)."
        )
    return None


def _comments(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip().startswith("#")]
