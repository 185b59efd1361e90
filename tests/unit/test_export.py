"""``app.exports.export_person``: one zip laid out as docs/export.md says (the versioned
chat schema, Markdown, memories, segments, images, settings without secrets), written to
a new file only, with nothing left behind when the disk fails."""

from __future__ import annotations

import errno
import json
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.exports import ExportError, ExportRefused, export_person, without_secrets
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tests.memory.backends import ticking
from tests.support.person_data import fill

MESSAGE_FIELDS = [
    "id",
    "role",
    "content",
    "created_at",
    "tool_name",
    "tool_call_id",
    "meta",
    "image_path",
]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[AsyncSqliteStore]:
    opened = AsyncSqliteStore(SqliteStore.open_home(tmp_path / "home", clock=ticking()))
    await fill(opened, "Quokkaberry")
    yield opened
    await opened.close()


async def test_the_zip_holds_every_part_in_the_documented_layout(
    store: AsyncSqliteStore, tmp_path: Path
) -> None:
    out = tmp_path / "export.zip"
    seen: list[tuple[int, int]] = []
    settings = {"persona": "assistant", "api_key": "sk-nope"}
    report = await export_person(
        store, store.media_dir, settings, out, lambda done, total: seen.append((done, total))
    )
    assert report.path == out and seen == [(1, 2), (2, 2)]
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
        manifest = json.loads(archive.read("companion-export.json"))
        chats = sorted(n for n in names if n.startswith("chats/"))
        plans = [name for name in chats if "-plans-of-quokkaberry-" in name]
        chat = json.loads(archive.read(plans[0]))
        markdown = archive.read(plans[1]).decode()
        memories = json.loads(archive.read("memories.json"))
        segments = json.loads(archive.read("segments.json"))
        image = archive.read("images/Quokkaberry.png")
        settings_out = json.loads(archive.read("settings.json"))
    assert manifest["format"] == "companion-export" and manifest["version"] == 1
    assert manifest["counts"] == {"chats": 2, "messages": 16, "memories": 2, "segments": 1}
    # both chats start at the same second here: their order is then by id
    assert sorted(n.rsplit("-", 1)[0][len("chats/00001") :] for n in chats) == [
        "-imported-quokkaberry",
        "-imported-quokkaberry",
        "-plans-of-quokkaberry",
        "-plans-of-quokkaberry",
    ]
    assert (
        sorted(n[: len("chats/00001")] for n in chats) == ["chats/00001"] * 2 + ["chats/00002"] * 2
    )
    assert [n.rsplit(".", 1)[1] for n in plans] == ["json", "md"]
    assert (chat["format"], chat["version"], chat["title"]) == (
        "companion-chat",
        1,
        "Plans of Quokkaberry",
    )
    assert chat["style_note"] == "short answers for Quokkaberry"
    assert list(chat["messages"][0]) == MESSAGE_FIELDS
    tool = next(m for m in chat["messages"] if m["role"] == "web_tool")
    assert tool["tool_name"] == "web_search"
    assert tool["meta"] == {"result": {"marker": "Quokkaberry"}}
    assert markdown.startswith("# Plans of Quokkaberry\n")
    assert "**You** · " in markdown and "**Companion** · " in markdown
    assert "![image](../images/Quokkaberry.png)" in markdown
    assert "> TOOL RESULT Quokkaberry" in markdown
    assert {m["key"] for m in memories} == {"name", "sport"}
    assert segments[0]["summary"].startswith("Quokkaberry talked about")
    assert image == b"PNG Quokkaberry"
    assert settings_out == {"persona": "assistant"}


def test_settings_leave_without_secrets() -> None:
    assert without_secrets(
        {
            "persona": "assistant",
            "latitude": 1.5,
            "api_key": "sk-1",
            "image_api_key": "sk-2",
            "password": "pw",
            "password_hash": "h",
            "token": "t",
            "base_url": "https://ann:pw@models.test/v1",
            "home": Path("/home/ann"),
            "chat_model": None,
        }
    ) == {
        "persona": "assistant",
        "latitude": 1.5,
        "base_url": "https://models.test/v1",
        "home": "/home/ann",
    }


async def test_an_existing_file_is_never_overwritten(
    store: AsyncSqliteStore, tmp_path: Path
) -> None:
    out = tmp_path / "taken.zip"
    out.write_bytes(b"someone's file")
    with pytest.raises(ExportRefused, match="exists"):
        await export_person(store, store.media_dir, {}, out)
    assert out.read_bytes() == b"someone's file"
    with pytest.raises(ExportRefused, match="is not a folder"):
        await export_person(store, store.media_dir, {}, tmp_path / "no" / "x.zip")


async def test_a_disk_error_is_one_line_and_leaves_no_file(
    store: AsyncSqliteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", full)
    out = tmp_path / "export.zip"
    with pytest.raises(ExportError, match="No space left on device") as raised:
        await export_person(store, store.media_dir, {}, out)
    assert not isinstance(raised.value, ExportRefused)
    assert not out.exists()


async def test_only_images_inside_the_media_folder_go(
    store: AsyncSqliteStore, tmp_path: Path
) -> None:
    outside = tmp_path / "not-theirs.png"
    outside.write_bytes(b"someone else's")
    session = await store.create_session("Paths")
    for path in (str(outside), "../../not-theirs.png", "missing.png"):
        await store.add_message(session.id, "user", "look", image_path=path)
    out = tmp_path / "export.zip"
    report = await export_person(store, store.media_dir, {}, out)
    with zipfile.ZipFile(out) as archive:
        images = [n for n in archive.namelist() if n.startswith("images/")]
    assert images == ["images/Quokkaberry.png"] and report.images == 1
