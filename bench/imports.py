"""How long ``companion import`` takes, and how much memory it needs, on big exports.

Two ChatGPT exports (a ``conversations.json`` in ChatGPT's shape: a tree per
conversation, each message a node) are written, deterministic and streamed to disk:
``--chats`` conversations holding ``--messages`` messages in all (the issue's 1,000 and
50,000), and one of about ``--megabytes`` (200) made of longer messages. Each is then
imported by the real command, ``python -m app.cli import FILE``, into a new SQLite home
(embeddings off: the app makes vectors in the background), exactly as a person runs it:
the whole file checked first, a transaction per chat, then every new chat's segments
cut. The table gives the wall time from start to exit and the command's peak resident
memory (the kernel's ``ru_maxrss`` of the child, read with ``os.wait4``).

    python -m bench.imports                       # 1,000 chats / 50,000 messages; 200 MB
    python -m bench.imports --chats 5 --messages 40 --megabytes 1   # the smoke test's size
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench import quiet_environment

quiet_environment()

VOCABULARY = (
    "the a to and of I you my it is was for on in with that this we at be have so but "
    "bread starter oven flour water salt trip train Lisbon tram coffee garden tomato "
    "marathon run knee week plan dog walk park book chapter piano lesson sister dinner "
    "recipe weekend museum ticket rain bike work meeting project deadline python code"
)
WORDS = VOCABULARY.split()
START = 1_700_000_000  # the first conversation's epoch second (November 2023)
LONG_WORDS = 200  # words in a message of the big file (about 1.2 kB)


@dataclass(frozen=True)
class Export:
    """A generated export: where, its size in bytes, its conversations and messages."""

    path: Path
    size: int
    chats: int
    messages: int


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def conversation(number: int, messages: int, words: int, rng: random.Random) -> dict[str, Any]:
    """One conversation in ChatGPT's export shape: a root, then ``messages`` alternating
    user and assistant nodes, one after the other, the last one current."""
    when = START + number * 3600
    root = f"root-{number}"
    mapping: dict[str, Any] = {root: {"id": root, "message": None, "parent": None}}
    parent = root
    for turn in range(messages):
        node = f"{number}-{turn}"
        mapping[parent]["children"] = [node]
        role = "user" if turn % 2 == 0 else "assistant"
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": {
                "id": node,
                "author": {"role": role, "name": None, "metadata": {}},
                "create_time": when + turn * 20.5,
                "content": {"content_type": "text", "parts": [_text(rng, words)]},
                "status": "finished_successfully",
                "metadata": {},
                "recipient": "all",
            },
        }
        parent = node
    return {
        "title": f"Conversation {number}",
        "create_time": when,
        "update_time": when + messages * 20.5,
        "mapping": mapping,
        "current_node": parent,
        "conversation_id": f"bench-{number:06d}",
        "id": f"bench-{number:06d}",
    }


def _write(out: IO[str], number: int, messages: int, words: int, rng: random.Random) -> None:
    out.write("," if number else "[")
    json.dump(conversation(number, messages, words, rng), out, ensure_ascii=False)


def by_count(path: Path, chats: int, messages: int) -> Export:
    """An export of ``chats`` conversations with ``messages`` messages spread over them
    (short everyday messages, 8-30 words)."""
    rng = random.Random(24)
    base, extra = divmod(messages, chats)
    with path.open("w", encoding="utf-8") as out:
        for number in range(chats):
            _write(out, number, base + (number < extra), rng.randint(8, 30), rng)
        out.write("]")
    return Export(path, path.stat().st_size, chats, messages)


def by_size(path: Path, megabytes: float, per_chat: int = 50) -> Export:
    """An export of at least ``megabytes`` MB: conversations of ``per_chat`` long messages."""
    rng = random.Random(200)
    target, chats = megabytes * 1_000_000, 0
    with path.open("w", encoding="utf-8") as out:
        while chats == 0 or out.tell() < target:
            _write(out, chats, per_chat, LONG_WORDS, rng)
            chats += 1
        out.write("]")
    return Export(path, path.stat().st_size, chats, chats * per_chat)


def run_import(export: Export, home: Path) -> tuple[float, float, str]:
    """``companion import`` of ``export`` into ``home`` as a child process: its wall
    seconds, its peak resident memory in MB, and its report's first line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    env.update(COMPANION_HOME=str(home), COMPANION_EMBEDDING_MODEL="off")
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "import", str(export.path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert child.stdout is not None
    said = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"companion import exited {child.returncode}: {said}")
    return seconds, usage.ru_maxrss / 1024, said.splitlines()[0]


def _rows(label: str, export: Export, figures: tuple[float, float, str]) -> list[str]:
    seconds, peak, said = figures
    return [
        f"| {label}: file | {export.size / 1e6:,.1f} MB, {export.chats:,} chats, "
        f"{export.messages:,} messages |",
        f"| {label}: wall time | {seconds:,.1f} s |",
        f"| {label}: peak memory | {peak:,.0f} MB |",
        f"| {label}: report | {said} |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=1000, help="conversations of the first file")
    parser.add_argument("--messages", type=int, default=50_000, help="their messages in all")
    parser.add_argument("--megabytes", type=float, default=200, help="size of the second file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="companion-bench-") as folder:
        root = Path(folder)
        counted = by_count(root / "counted.json", args.chats, args.messages)
        first = run_import(counted, root / "home-counted")
        counted.path.unlink()
        big = by_size(root / "big.json", args.megabytes)
        second = run_import(big, root / "home-big")
    cores = os.cpu_count()
    print(f"\n`companion import` of a ChatGPT export, SQLite, embeddings off ({cores} cores).\n")
    print("| measure | value |\n|---|---|")
    print("\n".join(_rows("by count", counted, first) + _rows("by size", big, second)))


if __name__ == "__main__":
    main()
