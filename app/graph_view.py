"""What the Graph tab shows: the compiled graph as Mermaid, and any turn's trace.

A trace has one entry per node run, model call, tool call, guard decision (a guard edge
that fired names itself and the node it led to) and provider failure
(``trace_markdown``). A turn's kept trace (``graph.runner.kept_trace``) adds each model
call's prompt as sent and the tokens in and out: ``turn_markdown`` shows it with the
person's rating, the prompts and the tool results in collapsed sections, and
``turn_label`` names the turn in the tab's list. Every text from a model, a tool or a
page is plain text (``plain`` in cells, ``verbatim`` blocks for whole messages: no
image, link or HTML tag of theirs ever renders). ``duration_text`` is the one format of
every duration the app shows. Pure text functions; docs/app.md.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memory import Feedback, Message, parse_time
from memory.rules.temporal import zone_of

NO_TRACE = "_No turn yet: send a message in the Chat tab and its path shows up here._"
NOT_KEPT = "_This turn's trace was not kept._"
MAX_CELL_CHARS = 300
MAX_LABEL_CHARS = 48  # of the message in a turn's name
MAX_RESULT_CHARS = 4_000  # of a tool's result in the Tool results section
MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # all ASCII punctuation
BACKTICK_RUN = re.compile(r"`+")
RATINGS = {1: "👍", -1: "👎"}


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
        tokens = detail.get("tokens")
        if tokens:
            text += f"; tokens {tokens.get('input', 0)} in, {tokens.get('output', 0)} out"
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


def _steps(entries: list[Mapping[str, Any]]) -> list[str]:
    """The path, the time in nodes, and a table of the steps (what, time, what happened):
    four columns whose cells wrap, so a phone shows every one."""
    total = sum(float(e.get("ms") or 0.0) for e in entries)
    lines = [
        f"**Path:** {' → '.join(path(entries))}",
        "",
        f"**Time in nodes:** {duration_text(total)}",
        "",
        "| # | step | time | what happened |",
        "|---|---|---|---|",
    ]
    for number, entry in enumerate(entries, start=1):
        ms = entry.get("ms")
        timing = duration_text(float(ms)) if ms is not None else ""
        step = f"{entry.get('kind', '')} {entry.get('name', '')}"
        lines.append(f"| {number} | {_cell(step)} | {timing} | {_cell(describe(entry))} |")
    return lines


def trace_markdown(trace: Iterable[Mapping[str, Any]]) -> str:
    """A turn's path and a table of its steps (what, time, what happened)."""
    entries = list(trace)
    return "\n".join(_steps(entries)) if entries else NO_TRACE


def verbatim(text: str, info: str = "text") -> str:
    """``text`` as a fenced block that shows it exactly (nothing in it renders): the fence
    is longer than any run of backticks inside, so the text cannot close it."""
    runs = [len(run) for run in BACKTICK_RUN.findall(text)]
    fence = "`" * max([3, *(n + 1 for n in runs)])
    return f"{fence}{info}\n{text}\n{fence}"


def _section(summary: str, body: list[str]) -> list[str]:
    """A collapsed section (``<details>``): ``summary`` is escaped as HTML, ``body`` is
    Markdown (blank lines around it, so it is read as Markdown, not as HTML)."""
    return [f"<details><summary>{html.escape(summary)}</summary>", "", *body, "", "</details>", ""]


def _message_heading(index: int, message: Mapping[str, Any]) -> str:
    """A prompt message's heading: its number and role, the tool it answers, the images
    it carried, the calls it made."""
    extras = []
    if message.get("tool"):
        extras.append(f"result of {message['tool']}")
    if message.get("images"):
        extras.append(f"{message['images']} image(s), not shown")
    extras += [f"calls {c.get('name')}({c.get('args')})" for c in message.get("calls") or []]
    heading = f"**{index}. {plain(str(message.get('role', '?')))}**"
    return f"{heading} ({plain('; '.join(extras))})" if extras else heading


def _prompt_section(number: int, prompt: Mapping[str, Any]) -> list[str]:
    """One model call's prompt: the messages it shares with the call before are named, not
    repeated (``graph.runner.shared_prompts``), then each message of its own."""
    messages: list[Mapping[str, Any]] = prompt.get("messages") or []
    shared = int(prompt.get("shared") or 0)
    tools: list[Mapping[str, Any]] | None = prompt.get("tools")
    summary = (
        f"Model call {number}: {prompt.get('model') or '?'}, {shared + len(messages)} messages"
    )
    if tools is None:
        summary += ", the same tool schemas"
    else:
        summary += f", {len(tools)} tool schemas" if tools else ", no tool schemas"
    body: list[str] = []
    if shared:
        body += [f"_Messages 1 to {shared}: as in model call {number - 1}._", ""]
    for index, message in enumerate(messages, start=shared + 1):
        text = str(message.get("text") or "")
        body += [
            _message_heading(index, message),
            "",
            verbatim(text) if text else "_(no text)_",
            "",
        ]
    if tools:
        names = ", ".join(str((t.get("function") or {}).get("name", "?")) for t in tools)
        body += [f"**Tool schemas offered:** {plain(names)}", ""]
        body.append(verbatim(json.dumps(list(tools), ensure_ascii=False, indent=1), "json"))
    return _section(summary, body)


def _tool_section(message: Message) -> list[str]:
    meta = message.meta
    result = meta.get("result")
    status = "error" if isinstance(result, Mapping) and "error" in result else "ok"
    ms = meta.get("duration_ms")
    timing = f", {duration_text(float(ms))}" if ms is not None else ""
    summary = f"{message.tool_name or 'tool'}{timing}: {status}"
    text = message.content
    if len(text) > MAX_RESULT_CHARS:
        text = f"{text[: MAX_RESULT_CHARS - 1]}…"
    arguments = json.dumps(meta.get("arguments") or {}, ensure_ascii=False, default=str)
    body = ["**Arguments**", "", verbatim(arguments, "json"), "", "**Result**", ""]
    return _section(summary, [*body, verbatim(text)])


def _tokens(kept: Mapping[str, Any]) -> str:
    tokens = kept.get("tokens")
    if not isinstance(tokens, Mapping):
        return "not reported by the provider"
    return f"{tokens.get('input', 0):,} in, {tokens.get('output', 0):,} out"


def rating_line(rating: Feedback | None) -> str:
    """The person's rating of the answer and their comment, as plain text."""
    if rating is None:
        return "**Rating:** not rated"
    line = f"**Rating:** {RATINGS.get(rating.rating, str(rating.rating))}"
    return f"{line} · {plain(' '.join(rating.comment.split()))}" if rating.comment.strip() else line


def turn_markdown(
    kept: Mapping[str, Any] | None,
    asked: str,
    rating: Feedback | None = None,
    tools: Sequence[Message] = (),
) -> str:
    """One turn as the Graph tab shows it: what was asked, the rating, the models and the
    tokens, the steps, then each model call's prompt as sent and each tool's arguments
    and result in collapsed sections. ``tools`` are the turn's stored tool results."""
    if kept is None:
        return NOT_KEPT
    entries: list[Mapping[str, Any]] = list(kept.get("entries") or [])
    models = ", ".join(str(m) for m in kept.get("models") or []) or "none"
    lines = [
        f"**Asked:** {_cell(asked)}",
        "",
        rating_line(rating),
        "",
        f"**Models:** {plain(models)} · **Tokens:** {_tokens(kept)}",
        "",
        *(_steps(entries) if entries else []),
        "",
    ]
    prompts: list[Mapping[str, Any]] = list(kept.get("prompts") or [])
    if prompts:
        lines += ["**Prompts as sent**", ""]
        for number, prompt in enumerate(prompts, start=1):
            lines += _prompt_section(number, prompt)
    if tools:
        lines += ["**Tool results**", ""]
        for message in tools:
            lines += _tool_section(message)
    return "\n".join(lines).rstrip() + "\n"


def turn_label(answered_at: str, asked: str, tz: str, today: datetime) -> str:
    """A turn's name in the Graph tab's list: when it was answered, on the person's clock
    (the time alone today), and the start of what was asked ("14:02 — what's the…")."""
    when = parse_time(answered_at).astimezone(zone_of(tz))
    stamp = (
        f"{when:%H:%M}"
        if when.date() == today.astimezone(zone_of(tz)).date()
        else f"{when:%d %b %H:%M}"
    )
    words = " ".join(asked.split()) or "(no text)"
    short = words if len(words) <= MAX_LABEL_CHARS else f"{words[: MAX_LABEL_CHARS - 1]}…"
    return f"{stamp} — {short}"
