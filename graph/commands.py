"""The slash-command protocol: find a command on the first line of a model reply.

Pure functions, no I/O. A command is ``/name args`` alone at the start of the reply's
first non-blank line, where ``name`` is one of the known commands (``Commands``); a
first line naming no command (``/shrug``, ``/Web_Search``) is plain text, and so is a
command anywhere else (another line, after text). One command per reply: after a leading
command, further command lines are dropped, never shown. Multiline commands
(``/memory_sql``) take the following lines too.
"""

from __future__ import annotations

import json
import re
import string
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

COMMAND_LINE = re.compile(r"^/([A-Za-z][\w-]*)(?:[ \t]+(.*))?$")


@dataclass(frozen=True)
class Commands:
    """The commands a reply may start with: their names, and those that take the lines
    after the command line as their text too."""

    names: frozenset[str]
    multiline: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, names: Iterable[str], multiline: Iterable[str] = ()) -> Commands:
        """Commands from plain name lists (the multiline ones count as known too)."""
        extra = frozenset(multiline)
        return cls(frozenset(names) | extra, extra)

    def match(self, line: str) -> re.Match[str] | None:
        """The command-line match of ``line`` when it names a known command, else None."""
        found = COMMAND_LINE.match(line.strip())
        return found if found and found.group(1) in self.names else None


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


def parse_reply(reply: str, commands: Commands) -> ParsedReply:
    """Split a reply into a leading command and the remaining visible text."""
    stripped = reply.lstrip()
    first, _, rest = stripped.partition("\n")
    match = commands.match(first)
    if not match:
        return ParsedReply(None, reply.strip())
    name = match.group(1)
    args = (match.group(2) or "").strip()
    if name in commands.multiline:
        text = f"{args}\n{rest}".strip() if args else rest.strip()
        return ParsedReply(Command(name, text, stripped.strip()), "")
    shown = "".join(_shown_lines(rest, commands, complete=True))
    return ParsedReply(Command(name, args, first.strip()), shown.strip())


def _shown_lines(rest: str, commands: Commands, *, complete: bool) -> Iterable[str]:
    """The lines after a leading command that may be shown: every further command line is
    dropped. While the reply streams (``complete`` False) an unfinished last line that may
    still become a command is held back."""
    lines = rest.splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        if commands.match(line):
            continue
        unfinished = number == len(lines) and not line.endswith("\n") and not complete
        if unfinished and (not line.strip() or line.lstrip().startswith("/")):
            continue
        yield line


def visible_prefix(partial: str, commands: Commands) -> str:
    """What of a streaming reply may be shown yet: hides a command line as it forms, and
    every command line after a leading one. Grows as ``partial`` grows, and ends as
    ``parse_reply``'s text (before its final strip)."""
    stripped = partial.lstrip()
    if not stripped:
        return ""
    if not stripped.startswith("/"):
        return partial
    first, newline, rest = stripped.partition("\n")
    if not newline:
        return ""  # still writing the first line: it may be a command
    match = commands.match(first)
    if not match:
        return partial
    if match.group(1) in commands.multiline:
        return ""  # everything after a multiline command is its text
    return "".join(_shown_lines(rest, commands, complete=False)).lstrip()


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
