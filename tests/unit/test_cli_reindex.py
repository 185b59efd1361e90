"""``companion memory reindex``: a progress bar on stderr, what is done kept on failure,
a second run resumes; embeddings off says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main
from graph import jobs, setup
from memory.sqlite.store import SqliteStore
from tests.support.embedders import FakeEmbedder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    store = SqliteStore.open_home(tmp_path)
    for i in range(40):
        store.add_message("s", "user" if i % 2 == 0 else "assistant", f"line {i}")
    store.close()
    return tmp_path


def use(monkeypatch: pytest.MonkeyPatch, embedder: FakeEmbedder | None) -> None:
    monkeypatch.setattr(setup, "_EMBEDDERS", {})
    monkeypatch.setattr(setup, "open_embedder", lambda settings: embedder)
    jobs._MODEL_CHECKED.clear()


def test_reindex_shows_progress_and_resumes(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, FakeEmbedder(fail="connection reset"))
    assert main(["memory", "reindex", "--home", str(home)]) == 1
    assert "connection reset" in capsys.readouterr().err
    use(monkeypatch, FakeEmbedder())
    assert main(["memory", "reindex", "--home", str(home)]) == 0
    out, err = capsys.readouterr()
    assert "embedding [" in err and "40/40 (100%)" in err
    assert "40 of 40 messages have vectors of fake:bag-of-concepts" in out
    again = FakeEmbedder()
    use(monkeypatch, again)
    assert main(["memory", "reindex", "--home", str(home)]) == 0
    assert again.calls == 0  # nothing left to embed


def test_reindex_with_embeddings_off_says_so(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, None)
    assert main(["memory", "reindex", "--home", str(home)]) == 1
    assert "embeddings are off" in capsys.readouterr().err
