"""The slash-command protocol: find a command on the first line of a model reply.

Pure functions, no I/O. A command is ``/name args`` alone at the start of the reply's
first non-blank line; anywhere else (another line, after text) it is plain text. One
command per reply. Multiline commands (``/memory_sql``) take the following lines too.
"""

from __future__ import annotations

import json
import re
import string
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

COMMAND_LINE = re.compile(r"^/([A-Za-z][\w-]*)(?:[ \t]+(.*))?$")


@dataclass(frozen=True)
class Command:
    """A command found in a reply."""

    name: str
    text: str  # the argument text
    line: str  # the command as written (first line, plus following lines if multiline)


@dataclass(frozen=True)
class ParsedReply:
    """A model reply split into its command (if any) and the text left to show."""

    command: Command | None
    text: str


def parse_reply(reply: str, multiline: Collection[str] = ()) -> ParsedReply:
    """Split a reply into a leading command and the remaining visible text."""
    stripped = reply.lstrip()
    first, _, rest = stripped.partition("\n")
    match = COMMAND_LINE.match(first.rstrip())
    if not match:
        return ParsedReply(None, reply.strip())
    name = match.group(1)
    args = (match.group(2) or "").strip()
    if name in multiline:
        text = f"{args}\n{rest}".strip() if args else rest.strip()
        return ParsedReply(Command(name, text, stripped.strip()), "")
    return ParsedReply(Command(name, args, first.strip()), rest.strip())


def visible_prefix(partial: str) -> str:
    """What of a streaming reply may be shown yet: hides a command line as it forms."""
    stripped = partial.lstrip()
    if not stripped.startswith("/"):
        return partial
    first, newline, rest = stripped.partition("\n")
    if not newline:
        return ""  # still writing the first line: it may be a command
    if COMMAND_LINE.match(first.rstrip()):
        return rest.lstrip()
    return partial


_PUNCTUATION = set(string.punctuation)


def _normal_text(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(
        " " if ch in _PUNCTUATION or unicodedata.category(ch).startswith("P") else ch for ch in text
    )
    return " ".join(text.split())


def normalise(value: Any) -> Any:
    """Arguments in a canonical form: case, whitespace, punctuation and key order folded."""
    if isinstance(value, str):
        return _normal_text(value)
    if isinstance(value, dict):
        return {_normal_text(str(k)): normalise(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def call_signature(name: str, args: Any) -> str:
    """Equal for the same tool with the same or near-same arguments."""
    return f"{name}:{json.dumps(normalise(args), sort_keys=True, ensure_ascii=False)}"
