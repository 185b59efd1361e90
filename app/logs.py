"""Logging a user and a developer can read: warnings on stderr, a rotating file at INFO.

The CLI and the app call ``configure_logging`` once at start. Everything Companion logs
goes under the ``companion`` logger; the file is ``Settings.log_file``
(``COMPANION_HOME/logs/companion.log``).
"""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
MAX_BYTES = 2_000_000
BACKUPS = 3
HANDLER_NAMES = ("companion-stderr", "companion-file")


def configure_logging(path: Path, level: str = "WARNING") -> Path:
    """Send ``companion.*`` records to stderr at ``level`` and to the log file at INFO.

    Calling it again (tests, a second app in one process) replaces the handlers it added
    rather than stacking them.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger("companion")
    for handler in [h for h in root.handlers if h.get_name() in HANDLER_NAMES]:
        root.removeHandler(handler)
        handler.close()
    stderr = logging.StreamHandler()
    stderr.setLevel(level.upper())
    stderr.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    file = logging.handlers.RotatingFileHandler(
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
