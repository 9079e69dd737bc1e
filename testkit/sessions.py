"""Session files written fast, for tests and benchmarks that need many or long sessions.

Lines are pi session format v3 (what `SessionStore` writes), built as strings rather than
through the store so that a 200k-entry file takes about a second."""

from __future__ import annotations

import json
from pathlib import Path

from memento.session.paths import new_session_path, sessions_dir


def write_session(
    path: Path,
    *,
    session_id: str,
    cwd: str,
    turns: int,
    header_timestamp: str = "2025-01-01T00:00:00.000Z",
    text: str = "Please change the parser so that it accepts trailing commas.",
    counted: bool = False,
) -> Path:
    """A session of `turns` prompt/reply pairs (2 × turns entries). Each reply's usage is 10
    input tokens; `counted`: the context as a provider counts it instead (every line so far
    at 3 bytes a token, and 20,000 tokens of system prompt and tools), so the usage is the
    meter's figure rather than the local estimate under it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": header_timestamp, "cwd": cwd}
    lines = [json.dumps(header, separators=(",", ":"))]
    prompt = json.dumps(text)
    answer = json.dumps("Done: the parser now accepts trailing commas in lists and objects.")
    parent = "null"
    size = 0
    for turn in range(turns):
        user_id, reply_id = f"u{turn:07x}", f"a{turn:07x}"
        stamp = f"2025-01-01T00:{(turn // 60) % 60:02d}:{turn % 60:02d}.000Z"
        lines.append(
            f'{{"type":"message","id":"{user_id}","parentId":{parent},"timestamp":"{stamp}",'
            f'"message":{{"role":"user","content":{prompt},"timestamp":{turn}}}}}'
        )
        size += len(lines[-1])
        tokens = 20_000 + size // 3 if counted else 10
        lines.append(
            f'{{"type":"message","id":"{reply_id}","parentId":"{user_id}","timestamp":"{stamp}",'
            f'"message":{{"role":"assistant","content":[{{"type":"text","text":{answer}}}],'
            f'"api":"openai-completions","provider":"openai","model":"m","usage":{{"input":{tokens},"output":5,'
            f'"cacheRead":0,"cacheWrite":0,"totalTokens":{tokens + 5},"cost":{{"input":0,"output":0,"cacheRead":0,'
            f'"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":{turn}}}}}'
        )
        size += len(lines[-1])
        parent = f'"{reply_id}"'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def workspace_session(
    data_dir: Path, workspace: Path, session_id: str, turns: int, *, counted: bool = False, **kwargs: str
) -> Path:
    """`write_session` where the server looks for the workspace's sessions."""
    path = new_session_path(sessions_dir(data_dir, workspace), session_id)
    return write_session(
        path, session_id=session_id, cwd=str(workspace), turns=turns, counted=counted, **kwargs
    )
