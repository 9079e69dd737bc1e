"""Which ast-grep (tree-sitter) language a file is in, by its extension: the syntax guard
of the small-model harness and TTSR's AST conditions use the same table."""

from __future__ import annotations

LANGUAGES: dict[str, str] = {
    "ts": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "tsx": "tsx",
    "js": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "jsx": "javascript",
    "py": "python",
    "pyi": "python",
    "rs": "rust",
    "go": "go",
    "java": "java",
    "kt": "kotlin",
    "swift": "swift",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "hpp": "cpp",
    "cs": "csharp",
    "rb": "ruby",
    "php": "php",
    "lua": "lua",
    "scala": "scala",
    "sh": "bash",
    "bash": "bash",
    "css": "css",
    "html": "html",
    "json": "json",
    "yaml": "yaml",
    "yml": "yaml",
}
"""File extension → ast-grep language."""


def language_of(path: str) -> str | None:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    if "." not in base:
        return None
    return LANGUAGES.get(base.rsplit(".", 1)[-1].lower())
