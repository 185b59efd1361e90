"""bench.local_engines on the prebuilt engine, one start: the row has its start time, both
rates and what the server did with the app's tool-call shapes (every bench module has a
smoke test, so a change that breaks one is seen in CI)."""

from __future__ import annotations

import re
from pathlib import Path

from bench.local_engines import measure
from providers.llama_server import PREBUILT


def test_one_start_of_the_prebuilt_engine_makes_a_full_row(tmp_path: Path) -> None:
    row = measure(PREBUILT, 1, tmp_path)
    found = re.fullmatch(
        r"\| (\S+) \| ([\d.]+) \| (\d+) \| ([\d.]+) \| streamed auto choice: HTTP (\d+).*"
        r"content null \+ tool reply: HTTP (\d+) \|",
        row,
    )
    assert found, row
    engine, start, prompt, generated, streamed, replied = found.groups()
    assert engine == str(PREBUILT) and float(start) > 0
    assert int(prompt) > 0 and float(generated) > 0
    assert (streamed, replied) == ("200", "200")  # the shapes llama-cpp-python's server refused
