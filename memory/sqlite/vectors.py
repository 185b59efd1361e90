"""The vector index on SQLite: each user/assistant message's embedding, and nearest search.

``message_vectors`` (migration 8) is the truth: one float32 vector per message, the model
that made it, and a sign-bit sketch of a fixed random projection (SimHash). The Python
build here cannot load SQLite extensions (no ``enable_load_extension``), and sqlite-vec's
brute-force scan took 250 ms at 1M messages even on bit vectors, so search runs in
numpy: a process keeps each model's sketches in memory (``VectorIndex``, read from
``seq`` on, so only new rows are read, and kept in message id order), takes the rows of
the id range asked (a time window's: a slice, not a mask over the whole history), scans
them by Hamming distance on the first ``COARSE_WORDS`` words, refines on all of the
sketch, and ranks the best by the stored float vectors' cosine. Stale entries (a deleted
message, a replaced vector) are dropped by that last read. A backlog of more than
``READ_INLINE`` rows (a new process on a long history) is read in a thread while recall
stays lexical. Blocking work: async callers run it in a thread.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy

from memory.sqlite.store import SqliteStore

log = logging.getLogger("companion.store")

SKETCH_BITS = 256  # sign bits of the projection kept per vector (4 uint64 words)
COARSE_WORDS = 2  # the first scan's words (128 bits): cheap over a million rows
COARSE_KEEP = 4096  # rows the first scan keeps for the full sketch
REFINE_KEEP = 256  # rows the full sketch keeps for the float cosine
READ_INLINE = 50_000  # new rows a search reads itself; more are read in a thread
_ROLES = "('user', 'assistant')"


@functools.cache
def _projection(dimensions: int) -> numpy.ndarray:
    """The fixed random hyperplanes of the sketch (the same in every process)."""
    rng = numpy.random.default_rng(dimensions)
    return rng.standard_normal((dimensions, SKETCH_BITS)).astype(numpy.float32)


def sketch(vectors: numpy.ndarray) -> numpy.ndarray:
    """Sign bits of ``vectors`` (n, d) under the projection, as (n, 4) uint64 words."""
    bits = numpy.packbits(vectors @ _projection(vectors.shape[1]) > 0, axis=1)
    return bits.view(numpy.uint64)


def unembedded(store: SqliteStore, model: str, limit: int) -> list[tuple[int, str]]:
    """(id, text) of up to ``limit`` user/assistant messages with no vector of ``model``,
    oldest first.

    The background job asks after every turn, so the usual answer is cheap: only messages
    newer than the newest vector (read by index) are missing. Only a gap below it (a
    failed batch, a new model) reads every message against every vector (250 ms at
    200,000 messages; the usual answer takes 25 ms there)."""
    done, total = vector_status(store, model)
    if done >= total:
        return []
    # Any model's newest (by the message_id index: the model's own MAX reads every row);
    # when it is another model's, the count below disagrees and the full read runs.
    newest = store.conn.execute(
        "SELECT COALESCE(MAX(message_id), 0) FROM message_vectors"
    ).fetchone()[0]
    newer = store.conn.execute(
        f"SELECT COUNT(*) FROM messages WHERE id > ? AND role IN {_ROLES}", (newest,)
    ).fetchone()[0]
    if newer == total - done:  # no gap below the newest vector
        sql = f"""SELECT id, content FROM messages WHERE id > ? AND role IN {_ROLES}
                  ORDER BY id LIMIT ?"""
        params: tuple[object, ...] = (newest, limit)
    else:
        sql = f"""SELECT m.id, m.content FROM messages m
                  LEFT JOIN message_vectors v ON v.message_id = m.id AND v.model = ?
                  WHERE m.role IN {_ROLES} AND v.message_id IS NULL
                  ORDER BY m.id LIMIT ?"""
        params = (model, limit)
    return [(int(row[0]), str(row[1])) for row in store.conn.execute(sql, params).fetchall()]


def add_vectors(store: SqliteStore, model: str, rows: Sequence[tuple[int, numpy.ndarray]]) -> None:
    """Keep each message's vector for ``model`` (replacing any); gone messages are skipped."""
    if not rows:
        return
    vectors = numpy.stack([numpy.asarray(v, dtype=numpy.float32) for _, v in rows])
    sketches = sketch(vectors)
    with store.transaction() as conn:
        for (message_id, _), vector, code in zip(rows, vectors, sketches, strict=True):
            conn.execute("DELETE FROM message_vectors WHERE message_id = ?", (message_id,))
            conn.execute(
                """INSERT INTO message_vectors (message_id, model, sketch, vector)
                   SELECT id, ?, ?, ? FROM messages WHERE id = ?""",
                (model, code.tobytes(), vector.tobytes(), message_id),
            )


def vector_status(store: SqliteStore, model: str) -> tuple[int, int]:
    """(messages with a vector of ``model``, user/assistant messages in all)."""
    done = store.conn.execute(
        "SELECT COUNT(*) FROM message_vectors WHERE model = ?", (model,)
    ).fetchone()[0]
    total = store.conn.execute(f"SELECT COUNT(*) FROM messages WHERE role IN {_ROLES}").fetchone()[
        0
    ]
    return int(done), int(total)


def drop_vectors(store: SqliteStore, except_model: str | None) -> int:
    """Forget every model's vectors but ``except_model``'s (None: all); how many went."""
    with store.transaction() as conn:
        cursor = conn.execute("DELETE FROM message_vectors WHERE model IS NOT ?", (except_model,))
    return cursor.rowcount


@dataclass
class VectorIndex:
    """One model's sketches in memory: message ids, ascending, and their sign-bit words
    (one contiguous array per word, so a scan reads each in one pass), read from
    ``message_vectors`` up to ``seq``."""

    model: str
    seq: int = 0
    ids: numpy.ndarray = field(default_factory=lambda: numpy.empty(0, numpy.int64))
    columns: list[numpy.ndarray] = field(
        default_factory=lambda: [numpy.empty(0, numpy.uint64)] * (SKETCH_BITS // 64)
    )
    lock: threading.Lock = field(default_factory=threading.Lock)
    loading: bool = False  # a thread is reading a big backlog

    def refresh(self, store: SqliteStore) -> None:
        """Read the rows written since the last refresh (by any process)."""
        rows = store.conn.execute(
            """SELECT seq, message_id, sketch FROM message_vectors
               WHERE model = ? AND seq > ? ORDER BY seq""",
            (self.model, self.seq),
        ).fetchall()
        if not rows:
            return
        ids = numpy.fromiter((row[1] for row in rows), numpy.int64, len(rows))
        words = numpy.frombuffer(b"".join(row[2] for row in rows), numpy.uint64)
        words = words.reshape(len(rows), -1)
        in_order = _ascending(ids) and (not len(self.ids) or ids[0] >= self.ids[-1])
        self.ids = numpy.concatenate([self.ids, ids])
        self.columns = [
            numpy.concatenate([old, numpy.ascontiguousarray(words[:, i])])
            for i, old in enumerate(self.columns)
        ]
        if not in_order:  # an older message embedded late (a gap filled, a new model)
            order = numpy.argsort(self.ids, kind="stable")
            self.ids = self.ids[order]
            self.columns = [column[order] for column in self.columns]
        self.seq = int(rows[-1][0])

    def ready(self, store: SqliteStore) -> bool:
        """True when the rows not read yet are few enough to read now; otherwise they are
        read in a thread (a million sketches take seconds), and False until then."""
        if self.loading:
            return False
        top = store.conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM message_vectors WHERE model = ?", (self.model,)
        ).fetchone()[0]
        if int(top) - self.seq <= READ_INLINE:
            return True
        self.loading = True
        threading.Thread(target=self._read_all, args=(store,), daemon=True).start()
        return False

    def _read_all(self, store: SqliteStore) -> None:
        try:
            with self.lock:
                self.refresh(store)
        except Exception:  # the next search tries again
            log.exception("reading the vector index of %s failed", self.model)
        finally:
            self.loading = False

    def candidates(self, query: numpy.ndarray, low: int, high: int) -> numpy.ndarray:
        """Ids of the rows nearest ``query`` by sketch, among ids in [low, high]: only
        that slice of the index is scanned."""
        start = int(numpy.searchsorted(self.ids, low, side="left"))
        stop = int(numpy.searchsorted(self.ids, high, side="right"))
        if start >= stop:
            return self.ids[:0]
        ids = self.ids[start:stop]
        columns = [column[start:stop] for column in self.columns]
        code = sketch(query.reshape(1, -1))[0]
        rows = _nearest(_distance(columns[:COARSE_WORDS], code), COARSE_KEEP)
        fine = _distance([column[rows] for column in columns], code)
        return numpy.unique(ids[rows[_nearest(fine, REFINE_KEEP)]])


def _ascending(ids: numpy.ndarray) -> bool:
    """True when ``ids`` never decrease."""
    return bool(numpy.all(ids[1:] >= ids[:-1]))


def _distance(columns: list[numpy.ndarray], code: numpy.ndarray) -> numpy.ndarray:
    """Hamming distance of each row's words (``columns``) to ``code``'s first words."""
    distance = numpy.zeros(len(columns[0]), numpy.uint16)
    for word, column in zip(code, columns, strict=False):
        distance += numpy.bitwise_count(column ^ word)
    return distance


def _nearest(distance: numpy.ndarray, keep: int) -> numpy.ndarray:
    """Indices of the ``keep`` smallest distances: a count of each distance finds the
    cut-off in one pass (cheaper than partitioning a million), and only the rows at the
    cut-off are partitioned."""
    if len(distance) <= keep:
        return numpy.arange(len(distance))
    counts = numpy.bincount(numpy.minimum(distance, SKETCH_BITS + 1))
    cutoff = int(numpy.searchsorted(numpy.cumsum(counts), keep))
    below = numpy.flatnonzero(distance < cutoff)
    at = numpy.flatnonzero(distance == cutoff)
    return numpy.concatenate([below, at[: keep - len(below)]])


_INDEXES: dict[tuple[str, str], VectorIndex] = {}
_INDEXES_LOCK = threading.Lock()


def _index(store: SqliteStore, model: str) -> VectorIndex:
    """This process's index of ``model`` for the store's file."""
    key = (str(store.path), model)
    with _INDEXES_LOCK:
        return _INDEXES.setdefault(key, VectorIndex(model))


def nearest(
    store: SqliteStore,
    model: str,
    query: numpy.ndarray,
    *,
    low: int,
    high: int,
    limit: int,
) -> list[tuple[int, float]]:
    """(message id, cosine) of up to ``limit`` user/assistant messages with ids in [low,
    high] nearest ``query`` under ``model``, best first."""
    index = _index(store, model)
    if not index.ready(store):
        return []  # a big backlog is being read in a thread: lexical until it is
    with index.lock:
        index.refresh(store)
        ids = index.candidates(numpy.asarray(query, numpy.float32), low, high)
    if not len(ids):
        return []
    marks = ",".join("?" * len(ids))
    rows = store.conn.execute(
        # +model: looked up by message id (the model's index would read every vector)
        f"""SELECT message_id, vector FROM message_vectors
            WHERE message_id IN ({marks}) AND +model = ?""",
        (*map(int, ids), model),
    ).fetchall()
    query = numpy.asarray(query, numpy.float32)
    if not rows or len(rows[0][1]) != query.nbytes:
        return []  # nothing left, or a query of another dimension than the index
    matrix = numpy.frombuffer(b"".join(row[1] for row in rows), numpy.float32)
    scores = matrix.reshape(len(rows), -1) @ query
    order = numpy.argsort(-scores)[:limit]
    return [(int(rows[i][0]), float(scores[i])) for i in order]
