"""bench.embed_centre on a few texts: it writes both centres, of the model's dimension,
from the pairs and the evals' messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import embed_centre
from providers.embeddings import LOCAL_DIMENSIONS


def test_it_writes_a_centre_of_each_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(embed_centre.messages()) > 50  # the evals' cases, English and Indonesian
    monkeypatch.setattr(embed_centre, "messages", lambda: ["Berapa 2+2?"])
    out = tmp_path / "centre.json"
    assert embed_centre.main(["--out", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["texts"] == {"passage": 45, "query": 33}
    assert len(saved["passage"]) == len(saved["query"]) == LOCAL_DIMENSIONS
    assert saved["passage"] != saved["query"]  # each kind has its own prefix
    assert "45 passages and 33 queries" in capsys.readouterr().out
