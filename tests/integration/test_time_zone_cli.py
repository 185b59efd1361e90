"""The real ``companion`` command with an unknown COMPANION_TIMEZONE: refused with a
message naming the variable, before anything is served or answered (never UTC instead)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REFUSAL = (
    "companion: COMPANION_TIMEZONE: time zone 'Mars/Olympus' is not in the IANA time zone "
    "database; use a name like Asia/Tokyo, Europe/Berlin or UTC"
)


@pytest.mark.parametrize("command", [["chat", "-m", "what time is it?"], ["--port", "0"]])
def test_an_unknown_zone_from_the_environment_stops_the_cli(
    tmp_path: Path, command: list[str]
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    env.update(COMPANION_HOME=str(tmp_path / "home"), COMPANION_TIMEZONE="Mars/Olympus")
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == REFUSAL
    assert "Traceback" not in done.stderr
