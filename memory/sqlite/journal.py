"""The journal of memory_sql edits: each value an UPDATE changed, with what it replaced.

memory_sql never lets the model's statement write: memory.sqlite.sql_guard works out the
changes on a read-only connection, then hands them here as a batch of by-id ``Edit``s,
applied in one short write transaction together with their journal entries. Both
applying and undoing write a value only where the row still holds the value the edit
expects, so neither ever overwrites a change made in between: the whole batch is
refused instead, naming the rows that moved on.

``undo_last_edit`` puts back the newest batch not undone yet; calling it again walks
further back. The journal keeps the last ``KEPT_BATCHES`` batches, and a row's entries
are deleted with the row (triggers of migration 2), so deleted text does not live on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memory.errors import EditConflict
from memory.rules.sql_policy import EDIT_CONFLICT, HIDDEN_ROLE, KEPT_BATCHES, undo_conflict
from memory.sqlite.store import SqliteStore
from memory.types import Edit, EditBatch

# Set one editable column from the value it is expected to hold to another. The values
# are compared as bytes, so a value that is not valid text (a BLOB, or bad UTF-8 left by
# an older version) can still be replaced. memory_tool messages are never written.
_SET_IF_UNCHANGED: dict[str, str] = {
    "messages": """UPDATE main.messages SET content = :to
                   WHERE id = :id AND CAST(content AS BLOB) IS CAST(:was AS BLOB)
                     AND role != :hidden""",
    "memories": """UPDATE main.memories SET value = :to
                   WHERE id = :id AND CAST(value AS BLOB) IS CAST(:was AS BLOB)""",
    "sessions": """UPDATE main.sessions SET title = :to
                   WHERE id = :id AND CAST(title AS BLOB) IS CAST(:was AS BLOB)""",
}


def _write_all(conn: sqlite3.Connection, edits: Sequence[Edit], *, undo: bool) -> list[str]:
    """Write every edit (or its reverse) where the row is as expected; the labels of the
    rows that were not."""
    moved = []
    for edit in edits:
        was, to = (edit.new, edit.old) if undo else (edit.old, edit.new)
        cursor = conn.execute(
            _SET_IF_UNCHANGED[edit.table],
            {"to": to, "id": edit.row_id, "was": was, "hidden": HIDDEN_ROLE},
        )
        if cursor.rowcount != 1:
            moved.append(edit.label)
    return moved


def apply_edits(conn: sqlite3.Connection, edits: Sequence[Edit], batch: str, now: str) -> None:
    """Inside the caller's write transaction: write the edits and journal them, or raise
    EditConflict (the caller rolls back) when a row changed since the edits were read."""
    moved = _write_all(conn, edits, undo=False)
    if moved:
        raise EditConflict(
            EDIT_CONFLICT.format(rows=", ".join(moved), when="the UPDATE read them", done="changed")
        )
    conn.executemany(
        """INSERT INTO sql_edits (batch, table_name, row_id, column_name, old_value,
                                  new_value, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        [(batch, e.table, e.row_id, e.column, e.old, e.new, now) for e in edits],
    )
    conn.execute(
        """DELETE FROM sql_edits WHERE batch NOT IN (
               SELECT batch FROM sql_edits GROUP BY batch ORDER BY MAX(id) DESC LIMIT ?)""",
        (KEPT_BATCHES,),
    )


def last_batch(conn: sqlite3.Connection) -> EditBatch | None:
    """The newest edit batch not undone yet, or None."""
    newest = conn.execute(
        "SELECT batch FROM sql_edits WHERE undone_at IS NULL ORDER BY id DESC LIMIT 1"
    ).fetchone()
    if newest is None:
        return None
    rows = conn.execute(
        """SELECT table_name, row_id, column_name, old_value, new_value, created_at
           FROM sql_edits WHERE batch = ? ORDER BY id""",
        (newest[0],),
    ).fetchall()
    edits = tuple(Edit(row[0], row[1], row[2], row[3], row[4]) for row in rows)
    return EditBatch(newest[0], rows[0][5], edits)


def undo_last_edit(store: SqliteStore) -> EditBatch | None:
    """Put back the values the newest not-undone batch replaced; the batch, or None when
    there is nothing to undo. EditConflict (nothing restored) when any of its rows
    changed since."""
    with store.transaction() as conn:
        batch = last_batch(conn)
        if batch is None:
            return None
        moved = _write_all(conn, batch.edits, undo=True)
        if moved:
            raise undo_conflict(moved, batch.created_at)
        conn.execute(
            "UPDATE sql_edits SET undone_at = ? WHERE batch = ?", (store.now(), batch.batch)
        )
    return batch
