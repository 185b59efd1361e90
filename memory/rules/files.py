"""Files at rest: a home, its folders and its database files are its owner's alone
(0700 folders, 0600 files), on either backend."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("companion.db")

DB_FILE_MODE = 0o600  # owner only: the file holds the conversations and the saved API key
FOLDER_MODE = 0o700  # owner only: a home and the folders Companion keeps in it


def owner_only(path: Path | str) -> None:
    """Create the database file readable and writable by its owner alone (0600), or make
    an existing one so: it holds the conversations and the API key saved in Settings.
    SQLite gives its -wal and -shm files the database file's mode."""
    path = Path(path)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, DB_FILE_MODE))
        return
    except FileExistsError:
        pass
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & ~DB_FILE_MODE:
        log.warning("%s was readable by others (mode %o): made it owner-only", path, mode)
        path.chmod(DB_FILE_MODE)


def private_folder(path: Path | str) -> Path:
    """``path`` as a folder, created readable by its owner alone (0700) when missing; an
    existing folder is left as it is (it may be one the operator chose and shares)."""
    path = Path(path)
    if not path.is_dir():
        path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        path.chmod(FOLDER_MODE)  # mkdir's mode yields to the umask
    return path


def owner_only_folder(path: Path | str) -> Path:
    """A folder Companion names and fills itself (media/, logs/), made 0700 whether new
    or not: a looser one is tightened, and the log says so."""
    path = private_folder(path)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & ~FOLDER_MODE:
        log.warning("%s was open to others (mode %o): made it owner-only", path, mode)
        path.chmod(FOLDER_MODE)
    return path
