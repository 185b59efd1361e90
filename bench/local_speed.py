"""Tokens per second of the bundled model under one or more llama.cpp builds.

Each build lives in its own Python environment (a wheel built with other CMAKE_ARGS), so
each is measured in a child process of that environment's interpreter, on the same
prompt, the same thread count and the same token budget; the first build is the
baseline the others are compared with. A build that crashes is reported with its
signal, not as a number.

    python -m bench.local_speed                        # this environment only
    python -m bench.local_speed --python /tmp/native/bin/python --label native
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass

from providers import local_model_path
from providers.local_smoke import describe_exit

TOKENS = 128
RUNS = 3
CHILD = """
import json, os, statistics, sys, time
from llama_cpp import Llama
path, tokens, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
started = time.perf_counter()
threads = max(os.cpu_count() // 2, 1)  # what llama_cpp.server uses by default
llm = Llama(model_path=path, n_ctx=1024, n_threads=threads, verbose=False, seed=1)
load = time.perf_counter() - started
prompt = "Write a short story about a lighthouse keeper and a cat. " * 6
llm.create_completion(prompt, max_tokens=8, temperature=0)  # warm-up
rates = []
for _ in range(runs):
    llm.reset()
    t0 = time.perf_counter()
    out = llm.create_completion(prompt, max_tokens=tokens, temperature=0)
    made = out["usage"]["completion_tokens"]
    rates.append(made / (time.perf_counter() - t0))
print(json.dumps({"load_s": load, "tokens_per_s": statistics.median(rates), "tokens": made}))
"""


@dataclass
class Figure:
    """One build's result: tokens/s (prompt + generation, median of runs) or its failure."""

    label: str
    tokens_per_s: float | None
    load_s: float | None
    failure: str = ""


def measure(python: str, label: str) -> Figure:
    """Run the child benchmark under ``python``."""
    done = subprocess.run(
        [python, "-c", CHILD, str(local_model_path()), str(TOKENS), str(RUNS)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or [""]
        return Figure(label, None, None, f"{describe_exit(done.returncode)} {tail[0]}".strip())
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return Figure(label, data["tokens_per_s"], data["load_s"])


def main(argv: list[str] | None = None) -> int:
    """Print one line per build, with its ratio to the first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", default=[], help="another build's python")
    parser.add_argument("--label", action="append", default=[], help="a name for each --python")
    args = parser.parse_args(argv)
    builds = [(sys.executable, "this environment")]
    builds += [
        (python, args.label[i] if i < len(args.label) else python)
        for i, python in enumerate(args.python)
    ]
    figures = [measure(python, label) for python, label in builds]
    base = figures[0].tokens_per_s
    print(f"SmolLM2-135M Q4_1: {TOKENS} tokens after a ~70-token prompt, median of {RUNS} runs,")
    print("llama_cpp.server's thread count; tokens per second of wall time, prompt included")
    for figure in figures:
        if figure.tokens_per_s is None:
            print(f"  {figure.label:<20} crashed: {figure.failure}")
            continue
        ratio = f"{figure.tokens_per_s / base:.2f}x" if base else "-"
        print(
            f"  {figure.label:<20} {figure.tokens_per_s:7.1f} tokens/s  "
            f"(load {figure.load_s:.2f} s)  {ratio} of the first"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
