"""Context files stay inside: rule files, AGENTS.md/CLAUDE.md, WATCHDOG.md, the memory notes
and the workspace config file are read only when they resolve (through symlinks) inside the
workspace root or the user config dir. The file tools refuse such paths already
(`tools.workspace.resolve_in_workspace`); this is the same line for the files Memento reads
on its own, so a repository cannot send `~/.ssh/id_rsa` to the model as "AGENTS.md".

One check, `Confinement.refusal`, used wherever those files are discovered; callers report the
reason as a diagnostic or a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memento.config import user_config_dir


@dataclass(frozen=True)
class Confinement:
    roots: tuple[Path, ...]
    """Resolved directories a context file must resolve into."""

    @classmethod
    def of(cls, *roots: Path | None) -> Confinement:
        resolved: list[Path] = []
        for root in roots:
            if root is None:
                continue
            try:
                resolved.append(root.resolve())
            except (OSError, RuntimeError):
                continue
        return cls(tuple(dict.fromkeys(resolved)))

    def refusal(self, path: Path) -> str | None:
        """Why `path` is not read (it resolves outside every root), or None when it may be."""
        try:
            real = path.resolve()
        except (OSError, RuntimeError) as exc:
            return f"{path} is not read: it cannot be resolved ({exc})"
        if any(real.is_relative_to(root) for root in self.roots):
            return None
        inside = " or ".join(str(root) for root in self.roots) or "any allowed folder"
        how = " (through a symlink)" if real != path.absolute() else ""
        return f"{path} is not read: it resolves{how} to {real}, outside {inside}"

    def allows(self, path: Path) -> bool:
        return self.refusal(path) is None


def context_confinement(root: Path, *extra: Path | None) -> Confinement:
    """The workspace root and the user config dir (and `extra`, e.g. a custom user rules dir)."""
    return Confinement.of(root, user_config_dir(), *extra)
