"""The SQLite vector index (memory.sqlite.vectors): kept in message id order, so an id
range (a time window's) is searched as a slice of it, whatever order vectors came in."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy
import pytest

from memory.sqlite.store import SqliteStore
from memory.sqlite.vectors import _index, add_vectors, nearest

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)
MODEL = "test:unit"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore.open_home(tmp_path, clock=lambda: NOW)
    yield s
    s.close()


def unit(seed: int) -> numpy.ndarray:
    vector = numpy.random.default_rng(seed).standard_normal(16).astype(numpy.float32)
    return vector / numpy.linalg.norm(vector)


def test_an_older_turn_embedded_late_is_found_inside_its_range(store: SqliteStore) -> None:
    session = store.create_session("s")
    ids = [store.add_message(session.id, "user", f"turn {i}").id for i in range(12)]
    add_vectors(store, MODEL, [(i, unit(i)) for i in ids[6:]])  # the newer half first
    assert [i for i, _ in nearest(store, MODEL, unit(ids[8]), low=0, high=ids[-1], limit=1)] == [
        ids[8]
    ]
    add_vectors(store, MODEL, [(i, unit(i)) for i in ids[:6]])  # then a gap below it
    index = _index(store, MODEL)
    found = nearest(store, MODEL, unit(ids[2]), low=ids[0], high=ids[5], limit=6)
    assert next(i for i, _ in found) == ids[2]
    assert {i for i, _ in found} == set(ids[:6])  # only the range, all of it
    assert list(index.ids) == sorted(index.ids)
    assert nearest(store, MODEL, unit(ids[2]), low=ids[-1] + 1, high=ids[-1] + 9, limit=6) == []
