"""Install-time smoke test of the embedded model: load it and generate a few tokens.

The generation runs in a child process, so a llama.cpp build that dies on this CPU
(SIGSEGV or SIGILL at the first token) is reported as a clear cause and fix instead of
killing the caller. ``scripts/bootstrap`` and ``companion doctor`` run it;
``python -m providers.local_smoke`` exits non-zero when it fails.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from providers.llama_server import local_model_path

CHILD = """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=256, verbose=False)
out = llm.create_completion("2 + 2 =", max_tokens=4, temperature=0)
print(out["choices"][0]["text"])
"""

REBUILD_HINT = (
    "rebuild llama-cpp-python portably: rm .venv/companion-llama-build && scripts/bootstrap "
    "(or set COMPANION_LLAMA_CMAKE_ARGS, e.g. '-DGGML_NATIVE=OFF -DGGML_AVX2=OFF "
    "-DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF' for a CPU without AVX2)"
)


@dataclass(frozen=True)
class SmokeResult:
    """What the child process did: ok with its text, or the cause and the fix."""

    ok: bool
    detail: str
    seconds: float


def describe_exit(returncode: int) -> str:
    """'signal 11 (SIGSEGV)' for a killed process, 'exit status N' otherwise."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown"
        return f"signal {-returncode} ({name})"
    return f"exit status {returncode}"


def run_smoke(timeout: float = 120.0, child: str = CHILD) -> SmokeResult:
    """Load the bundled GGUF in a child process (``child``'s code) and generate four tokens."""
    started = time.perf_counter()
    try:
        path = local_model_path()
    except Exception as exc:  # the provider says what is missing
        return SmokeResult(False, str(exc), 0.0)
    try:
        done = subprocess.run(
            [sys.executable, "-c", child, str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return SmokeResult(False, f"no tokens after {timeout:.0f} s", timeout)
    seconds = time.perf_counter() - started
    if done.returncode == 0:
        return SmokeResult(True, done.stdout.strip(), seconds)
    tail = "\n".join(done.stderr.strip().splitlines()[-5:])
    cause = describe_exit(done.returncode)
    crashed = done.returncode in (-signal.SIGSEGV, -signal.SIGILL, -signal.SIGBUS)
    fix = REBUILD_HINT if crashed else "see the error above"
    detail = f"the bundled model died while generating ({cause}); fix: {fix}"
    if tail:
        detail += f"\n{tail}"
    return SmokeResult(False, detail, seconds)


def main() -> int:
    """Print one line: ✓ with the generated text, or ✗ with the cause and the fix."""
    result = run_smoke()
    if result.ok:
        print(f"✓ local model smoke test: generated {result.detail!r} in {result.seconds:.1f} s")
        return 0
    print(f"✗ local model smoke test failed: {result.detail}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
