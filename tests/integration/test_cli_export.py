"""The real ``companion export PATH``: a report, a path that exists or has no folder is
one line and exit 2 (nothing overwritten), and ``companion import`` reads the zip back
into a new home; an export of another version is refused whole."""

from __future__ import annotations

import asyncio
import json
import zipfile
from pathlib import Path

from memory.sqlite.async_store import AsyncSqliteStore
from tests.integration.test_cli_import import companion, stored
from tests.support.person_data import fill


def _filled(home: Path) -> None:
    async def run() -> None:
        store = AsyncSqliteStore.open_home(home)
        try:
            await fill(store, "Quokkaberry")
        finally:
            await store.close()

    asyncio.run(run())


def test_export_then_import_into_a_new_home(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "mine.zip"
    _filled(home)
    done = companion(home, "export", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"Exported 2 chats with 16 messages, 2 memories, 1 segments and 1 images to {out}."
    )
    again = companion(home, "export", str(out))
    assert again.returncode == 2
    assert again.stderr.strip().splitlines()[-1] == (
        f"companion: cannot export: {out} exists: choose a new file name"
    )
    nowhere = companion(home, "export", str(tmp_path / "no" / "x.zip"))
    assert nowhere.returncode == 2 and "is not a folder" in nowhere.stderr

    new = tmp_path / "new"
    imported = companion(new, "import", str(out))
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.splitlines()[:2] == [
        "Imported 2 chats with 15 messages from Companion (2 conversations in it).",
        "Imported 2 memories.",
    ]
    assert stored(new)[:2] == (["Imported Quokkaberry", "Plans of Quokkaberry"], 15)
    second = companion(new, "import", str(out))
    assert second.stdout.startswith("Imported 0 chats with 0 messages from Companion")


def test_an_export_of_another_version_is_refused_whole(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "mine.zip"
    _filled(home)
    assert companion(home, "export", str(out)).returncode == 0
    later = tmp_path / "later.zip"
    with zipfile.ZipFile(out) as source, zipfile.ZipFile(later, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name == "companion-export.json":
                data = json.dumps({**json.loads(data), "version": 99}).encode()
            target.writestr(name, data)
    done = companion(tmp_path / "new", "import", str(later))
    assert done.returncode == 2
    assert "companion-export version 99 is not one this reads" in done.stderr
    assert stored(tmp_path / "new")[:2] == ([], 0)
