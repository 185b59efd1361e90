"""How much one turn writes to LangGraph's SQLite checkpointer.

The turn: a session whose history holds an uploaded photo (``--image-kb`` of bytes), a
native ``image_analyze`` call, then the vision model's answer — so the vision call's
prompt carries the photo inline as base64. The turn runs through ``graph.runner.run_turn``
on ``graph.builder.checkpointed_graph``; the figure is the sum of the blob lengths in the
saver's database (``checkpoints.checkpoint`` + ``checkpoints.metadata`` +
``writes.value``), and whether the system prompt or the photo's base64 is in any blob.

    python -m bench.checkpoints --image-kb 100
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from bench import quiet_environment

quiet_environment()

from config.settings import Settings  # noqa: E402
from graph.builder import checkpointed_graph  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.runner import run_turn  # noqa: E402
from memory.sqlite.async_store import AsyncSqliteStore  # noqa: E402
from memory.sqlite.store import SqliteStore  # noqa: E402
from tests.support.chat_model import ScriptedChatModel, tool_call  # noqa: E402
from tools.base import ToolContext, ToolSpec  # noqa: E402
from tools.registry import ToolRegistry  # noqa: E402

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"reference": {"type": "string"}}}
SYSTEM_MARK = "Current date and time:"  # in every system prompt (prompts.PROCEDURAL)


async def analyze(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """A stand-in image_analyze: succeeds, so the vision model answers next."""
    return {"analyzed": args.get("reference") or "the photo"}


async def measure(home: Path, image_kb: int) -> dict[str, Any]:
    """Run the turn on a fresh checkpoint database; blob sizes and what they contain."""
    store = SqliteStore.open_home(home)
    photo = store.media_dir / "photo.jpg"
    photo.write_bytes(os.urandom(image_kb * 1024))
    store.add_message("s1", "user", "Look at my cat!", image_path=str(photo))
    store.add_message("s1", "assistant", "What a lovely cat.")
    ctx = Context(
        settings=Settings(
            home=home,
            provider="openai-compatible",
            tool_mode="native",
            chat_model="scripted-chat",
            vision_model="scripted-vision",
        ),
        store=AsyncSqliteStore(store),
        chat_model=ScriptedChatModel(
            script=[tool_call("image_analyze", {"reference": "photo.jpg"})], name_="scripted-chat"
        ),
        vision_model=ScriptedChatModel(script=["It is orange."], name_="scripted-vision"),
        registry=ToolRegistry([ToolSpec("image_analyze", "Look.", SCHEMA, analyze, "image_tool")]),
    )
    database = home / "checkpoints.db"
    async with checkpointed_graph(database) as graph:
        result = await run_turn(ctx, "s1", "What colour is the cat in that photo?", graph=graph)
    store.close()
    assert result.answer == "It is orange.", result.answer
    encoded = base64.b64encode(photo.read_bytes()).decode()[:64].encode()
    with sqlite3.connect(database) as conn:
        checkpoints = conn.execute(
            "SELECT count(*), sum(length(checkpoint)), sum(length(metadata)) FROM checkpoints"
        ).fetchone()
        writes = conn.execute("SELECT count(*), sum(length(value)) FROM writes").fetchone()
        blobs = [row[0] for row in conn.execute("SELECT checkpoint FROM checkpoints")]
        blobs += [row[0] for row in conn.execute("SELECT value FROM writes")]
    return {
        "checkpoints": checkpoints[0],
        "checkpoint_bytes": (checkpoints[1] or 0) + (checkpoints[2] or 0),
        "writes": writes[0],
        "write_bytes": writes[1] or 0,
        "has_prompt": any(SYSTEM_MARK.encode() in bytes(b) for b in blobs),
        "has_image": any(encoded in bytes(b) for b in blobs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image-kb", type=int, default=100, help="size of the photo in history")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="companion-bench-") as folder:
        figures = asyncio.run(measure(Path(folder) / "home", args.image_kb))
    total = figures["checkpoint_bytes"] + figures["write_bytes"]
    print(f"\nOne turn: image_analyze + vision answer, a {args.image_kb} kB photo in history.\n")
    print("| measure | value |\n|---|---:|")
    rows, size = figures["checkpoints"], figures["checkpoint_bytes"]
    print(f"| checkpoints (rows / bytes) | {rows} / {size:,} |")
    print(f"| pending writes (rows / bytes) | {figures['writes']} / {figures['write_bytes']:,} |")
    print(f"| total blob bytes | {total:,} |")
    print(f"| system prompt in a blob | {'yes' if figures['has_prompt'] else 'no'} |")
    print(f"| photo's base64 in a blob | {'yes' if figures['has_image'] else 'no'} |")


if __name__ == "__main__":
    main()
