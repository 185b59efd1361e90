"""Import an export into a person's store: the whole file is read and checked first, so
a file that turns out malformed or unsafe halfway adds nothing; then each conversation
is kept in a transaction of its own (``AsyncStore.import_chat``), and one imported
before (the same app and conversation id) is left as it is.

The parse runs in a worker thread (a conversation at a time), never on the event loop.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.imports.common import Parsed
from app.imports.companion import SOURCE as COMPANION_SOURCE
from app.imports.reading import COMPANION, companion_memories, conversations
from memory import AsyncStore, InvalidMemory, Memory

_DONE = None


@dataclass
class Report:
    """What an import did: the export's app, the chats and messages that went in, the
    chats already there, the new sessions, and what was left out and why."""

    source: str = ""
    conversations: int = 0
    chats: int = 0
    messages: int = 0
    already: int = 0
    memories: int = 0  # from Companion's own export
    sessions: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    def lines(self) -> list[str]:
        """The report as the terminal shows it."""
        said = [
            f"Imported {self.chats:,} chats with {self.messages:,} messages "
            f"from {self.source or 'the file'} ({self.conversations:,} conversations in it)."
        ]
        if self.already:
            said.append(f"{self.already:,} chats were imported before: left as they were.")
        if self.source == COMPANION.name:
            said.append(f"Imported {self.memories:,} memories.")
        said += [f"skipped {count:,}: {why}" for why, count in sorted(self.skipped.items())]
        return said


def _check(path: Path) -> tuple[str, int, list[Memory]]:
    """Read the whole export (BadExport on the first problem): its app, how many
    conversations it has, and its memories (Companion's own export has them)."""
    source, count = "", 0
    for found, _ in conversations(path):
        source, count = found.name, count + 1
    return source, count, companion_memories(path) if source == COMPANION.name else []


async def _remember(store: AsyncStore, report: Report, memories: list[Memory]) -> None:
    """Keep each memory of the export that is not here yet, and say so in ``report``."""
    for memory in memories:
        try:
            kept = await store.import_memory(memory)
        except InvalidMemory:
            report.skipped["invalid memory"] += 1
            continue
        if kept:
            report.memories += 1
        else:
            report.skipped["memory already here"] += 1


async def _each(path: Path) -> AsyncIterator[Parsed]:
    """``conversations(path)``, each one parsed in a worker thread."""
    stream = conversations(path)
    try:
        while (pair := await asyncio.to_thread(next, stream, _DONE)) is not _DONE:
            yield pair[1]
    finally:
        stream.close()


async def _keep(store: AsyncStore, report: Report, parsed: Parsed) -> None:
    """Keep one parsed conversation as a new chat, and say so in ``report``."""
    if not parsed.chat.messages:
        report.skipped["conversation with nothing to keep"] += 1
        return
    if parsed.chat.source == COMPANION_SOURCE and await store.get_session(parsed.chat.source_id):
        report.already += 1  # Companion's export, read back where it came from
        return
    session = await store.import_chat(parsed.chat)
    if session is None:
        report.already += 1
        return
    report.chats += 1
    report.messages += len(parsed.chat.messages)
    report.sessions.append(session.id)
    report.skipped.update(parsed.skipped)


async def import_export(
    store: AsyncStore, path: Path, progress: Callable[[int, int], None] | None = None
) -> Report:
    """Import the export at ``path`` into ``store``: checked whole first (BadExport, and
    nothing is added), then a transaction per chat; ``progress(done, total)`` after each."""
    report = Report()
    report.source, report.conversations, memories = await asyncio.to_thread(_check, path)
    done = 0
    async for parsed in _each(path):
        await _keep(store, report, parsed)
        done += 1
        if progress is not None:
            progress(done, report.conversations)
    await _remember(store, report, memories)
    return report
