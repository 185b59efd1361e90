"""Logging a user and a developer can read: warnings on stderr, a rotating file at INFO.

The CLI and the app call ``configure_logging`` once at start. Everything Companion logs
goes under the ``companion`` logger; the file is ``Settings.log_file``
(``COMPANION_HOME/logs/companion.log``), in a 0700 folder, and it and its rotated copies
are 0600: a log names people, chats and errors. A traceback goes to the file only: on
stderr a record is one line, its exception reduced to type and message
(``OneLineFormatter``), and a record marked ``FILE_ONLY`` (a failure the CLI has already
said in its own words) is not repeated there; ``--log-level debug`` shows both in full.
``keep_files_private`` does the same for everything a serving process writes: a umask
of 077, and Gradio's cache of uploaded and displayed files under the home.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
from collections.abc import MutableMapping
from pathlib import Path

from memory.rules.files import DB_FILE_MODE, owner_only, owner_only_folder

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
MAX_BYTES = 2_000_000
BACKUPS = 3
HANDLER_NAMES = ("companion-stderr", "companion-file")
PRIVATE_UMASK = 0o077
GRADIO_CACHE = "gradio-cache"  # under the home: Gradio's copies of uploads and shown images
STDERR_FORMAT = "%(levelname)s %(name)s: %(message)s"
EXCEPTION_CHARS = 300  # of an exception's message on stderr; the file has all of it
FILE_ONLY = {"file_only": True}  # ``extra=`` of a record whose failure stderr has shown


def one_line(text: object) -> str:
    """``text`` on one line: every run of whitespace (newlines, tabs) becomes one space."""
    return " ".join(str(text).split())


class OneLineFormatter(logging.Formatter):
    """A record as one line: the message, and for an exception its type and message,
    never the traceback (the log file keeps it)."""

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        line = one_line(self.formatMessage(record))
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line += f" ({type(error).__name__}: {one_line(error)[:EXCEPTION_CHARS]})"
        return line


def _shown_on_stderr(record: logging.LogRecord) -> bool:
    return not getattr(record, "file_only", False)


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log whose every file (the first and each after a rollover) is 0600."""

    def _open(self) -> io.TextIOWrapper:
        descriptor = os.open(
            self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, DB_FILE_MODE
        )
        return open(descriptor, "a", encoding=self.encoding, errors=self.errors)


def configure_logging(path: Path, level: str = "WARNING") -> Path:
    """Send ``companion.*`` records to stderr at ``level`` and to the log file at INFO.

    Below DEBUG, stderr gets one line per record and no ``FILE_ONLY`` record; at DEBUG,
    every record with its traceback. Calling it again (tests, a second app in one
    process) replaces the handlers it added rather than stacking them.
    """
    owner_only_folder(path.parent)
    owner_only(path)  # made 0600, or made so
    root = logging.getLogger("companion")
    for handler in [h for h in root.handlers if h.get_name() in HANDLER_NAMES]:
        root.removeHandler(handler)
        handler.close()
    stderr = logging.StreamHandler()
    stderr.setLevel(level.upper())
    if logging.getLevelName(level.upper()) > logging.DEBUG:
        stderr.setFormatter(OneLineFormatter(STDERR_FORMAT))
        stderr.addFilter(_shown_on_stderr)
    else:
        stderr.setFormatter(logging.Formatter(STDERR_FORMAT))
    file = PrivateRotatingFileHandler(
        path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
    )
    file.setLevel(min(logging.INFO, logging.getLevelName(level.upper())))
    file.setFormatter(logging.Formatter(FORMAT))
    stderr.set_name(HANDLER_NAMES[0])
    file.set_name(HANDLER_NAMES[1])
    root.addHandler(stderr)
    root.addHandler(file)
    root.setLevel(min(logging.INFO, logging.getLevelName(level.upper())))
    return path


def keep_files_private(home: Path, env: MutableMapping[str, str]) -> Path:
    """Make what this process writes from now on its owner's alone: a umask of 077 (so
    a folder is 0700 and a file 0600 whoever creates it), and Gradio's cache of uploads
    and shown images (GRADIO_TEMP_DIR in ``env``, unless the operator set one) under
    ``home`` instead of the machine's shared temporary folder. Returns the cache folder.
    For the process that serves (the CLI), never for a library caller."""
    os.umask(PRIVATE_UMASK)
    if not env.get("GRADIO_TEMP_DIR"):
        env["GRADIO_TEMP_DIR"] = str(home / GRADIO_CACHE)
    return Path(env["GRADIO_TEMP_DIR"])
