"""Store failure drills: a database locked by another writer, and a process killed mid-turn.

A turn that meets a database locked by another writer waits (busy timeout) and then
succeeds, while the reads of other sessions and of the app, and every other coroutine, go
on. A process killed with SIGKILL in the middle of a turn leaves a consistent database:
SQLite's integrity check and the FTS index agree with the messages, the user's message is
there, every message confirmed before the kill survives, and the session takes a new turn.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from config.settings import Settings
from graph.context import Context
from graph.runner import run_turn
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.db import connect
from tests.conftest import FIXED_NOW
from tests.support.chat_model import ScriptedChatModel
from tools.registry import ToolRegistry

ROOT = Path(__file__).resolve().parents[2]
LOCK_SECONDS = 2.0

# Runs in a child process: one completed turn, then turns that stop in a slow tool
# (``slow``) or, in ``burst`` mode, quick turns in a loop. Every message the store has
# confirmed is printed as "CONFIRMED <id>" before anything else happens.
CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from graph.context import Context, Settings
    from tests.support.chat_model import ScriptedChatModel, tool_call
    from graph.runner import run_turn
    from memory.sqlite.async_store import AsyncSqliteStore
    from tools.base import ToolSpec
    from tools.registry import ToolRegistry

    home, mode = sys.argv[1], sys.argv[2]

    def say(line):
        print(line, flush=True)

    async def hang(args, ctx):
        say("TOOL_STARTED")
        await asyncio.sleep(60)
        return {"never": True}

    def policy(messages, kwargs):
        text = messages[-1].content
        if mode == "slow" and "slow" in str(text):
            return tool_call("hang", {})
        return f"answer to: {text}"

    async def main():
        store = AsyncSqliteStore.open_home(home)
        spec = ToolSpec("hang", "Hangs.", {"type": "object", "properties": {}}, hang,
                        "web_tool", timeout=120)
        ctx = Context(
            settings=Settings(home=home, provider="openai-compatible",
                              tool_mode="native", chat_model="scripted"),
            store=store,
            chat_model=ScriptedChatModel(script=policy),
            registry=ToolRegistry([spec]),
        )
        turn = 0
        while True:
            text = "please go slow" if mode == "slow" and turn == 1 else f"message {turn}"
            result = await run_turn(ctx, "s1", text)
            say(f"CONFIRMED {result.user_message.id}")
            say(f"CONFIRMED {result.answer_message_id}")
            ctx.chat_model.calls.clear()
            turn += 1

    asyncio.run(main())
    """
)


def start_child(home: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(home), mode],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(child: subprocess.Popen[str], marker: str, seconds: float = 30) -> list[str]:
    """The child's stdout lines up to and including ``marker``."""
    lines: list[str] = []
    deadline = time.monotonic() + seconds
    assert child.stdout is not None
    while time.monotonic() < deadline:
        line = child.stdout.readline()
        if not line:
            assert child.stderr is not None
            pytest.fail(f"child exited early: {child.stderr.read()[-2000:]}")
        lines.append(line.strip())
        if marker in line:
            return lines
    pytest.fail(f"child did not print {marker!r} in {seconds} s")


def kill(child: subprocess.Popen[str]) -> list[str]:
    """SIGKILL the child; the lines it had printed but we had not read yet."""
    os.kill(child.pid, signal.SIGKILL)
    rest, _ = child.communicate(timeout=10)
    assert child.returncode == -signal.SIGKILL
    return rest.splitlines()


def confirmed(lines: list[str]) -> set[int]:
    return {int(line.split()[1]) for line in lines if line.startswith("CONFIRMED ")}


def assert_consistent(path: Path) -> sqlite3.Connection:
    """SQLite and FTS5 integrity, every message indexed, no half-written rows."""
    conn = connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    # rank 1: compare the index with the external content table (the messages).
    conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
    for message_id, content in conn.execute("SELECT id, content FROM messages"):
        word = content.split()[-1].strip(".:?!'\"")
        found = conn.execute(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ? AND rowid = ?",
            (f'"{word}"', message_id),
        ).fetchone()[0]
        assert found == 1, f"message {message_id} is missing from the FTS index"
    assert conn.execute("SELECT COUNT(*) FROM messages WHERE content IS NULL").fetchone()[0] == 0
    return conn


def hold_write_lock(path: Path, seconds: float) -> threading.Event:
    """Another connection takes the write lock (BEGIN IMMEDIATE, an insert) now and commits
    after ``seconds`` in a thread; the event is set once it has let go."""
    holder = connect(path)
    holder.isolation_level = None
    holder.execute("BEGIN IMMEDIATE")
    holder.execute(
        "INSERT INTO sessions (id, title, created_at) VALUES ('other', 'x', '2026-11-25 09:00:00')"
    )
    released = threading.Event()

    def release() -> None:
        time.sleep(seconds)
        holder.execute("COMMIT")
        holder.close()
        released.set()

    threading.Thread(target=release, daemon=True).start()
    return released


async def test_a_locked_database_delays_only_the_turn_that_writes(
    make_context, store, async_store
) -> None:
    ctx = make_context(["Still here."])
    asked = store.add_message("s2", "user", "an older chat")
    store.add_message("s2", "assistant", "an older answer")
    gaps: list[float] = []

    async def unrelated() -> None:
        last = time.perf_counter()
        while not released.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    released = hold_write_lock(store.path, LOCK_SECONDS)
    started = time.perf_counter()
    turn = asyncio.create_task(run_turn(ctx, "s1", "are you there?"))
    ticking = asyncio.create_task(unrelated())
    # What the app and another session's turn read meanwhile: a chat's history, the
    # session list, build_context's reads, the profile.
    history = await async_store.messages("s2")
    sessions = await async_store.list_sessions()
    reads = await async_store.read_turn("s2", asked.id, history=25, now=FIXED_NOW)
    await async_store.profile()
    read_seconds = time.perf_counter() - started
    assert not released.is_set(), "the reads must finish while the lock is held"
    result = await turn
    waited = time.perf_counter() - started
    await ticking

    assert read_seconds < 0.5
    assert [m.content for m in history] == ["an older chat", "an older answer"]
    assert [s.id for s in sessions] == ["s2"]
    assert [m.content for m in reads.history] == ["an older chat"]
    assert [m.content for m in reads.turn] == ["an older answer"]
    assert max(gaps) < 0.3, f"the event loop stalled {max(gaps):.2f} s"
    assert waited >= LOCK_SECONDS * 0.9  # the turn that writes waited for the lock
    assert result.answer == "Still here."
    assert [m.role for m in store.messages("s1")] == ["user", "assistant"]
    assert store.get_session("other") is not None  # the other writer's work is kept too


def test_killed_in_the_middle_of_a_turn(tmp_path: Path) -> None:
    home = tmp_path / "home"
    child = start_child(home, "slow")
    lines = read_until(child, "TOOL_STARTED")
    lines += kill(child)
    before = confirmed(lines)
    assert len(before) == 2  # the first turn: its user message and its answer

    conn = assert_consistent(home / "companion.db")
    rows = conn.execute("SELECT id, role, content FROM messages ORDER BY id").fetchall()
    assert before <= {row[0] for row in rows}
    assert [(r[1], r[2]) for r in rows] == [
        ("user", "message 0"),
        ("assistant", "answer to: message 0"),
        ("user", "please go slow"),  # stored before the graph ran: not lost
    ]
    conn.close()

    store = AsyncSqliteStore.open_home(home)
    ctx = Context(
        settings=Settings(home=home, provider="openai-compatible", tool_mode="native"),
        store=store,
        chat_model=ScriptedChatModel(script=["Back, sorry about that."]),
        registry=ToolRegistry(),
    )
    result = asyncio.run(run_turn(ctx, "s1", "hello again"))
    assert result.answer == "Back, sorry about that."
    seen = [m.content for m in ctx.chat_model.calls[0]["messages"][1:]]
    assert seen == ["message 0", "answer to: message 0", "please go slow", "hello again"]
    asyncio.run(store.close())


def test_killed_during_a_burst_of_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    child = start_child(home, "burst")
    lines = read_until(child, "CONFIRMED")
    time.sleep(0.5)  # let it write for a while, then kill it wherever it is
    lines += kill(child)
    before = confirmed(lines)
    assert len(before) > 4

    conn = assert_consistent(home / "companion.db")
    rows = conn.execute("SELECT id, role, content FROM messages ORDER BY id").fetchall()
    assert before <= {row[0] for row in rows}, "a confirmed message was lost"
    roles = [row[1] for row in rows]
    # turns are whole or cut after their user message; never an answer without a question
    assert roles[0] == "user"
    assert all(a != b or a == "user" for a, b in itertools.pairwise(roles))
    conn.close()
