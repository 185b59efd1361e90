"""What the Graph tab shows: the compiled graph as Mermaid, and the last turn's trace.

The trace is the ``Answer`` event's ``trace``: one entry per node run, model call, tool
call, guard decision (a guard edge that fired names itself and the node it led to) and
provider failure (``trace_markdown``). Every cell is plain text
(``plain``: no image, link or HTML tag from a model, tool or page ever renders).
``duration_text`` is the one format of every duration the app shows. Pure text
functions; docs/app.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

NO_TRACE = "_No turn yet: send a message in the Chat tab and its path shows up here._"
MAX_CELL_CHARS = 300
MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # all ASCII punctuation


def duration_text(ms: float) -> str:
    """A duration for people, in one format: seconds to two significant digits
    ("0.0012 s", "0.04 s", "2.1 s"), whole seconds from 10 s, "<0.001 s" below that."""
    seconds = max(float(ms), 0.0) / 1000
    if seconds >= 10:
        return f"{seconds:.0f} s"
    if seconds < 0.001:
        return "0 s" if seconds == 0 else "<0.001 s"
    decimals = max(1 - math.floor(math.log10(seconds)), 0)
    return f"{round(seconds, decimals):.{decimals}f}".rstrip("0").rstrip(".") + " s"


def mermaid_markdown(mermaid_text: str) -> str:
    """A Markdown block that gr.Markdown renders as a diagram (mermaid.js is bundled)."""
    return f"```mermaid\n{mermaid_text.strip()}\n```"


def _node_of(entry: Mapping[str, Any]) -> str | None:
    kind = entry.get("kind")
    if kind == "node":
        return str(entry.get("name"))
    if kind in ("model", "error"):
        return "call_model"
    if kind == "tool":
        return "execute_tool"
    if kind == "guard" and (entry.get("detail") or {}).get("node"):
        return str(entry["detail"]["node"])  # a guard edge fired: the node it led to
    return None


def path(trace: Iterable[Mapping[str, Any]]) -> list[str]:
    """The nodes visited in order (a run of tool entries is one execute_tool visit)."""
    nodes: list[str] = []
    for entry in trace:
        node = _node_of(entry)
        if node is None or (node == "execute_tool" and nodes and nodes[-1] == node):
            continue
        nodes.append(node)
    return nodes


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def describe(entry: Mapping[str, Any]) -> str:
    """One line saying what a trace entry did."""
    detail: Mapping[str, Any] = entry.get("detail") or {}
    kind = entry.get("kind")
    if kind == "model":
        calls = ", ".join(
            f"{c['name']}({_compact(c.get('args') or {})})" for c in detail.get("calls", [])
        )
        text = f"model {detail.get('model')} ({detail.get('model_role', 'chat')})"
        if calls and detail.get("dropped"):  # tools were off: the reply is the answer
            return f"{text}; dropped {calls} (tools off); replied: {detail.get('text', '')}"
        text += f"; calls {calls}" if calls else f"; replied: {detail.get('text', '')}"
        return text
    if kind == "tool":
        status = "ok" if detail.get("ok") else "error"
        return f"args {_compact(detail.get('args') or {})} → {status}: {detail.get('result', '')}"
    if kind == "node" and entry.get("name") == "execute_tool":
        loop, ran = detail.get("loop"), detail.get("ran")
        return f"tool loop {loop}: {ran} of {detail.get('calls')} calls ran"
    if kind == "node":
        tools = ", ".join(detail.get("tools") or []) or "none"
        return f"{detail.get('messages', 0)} messages in context; tools offered: {tools}"
    if kind == "error":
        return f"model {detail.get('model')} failed: {detail.get('error')}"
    if kind == "guard" and detail.get("edge"):
        edge, reason = detail["edge"], detail.get("reason")
        return f"edge {entry.get('name')} fired ({edge}); tools off: {reason}"
    return _compact(dict(detail))


def plain(text: str) -> str:
    """``text`` as Markdown that shows exactly ``text``: every ASCII punctuation escaped."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", text)


def _cell(text: str) -> str:
    line = " ".join(str(text).split())
    return plain(line if len(line) <= MAX_CELL_CHARS else f"{line[: MAX_CELL_CHARS - 1]}…")


def trace_markdown(trace: Iterable[Mapping[str, Any]]) -> str:
    """The last turn's path and a table of its steps (kind, name, time, what happened)."""
    entries = list(trace)
    if not entries:
        return NO_TRACE
    total = sum(float(e.get("ms") or 0.0) for e in entries)
    lines = [
        f"**Path:** {' → '.join(path(entries))}",
        "",
        f"**Time in nodes:** {duration_text(total)}",
        "",
        "| # | kind | name | time | what happened |",
        "|---|---|---|---|---|",
    ]
    for number, entry in enumerate(entries, start=1):
        ms = entry.get("ms")
        timing = duration_text(float(ms)) if ms is not None else ""
        lines.append(
            f"| {number} | {entry.get('kind', '')} | {_cell(str(entry.get('name', '')))} "
            f"| {timing} | {_cell(describe(entry))} |"
        )
    return "\n".join(lines)
