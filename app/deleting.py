"""Delete all of a person's data (issue 24, item 3): ``companion forget --all``,
``companion user delete NAME`` and the app's "Delete all my data" call ``delete_person``.

What goes: every row of theirs in the store (``AsyncStore.delete_everything``: chats,
messages, memories, segments, vectors, import keys, the memory_sql journal, settings),
with no trace left in the database's files; every file in their media folder; the
LangGraph checkpoints of their home (``companion chat --checkpoints``); and, with
accounts, their login and their own folder (``Accounts.remove``). Asking first is the
caller's: this deletes at once.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from memory import Accounts, AsyncStore

log = logging.getLogger("companion.deleting")

CHECKPOINTS = ("checkpoints.db", "checkpoints.db-wal", "checkpoints.db-shm")


@dataclass(frozen=True)
class Deleted:
    """What ``delete_person`` removed: the rows by table, the files, the login's name."""

    rows: dict[str, int]
    files: int
    login: str | None = None

    def line(self) -> str:
        """What was deleted, as one sentence."""
        said = (
            f"Deleted {self.rows.get('sessions', 0):,} chats, "
            f"{self.rows.get('messages', 0):,} messages, {self.rows.get('memories', 0):,} "
            f"memories, {self.rows.get('segments', 0):,} segments and {self.files:,} files"
        )
        return said + (f", and the login of {self.login}." if self.login else ".")


def _empty(folder: Path) -> int:
    """Delete everything inside ``folder`` (kept, empty); how many files went."""
    if not folder.is_dir():
        return 0
    count = 0
    for entry in list(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            count += sum(1 for item in entry.rglob("*") if not item.is_dir())
            shutil.rmtree(entry)
        else:
            entry.unlink()
            count += 1
    return count


def _remove_files(home: Path) -> int:
    """Delete the person's checkpoints beside their media folder; how many files went."""
    gone = 0
    for name in CHECKPOINTS:
        path = home / name
        if path.exists():
            path.unlink()
            gone += 1
    return gone


async def delete_person(
    store: AsyncStore, *, accounts: Accounts | None = None, name: str | None = None
) -> Deleted:
    """Delete everything of the person whose ``store`` this is and, given ``accounts``
    and their ``name``, their login and own folder (AccountError: no such person; then
    their data is already gone). StoreError when the database fails: the rows go in one
    transaction, and running it again finishes what a failure left."""
    rows = await store.delete_everything()
    media = store.media_dir
    files = await asyncio.to_thread(_empty, media)
    files += await asyncio.to_thread(_remove_files, media.parent)
    # The log names no one: it outlives the person.
    log.info("deleted a person's data: %s rows, %s files", sum(rows.values()), files)
    if accounts is None or name is None:
        return Deleted(rows, files)
    person = await asyncio.to_thread(accounts.remove, name)
    log.info("removed a person's login")
    return Deleted(rows, files, person.name)
