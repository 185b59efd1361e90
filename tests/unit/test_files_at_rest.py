"""Files at rest: a fresh home is its owner's alone, and an image's name cannot be
computed from the picture.

A home Companion creates is 0700; its database, logs and images (and the folders that
hold them) are owner-only whatever the process's umask. Kept images are named by a
keyed hash under a secret of each person's own, so two people keeping the same picture
get names nobody else can work out; images saved before keep their names and still load.
"""

from __future__ import annotations

import hashlib
import logging
import logging.handlers
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.attachments import save_upload
from app.logs import GRADIO_CACHE, configure_logging
from config.settings import Settings
from evals.fixtures import cat_image
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tools.base import ToolContext
from tools.image_analyze import image_analyze
from tools.images import SALT_FILE, media_path, write_image


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """The umask most systems start with (022): files 0644 and folders 0755 by default."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("loose_umask")
def test_a_fresh_home_and_its_files_are_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = SqliteStore.open_home(home)
    photo = tmp_path / "upload.png"
    photo.write_bytes(cat_image("black"))
    kept = Path(save_upload(photo, store.media_dir))
    log = configure_logging(Settings(home=home).log_file)
    try:
        logging.getLogger("companion.test").warning("a line")
        assert {name: oct(mode(home / name)) for name in ("", "media", "logs")} == {
            "": "0o700",
            "media": "0o700",
            "logs": "0o700",
        }
        files = [home / "companion.db", log, kept, home / SALT_FILE]
        assert {path.name: oct(mode(path)) for path in files} == {
            path.name: "0o600" for path in files
        }
    finally:
        configure_logging(tmp_path / "elsewhere" / "companion.log")  # let the file go


@pytest.mark.usefixtures("loose_umask")
def test_each_rotated_log_file_stays_owner_only(tmp_path: Path) -> None:
    log = configure_logging(tmp_path / "logs" / "companion.log")
    try:
        (handler,) = [
            h for h in logging.getLogger("companion").handlers if h.get_name() == "companion-file"
        ]
        assert isinstance(handler, logging.handlers.RotatingFileHandler)
        handler.doRollover()
        logging.getLogger("companion.test").warning("after the rollover")
        assert [oct(mode(path)) for path in (log, log.with_name("companion.log.1"))] == [
            "0o600",
            "0o600",
        ]
    finally:
        configure_logging(tmp_path / "elsewhere" / "companion.log")


@pytest.mark.usefixtures("loose_umask")
def test_existing_media_and_logs_folders_are_made_owner_only(tmp_path: Path) -> None:
    for name in ("media", "logs"):
        (tmp_path / name).mkdir(mode=0o755)
    SqliteStore.open_home(tmp_path)
    configure_logging(tmp_path / "logs" / "companion.log")
    configure_logging(tmp_path / "elsewhere" / "companion.log")
    assert [oct(mode(tmp_path / name)) for name in ("media", "logs")] == ["0o700", "0o700"]


def test_the_same_picture_gets_a_different_name_for_each_person(tmp_path: Path) -> None:
    photo = tmp_path / "upload.png"
    photo.write_bytes(cat_image("black"))
    ann = SqliteStore.open_home(tmp_path / "ann").media_dir
    bob = SqliteStore.open_home(tmp_path / "bob").media_dir
    anns, bobs = Path(save_upload(photo, ann)), Path(save_upload(photo, bob))
    assert anns.name != bobs.name
    assert hashlib.sha256(photo.read_bytes()).hexdigest() not in (anns.stem, bobs.stem)
    assert Path(save_upload(photo, ann)) == anns, "one person's same picture is kept once"
    assert anns.read_bytes() == bobs.read_bytes() == photo.read_bytes()
    assert (tmp_path / "ann" / SALT_FILE).read_bytes() != (
        tmp_path / "bob" / SALT_FILE
    ).read_bytes()
    assert not list(ann.glob(f"*{SALT_FILE}*")), "the salt is never in the served folder"


async def test_an_image_saved_under_its_old_name_still_loads(tmp_path: Path) -> None:
    store = SqliteStore.open_home(tmp_path)
    data = cat_image("orange")
    old = write_image(data, store.media_dir / f"{hashlib.sha256(data).hexdigest()}.png")
    ctx = ToolContext(Settings(home=tmp_path), AsyncSqliteStore(store), "s1")
    result = await image_analyze({"reference": str(old)}, ctx)
    assert result["image_path"] == str(old) and result["mime"] == "image/png"
    assert media_path(data, store.media_dir, "png") != old


def test_the_cli_keeps_what_it_writes_private(tmp_path: Path) -> None:
    """A real ``companion`` process under umask 022: its home, log and Gradio's cache."""
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "GRADIO_TEMP"))}
    probe = (
        "import os, sys; from app.cli import main; main(sys.argv[1:]); "
        "open(os.path.join(os.environ['COMPANION_HOME'], 'new-file'), 'w').close(); "
        "print(os.environ['GRADIO_TEMP_DIR'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "user", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "COMPANION_HOME": str(home)},
        umask=0o022,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == str(home / GRADIO_CACHE)
    assert [oct(mode(path)) for path in (home, home / "logs")] == ["0o700", "0o700"]
    files = (home / "logs" / "companion.log", home / "new-file")
    assert [oct(mode(path)) for path in files] == ["0o600", "0o600"]
