"""Makes the centre the bundled embedder takes away (providers/e5_centre.json).

The centre is the mean raw vector of everyday text, once as passages and once as
queries (each with its own prefix). The texts are none of a bench's: the paraphrase pairs
and distractors of tests/support/embedding_pairs.py and the user messages of the evals'
datasets (evals/datasets/*.jsonl), English and Indonesian. Run it again only with a new
model: the centre is part of the model's vector space (LOCAL_MODEL).

    python -m bench.embed_centre            # writes providers/e5_centre.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy

from bench import quiet_environment

quiet_environment()

from providers.embeddings import CENTRE, LocalEmbedder  # noqa: E402
from tests.support.embedding_pairs import DISTRACTORS, PAIRS  # noqa: E402

DATASETS = Path(__file__).resolve().parents[1] / "evals" / "datasets"


def messages() -> list[str]:
    """The user messages of the evals' cases, in file order."""
    found = []
    for path in sorted(DATASETS.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            message = json.loads(line).get("message") if line.strip() else None
            if isinstance(message, str) and message.strip():
                found.append(message)
    return found


def corpus() -> tuple[list[str], list[str]]:
    """(passages, queries): the remarks and the questions, each with every eval message."""
    remarks = [answer for pairs in PAIRS.values() for _, answer in pairs] + DISTRACTORS
    questions = [question for pairs in PAIRS.values() for question, _ in pairs]
    return remarks + messages(), questions + messages()


def centre(passages: list[str], queries: list[str]) -> dict[str, list[float]]:
    """The mean raw passage and query vectors, rounded to 6 decimals."""
    raw = LocalEmbedder(centred=False)
    means = {
        "passage": raw.passages(passages).mean(axis=0),
        "query": numpy.stack([raw.query(text) for text in queries]).mean(axis=0),
    }
    return {kind: [round(float(x), 6) for x in vector] for kind, vector in means.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CENTRE, help="where to write the centre")
    args = parser.parse_args(argv)
    passages, queries = corpus()
    saved = {"texts": {"passage": len(passages), "query": len(queries)}}
    args.out.write_text(json.dumps(saved | centre(passages, queries)) + "\n")
    print(f"{args.out}: centre of {len(passages)} passages and {len(queries)} queries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
