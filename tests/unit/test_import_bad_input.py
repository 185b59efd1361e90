"""What ``companion import`` refuses, with one line and nothing added: malformed JSON, an
unknown format, a zip that is not an export, an unsafe member path, a zip bomb, a tree
with a cycle (even after good conversations); and a large file is streamed."""

from __future__ import annotations

import json
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest

from app.imports import BadExport, import_export
from app.imports.reading import MAX_RATIO, conversations
from memory.sqlite.async_store import AsyncSqliteStore
from tests.support.exports import CHATGPT, CLAUDE


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def zipped(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def cyclic() -> dict[str, Any]:
    """A ChatGPT conversation whose current node's parents loop (a -> b -> a)."""
    said = {"content_type": "text", "parts": ["hello"]}
    message = {"author": {"role": "user"}, "create_time": 1714555800.0, "content": said}
    return {
        "id": "loop",
        "title": "Loop",
        "create_time": 1714555800.0,
        "current_node": "a",
        "mapping": {
            "a": {"id": "a", "message": message, "parent": "b", "children": []},
            "b": {"id": "b", "message": message, "parent": "a", "children": ["a"]},
        },
    }


def bad_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    good = json.loads(CHATGPT.read_text(encoding="utf-8"))
    return {
        "malformed": (tmp / "m.json", "malformed JSON"),
        "object": (write(tmp / "o.json", {"conversations": []}), "not a JSON list"),
        "unknown": (write(tmp / "u.json", [{"messages": []}]), "unknown format"),
        "mixed": (write(tmp / "x.json", [*good, {"uuid": "c"}]), "has another shape"),
        "cycle": (write(tmp / "c.json", [*good, cyclic()]), r"loop \(Loop\): its message tree"),
        "no export": (zipped(tmp / "n.zip", {"photo.jpg": b"jpeg"}), "holds no conversations"),
        "traversal": (
            zipped(tmp / "t.zip", {"conversations.json": b"[]", "../../x": b"x"}),
            "unsafe path: '../../x'",
        ),
        "bomb": (
            zipped(tmp / "b.zip", {"conversations.json": b"[" + b" " * 5_000_000 + b"]"}),
            f"more than {MAX_RATIO} times",
        ),
    }


@pytest.mark.parametrize(
    "case", ["malformed", "object", "unknown", "mixed", "cycle", "no export", "traversal", "bomb"]
)
async def test_a_bad_file_is_refused_with_one_line_and_nothing_is_added(
    case: str, tmp_path: Path, async_store: AsyncSqliteStore
) -> None:
    (tmp_path / "m.json").write_text(CHATGPT.read_text(encoding="utf-8")[:-200], encoding="utf-8")
    path, said = bad_files(tmp_path)[case]
    with pytest.raises(BadExport, match=said) as refused:
        await import_export(async_store, path)
    assert "\n" not in str(refused.value)
    assert await async_store.list_sessions() == []


async def test_the_export_zip_is_read_without_unpacking(
    tmp_path: Path, async_store: AsyncSqliteStore
) -> None:
    data = CLAUDE.read_bytes()
    export = zipped(tmp_path / "data-2024.zip", {"data-2024/conversations.json": data})
    report = await import_export(async_store, export)
    assert (report.source, report.chats, report.messages) == ("Claude", 2, 6)
    assert not (tmp_path / "data-2024").exists()


def test_a_large_export_is_streamed_a_conversation_at_a_time(tmp_path: Path) -> None:
    one = json.loads(CHATGPT.read_text(encoding="utf-8"))[0]
    size = len(json.dumps(one))
    big = tmp_path / "big.json"
    with big.open("w", encoding="utf-8") as out:
        out.write("[")
        for number in range(1_000):
            copy = {**one, "conversation_id": f"c{number}"}
            out.write(("," if number else "") + json.dumps(copy))
        out.write("]")
    tracemalloc.start()
    try:
        assert sum(1 for _ in conversations(big)) == 1_000
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert big.stat().st_size > 1_000 * size * 0.9
    assert peak < big.stat().st_size / 10  # a conversation and the parser's buffer
