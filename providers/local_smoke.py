"""Install-time smoke test of the embedded model: load it and generate a few tokens.

The generation runs in a child process, so an engine that dies on this CPU (SIGSEGV or
SIGILL at the first token) is reported as a clear cause and fix instead of killing the
caller. ``scripts/bootstrap`` and ``companion doctor`` run it;
``python -m providers.local_smoke`` exits non-zero when it fails.

``python -m providers.local_smoke --choose`` is bootstrap's choice of engine: it tests the
prebuilt one (xllamacpp) and records the result in the environment
(``providers.llama_server.ENGINE_FILE``). When the prebuilt engine fails, it records the
compiled one, says so in one line and exits with ``NEEDS_COMPILE``: bootstrap then
compiles llama-cpp-python portably and runs the plain smoke test on it.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from providers.llama_server import (
    COMPILED,
    ENGINE_FILE,
    PREBUILT,
    Engine,
    chosen_engine,
    local_model_path,
)

CHILDREN: dict[Engine, str] = {
    PREBUILT: """
import sys
import xllamacpp
params = xllamacpp.CommonParams()
params.model.path = sys.argv[1]
params.n_ctx = 256
server = xllamacpp.Server(params)
out = server.handle_completions({"prompt": "2 + 2 =", "max_tokens": 4, "temperature": 0})
print(out["choices"][0]["text"])
""",
    COMPILED: """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=256, verbose=False)
out = llm.create_completion("2 + 2 =", max_tokens=4, temperature=0)
print(out["choices"][0]["text"])
""",
}
NEEDS_COMPILE = 3  # --choose's exit status when the compiled engine must be built

REBUILD_HINT = (
    "rebuild llama-cpp-python portably: rm .venv/companion-llama-build && scripts/bootstrap "
    "(or set COMPANION_LLAMA_CMAKE_ARGS, e.g. '-DGGML_NATIVE=OFF -DGGML_AVX2=OFF "
    "-DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF' for a CPU without AVX2)"
)
FALLBACK_HINT = (
    "scripts/bootstrap falls back to compiling llama.cpp for this CPU "
    "(rm .venv/companion-llama-smoke && scripts/bootstrap)"
)
FIXES: dict[Engine, str] = {PREBUILT: FALLBACK_HINT, COMPILED: REBUILD_HINT}


@dataclass(frozen=True)
class SmokeResult:
    """What the child process did: ok with its text, or the cause and the fix."""

    ok: bool
    detail: str
    seconds: float
    cause: str = ""  # why it failed, in a few words: 'signal 4 (SIGILL)'


def describe_exit(returncode: int) -> str:
    """'signal 11 (SIGSEGV)' for a killed process, 'exit status N' otherwise."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown"
        return f"signal {-returncode} ({name})"
    return f"exit status {returncode}"


def run_smoke(
    timeout: float = 120.0, child: str | None = None, engine: Engine | None = None
) -> SmokeResult:
    """Load the bundled GGUF in a child process and generate four tokens, with ``engine``
    (default: the chosen one) or ``child``'s code."""
    engine = engine or chosen_engine()
    started = time.perf_counter()
    try:
        path = local_model_path()
    except Exception as exc:  # the provider says what is missing
        return SmokeResult(False, str(exc), 0.0, "the model is missing")
    try:
        done = subprocess.run(
            [sys.executable, "-c", child or CHILDREN[engine], str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        late = f"no tokens after {timeout:.0f} s"
        return SmokeResult(False, late, timeout, late)
    seconds = time.perf_counter() - started
    if done.returncode == 0:
        return SmokeResult(True, done.stdout.strip(), seconds)
    tail = "\n".join(done.stderr.strip().splitlines()[-5:])
    cause = describe_exit(done.returncode)
    crashed = done.returncode in (-signal.SIGSEGV, -signal.SIGILL, -signal.SIGBUS)
    fix = FIXES[engine] if crashed else "see the error above"
    detail = f"the bundled model died while generating ({cause}); fix: {fix}"
    if tail:
        detail += f"\n{tail}"
    return SmokeResult(False, detail, seconds, cause)


def choose_engine(record: Path = ENGINE_FILE, timeout: float = 120.0) -> tuple[Engine, str]:
    """Smoke-test the prebuilt engine and record which engine this environment serves
    with: the prebuilt one when it generates, else the compiled one. Returns the engine
    and the one line to print."""
    result = run_smoke(timeout, engine=PREBUILT)
    engine = PREBUILT if result.ok else COMPILED
    record.write_text(f"{engine}\n")
    if result.ok:
        line = f"✓ local model smoke test (xllamacpp, prebuilt): {result.detail!r} "
        return engine, line + f"in {result.seconds:.1f} s"
    return engine, (
        f"! the prebuilt llama.cpp (xllamacpp) failed on this CPU ({result.cause}); "
        "compiling llama-cpp-python portably instead (about 5 minutes on 2 cores)"
    )


def main(argv: list[str] | None = None) -> int:
    """Print one line: ✓ with the generated text, or ✗ with the cause and the fix; with
    --choose, bootstrap's choice of engine."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--choose", action="store_true", help="test and record the engine")
    parser.add_argument("--record", type=Path, default=ENGINE_FILE, help="where --choose writes")
    args = parser.parse_args(argv)
    if args.choose:
        engine, line = choose_engine(args.record)
        print(line, file=sys.stdout if engine == PREBUILT else sys.stderr)
        return 0 if engine == PREBUILT else NEEDS_COMPILE
    result = run_smoke()
    if result.ok:
        print(f"✓ local model smoke test: generated {result.detail!r} in {result.seconds:.1f} s")
        return 0
    print(f"✗ local model smoke test failed: {result.detail}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
