"""Rated answers as eval cases: ``companion eval export-feedback``.

Each answer the person rated (👍/👎 under it in the chat, ``AsyncStore.feedback``)
becomes one case in the harness's own format (``evals.cases.Case``, one JSON line), so
real use feeds the scenario suite:

- the world: the time it was asked (the case's "now"), the person's time zone and saved
  location, and the chat before it (its user and assistant messages, at most
  ``MAX_HISTORY``) as the seeded history;
- the message: what the person asked;
- the tools: for a 👍, the tools the turn ran (from its kept trace, else its stored tool
  results), in order, and no tool at all when it ran none; for a 👎, the tools its
  comment names (``named_tools``): one named where the comment says it should not have
  been used ("no", "not", "n't", "without", "instead of" before it in the same clause)
  is forbidden, any other named one is expected; the tools the turn ran and the comment
  does not name may run;
- the facts: phrases the comment puts in quotes, and for a 👍 whose turn ran no tool
  (its facts came from the model, not from the outside world the fixtures replace) the
  answer's key words (``key_words``: numbers, and capitalised words not at the start
  of a sentence and not in the question).

A 👎 whose comment names no tool and quotes nothing says nothing a case could check: it
is left out, and the export says so. Tools the harness's registry does not know (an MCP
server's) are left out of a case. The file is written whole each time (``DEFAULT_OUT``
is the ``feedback`` suite: ``companion eval --suite feedback`` runs it). docs/evals.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from config.settings import Settings
from evals.cases import DATASETS, Case
from memory import AsyncStore, Feedback, Message, parse_time
from prompts.templates import language_of

SUITE = "feedback"
DEFAULT_OUT = DATASETS / f"{SUITE}.jsonl"
MAX_HISTORY = 24  # messages of the chat before the rated turn, seeded as its history
MAX_FACTS = 3  # key words taken from a 👍 answer
QUOTED = re.compile(r'"([^"\n]{1,120})"|“([^”\n]{1,120})”')
CLAUSE = re.compile(r"[.,;!?\n]|\bbut\b", re.IGNORECASE)
NEGATION = re.compile(r"\b(?:no|not|never|without|instead\s+of)\b|n't\b", re.IGNORECASE)
WORD = re.compile(r"\d+(?:[.,]\d+)*|[\w'’-]+")
NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
SENTENCE_END = re.compile(r"[.!?:\n]\s*$")


@dataclass
class Exported:
    """What an export wrote: the case lines, and why each rating left out was."""

    cases: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _pattern(tool: str, command: str | None) -> re.Pattern[str]:
    """A tool named in words: its name, with spaces for underscores, or its command."""
    names = {tool, tool.replace("_", " ")} | ({f"/{command}"} if command else set())
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w/])(?:{alternatives})(?!\w)", re.IGNORECASE)


def named_tools(comment: str, tools: Mapping[str, str | None]) -> list[tuple[str, bool]]:
    """The tools (``name -> command``) a comment names, in the order named, each with
    whether the comment says it should not have been used (a negation before it in the
    same clause)."""
    found: list[tuple[int, str, bool]] = []
    for name, command in tools.items():
        for match in _pattern(name, command).finditer(comment):
            starts = [m.end() for m in CLAUSE.finditer(comment, 0, match.start())]
            clause = comment[starts[-1] if starts else 0 : match.start()]
            found.append((match.start(), name, bool(NEGATION.search(clause))))
            break
    return [(name, negated) for _, name, negated in sorted(found)]


def quoted(comment: str) -> list[str]:
    """The phrases a comment puts in quotes ("…" or “…”)."""
    return [" ".join((a or b).split()) for a, b in QUOTED.findall(comment) if (a or b).strip()]


def key_words(answer: str, asked: str, limit: int = MAX_FACTS) -> list[str]:
    """An answer's key words: its numbers, and its capitalised words that do not start a
    sentence, leaving out those in the question; the first ``limit``, each once."""
    question = {w.casefold() for w in WORD.findall(asked)}
    words: list[str] = []
    for match in WORD.finditer(answer):
        word = match.group().strip("'’-")
        starts_sentence = not answer[: match.start()].strip() or bool(
            SENTENCE_END.search(answer[: match.start()])
        )
        number = NUMBER.fullmatch(word) is not None
        proper = word[:1].isupper() and not starts_sentence and len(word) > 1
        if (number or proper) and word.casefold() not in question and word not in words:
            words.append(word)
    return words[:limit]


def ran_tools(trace: Mapping[str, Any] | None, tool_results: Sequence[Message]) -> list[str]:
    """The tools a turn ran, in order: from its kept trace, else its stored results."""
    if trace is not None:
        entries = trace.get("entries") or []
        return [str(e.get("name")) for e in entries if e.get("kind") == "tool"]
    return [m.tool_name for m in tool_results if m.tool_name]


def _stamp(created_at: str) -> str:
    return parse_time(created_at).isoformat().replace("+00:00", "Z")


def expectation(
    rating: Feedback, answer: str, asked: str, ran: list[str], tools: Mapping[str, str | None]
) -> dict[str, Any] | None:
    """What the case expects (``Expectation``'s fields), or None when the rating says
    nothing a case could check."""
    facts = quoted(rating.comment)
    if rating.rating > 0:
        known = [name for name in ran if name in tools]
        expect: dict[str, Any] = {"tools": [{"name": name} for name in known]}
        if not ran:
            expect["forbidden_tools"] = ["*"]
            facts += [word for word in key_words(answer, asked) if word not in facts]
        return {**expect, "answer_contains": facts} if facts else expect
    named = named_tools(rating.comment, tools)
    should = [name for name, negated in named if not negated]
    should_not = [name for name, negated in named if negated]
    if not named and not facts:
        return None
    may = [name for name in dict.fromkeys(ran) if name in tools and name not in should + should_not]
    expect = {"tools": [{"name": name} for name in should], "forbidden_tools": should_not}
    if may:
        expect["optional_tools"] = may
    return {**expect, "answer_contains": facts} if facts else expect


def case_line(
    rating: Feedback,
    chat: Sequence[Message],
    trace: Mapping[str, Any] | None,
    settings: Settings,
    tools: Mapping[str, str | None],
) -> dict[str, Any] | str:
    """The case of one rated answer of ``chat`` (its session's messages), or why there
    is none."""
    where = next((i for i, m in enumerate(chat) if m.id == rating.message_id), None)
    if where is None:
        return f"answer {rating.message_id}: no longer stored"
    before = chat[:where]
    start = next((i for i in range(len(before) - 1, -1, -1) if before[i].role == "user"), None)
    if start is None:
        return f"answer {rating.message_id}: it answers no message"
    asked, answer = before[start], chat[where]
    ran = ran_tools(trace, [m for m in before[start + 1 :] if m.is_tool])
    expect = expectation(rating, answer.content, asked.content, ran, tools)
    if expect is None:
        return (
            f"answer {rating.message_id} (👎): its comment names no tool and quotes no fact, "
            "so there is nothing to check"
        )
    history = [
        {"at": _stamp(m.created_at), "role": m.role, "text": m.content}
        for m in before[:start]
        if m.role in ("user", "assistant") and m.content.strip() and not m.meta.get("intermediate")
    ][-MAX_HISTORY:]
    mark = "👍" if rating.rating > 0 else "👎"
    comment = " ".join(rating.comment.split())
    line: dict[str, Any] = {
        "id": f"fb-{rating.message_id}",
        "language": language_of(asked.content),
        "description": f"From a {mark} on {rating.created_at[:16]}"
        + (f": {comment}" if comment else "")
        + f" (answer was: {' '.join(answer.content.split())[:200]})",
        "now": _stamp(asked.created_at),
        "timezone": settings.timezone,
        "history": history,
        "message": asked.content,
        "expect": expect,
    }
    if settings.latitude or settings.longitude:
        line["location"] = {"lat": settings.latitude, "lon": settings.longitude}
    return line


async def export_feedback(
    store: AsyncStore, settings: Settings, tools: Mapping[str, str | None]
) -> Exported:
    """Every rated answer of the store as a case line (oldest rating first), each checked
    against the case schema; ``tools`` are the harness's (``name -> command``)."""
    exported = Exported()
    chats: dict[str, list[Message]] = {}
    for rating in reversed(await store.feedback()):
        if rating.session_id not in chats:
            chats[rating.session_id] = await store.messages(rating.session_id)
        trace = await store.turn_trace(rating.message_id)
        line = case_line(rating, chats[rating.session_id], trace, settings, tools)
        if isinstance(line, str):
            exported.skipped.append(line)
            continue
        try:
            Case.model_validate({**line, "suite": SUITE})
        except ValueError as exc:
            exported.skipped.append(f"answer {rating.message_id}: not a valid case ({exc})")
            continue
        exported.cases.append(line)
    return exported


def write_cases(cases: Iterable[Mapping[str, Any]], path: Path) -> int:
    """Write the case lines to ``path`` (replacing it); how many were written."""
    lines = [json.dumps(case, ensure_ascii=False) for case in cases]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return len(lines)


def registry_tools() -> dict[str, str | None]:
    """The harness's tools, each with its command (``name -> command``)."""
    from tools.registry import default_registry

    registry = default_registry()
    return {name: spec.command if (spec := registry.get(name)) else None for name in registry.names}


def run_command(out: Path, suite_folder: Path = DATASETS) -> str:
    """The ``companion eval`` line that runs the cases written to ``out``."""
    folder = "" if out.parent.resolve() == suite_folder.resolve() else f" --datasets {out.parent}"
    return f"companion eval --suite {out.stem}{folder}"


async def export_from_cli(out: str | None, factory: Any) -> int:
    """``companion eval export-feedback``: the --user's rated answers as cases in ``out``
    (default ``DEFAULT_OUT``); each rating left out is a line on stderr. Exit 0."""
    import sys

    from memory import release_connections

    try:
        settings = (await factory()).settings
        exported = await export_feedback(factory.store, settings, registry_tools())
    finally:
        await release_connections()
    path = Path(out) if out else DEFAULT_OUT
    count = write_cases(exported.cases, path)
    for reason in exported.skipped:
        print(f"companion: left out {reason}", file=sys.stderr)
    print(f"{count} case(s) from rated answers written to {path}")
    print(f"run them: {run_command(path)}")
    return 0
