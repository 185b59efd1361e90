"""A person's data in every table of the store, each piece carrying a marker word, for
the tests of export and delete: what goes out (export) or must leave no trace (delete)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy
import psycopg
from psycopg import sql

from memory import AsyncStore, ImportedChat, ImportedMessage, Message
from tests.conftest import FIXED_NOW

VECTOR_MODEL = "test-embedder"


async def _summary(marker: str, messages: list[Message]) -> str:
    return f"{marker} talked about {len(messages)} things"


async def fill(store: AsyncStore, marker: str, *, image: bool = True) -> str:
    """Put ``marker`` in every kind of row the person can have (and an image of theirs);
    the id of their chat with the most in it."""
    session = await store.create_session(f"Plans of {marker}")
    for turn in range(6):
        await store.add_message(session.id, "user", f"I am {marker}, turn {turn}: I love rowing.")
        await store.add_message(session.id, "assistant", f"Noted, {marker}: rowing, turn {turn}.")
    await store.add_message(
        session.id,
        "web_tool",
        f"TOOL RESULT {marker}",
        tool_name="web_search",
        meta={"result": {"marker": marker}},
    )
    if image:
        (store.media_dir / f"{marker}.png").write_bytes(f"PNG {marker}".encode())
        await store.add_message(
            session.id, "user", f"A photo, {marker}", image_path=f"{marker}.png"
        )
    await store.set_style_note(session.id, f"short answers for {marker}")
    messages = (
        ImportedMessage("user", f"Imported words of {marker}", FIXED_NOW - timedelta(days=9)),
        ImportedMessage("assistant", f"Imported answer to {marker}", FIXED_NOW - timedelta(days=9)),
    )
    await store.import_chat(
        ImportedChat("chatgpt", f"conv-{marker}", f"Imported {marker}", FIXED_NOW, messages)
    )
    await store.create_memory("identity", "name", f"{marker} Rowe")
    await store.create_memory("focus", "sport", f"rowing with {marker}")
    await store.refresh_segments(
        session.id, lambda said: _summary(marker, said), force=True, tz="UTC"
    )
    rows = await store.unembedded(VECTOR_MODEL, 1000)
    vectors = numpy.random.default_rng(0).standard_normal((len(rows), 8)).astype(numpy.float32)
    vectors /= numpy.linalg.norm(vectors, axis=1, keepdims=True)
    await store.add_vectors(VECTOR_MODEL, list(zip([i for i, _ in rows], vectors, strict=True)))
    edited = await store.run_sql(
        f"UPDATE memories SET value = '{marker} Rowing-Rowe' WHERE key = 'name'", now=FIXED_NOW
    )
    assert "error" not in edited, edited
    await store.set_profile({"persona": "assistant", "identity": f"I help {marker}."})
    first = (await store.messages(session.id))[0]
    turn_id = await store.begin_turn(session.id, first.id, f"process-of-{marker}")
    await store.save_partial(turn_id, f"half an answer for {marker}")
    return session.id


def files_holding(folder: Path, marker: str) -> list[Path]:
    """Every file under ``folder`` whose bytes hold ``marker`` in any case (full-text
    indexes keep words in lower case)."""
    needle = marker.lower().encode()
    return [
        path
        for path in sorted(folder.rglob("*"))
        if path.is_file() and needle in path.read_bytes().lower()
    ]


def rows_holding(admin_url: str, marker: str, person: str | None = None) -> dict[str, int]:
    """Every table of a Postgres database (read as the superuser, past row security) with
    rows that hold ``marker`` in any column, in any case, or belong to ``person``: how many."""
    found: dict[str, int] = {}
    with psycopg.connect(admin_url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_name, bool_or(column_name = 'person') FROM information_schema.columns "
            "WHERE table_schema = 'public' AND table_name IN (SELECT table_name FROM "
            "information_schema.tables WHERE table_type = 'BASE TABLE') GROUP BY table_name"
        ).fetchall()
        for table, has_person in tables:
            where = sql.SQL("t::text ILIKE %s") + (
                sql.SQL(" OR t.person = %s") if has_person else sql.SQL("")
            )
            query = sql.SQL("SELECT COUNT(*) FROM {} t WHERE ").format(sql.Identifier(table))
            params = [f"%{marker}%"] + ([person] if has_person else [])
            row = conn.execute(query + where, params).fetchone()
            if row and row[0]:
                found[table] = row[0]
    return found
