"""Start-up time: ``companion --help``, and the app until it answers its first HTTP request.

Both run the installed ``companion`` entry point as a subprocess (the one beside this
Python), with a fresh COMPANION_HOME and no provider configured, so nothing but
127.0.0.1 is involved. The app time is from process start until ``GET /`` returns 200.

    python -m bench.startup --runs 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench import QUIET

PROVIDER_VARIABLES = ("OPENROUTER_API_KEY", "COMPANION_API_KEY", "COMPANION_BASE_URL")


def companion_command() -> list[str]:
    """The ``companion`` script of this environment."""
    script = Path(sys.executable).with_name("companion")
    if script.exists():
        return [str(script)]
    found = shutil.which("companion")
    if found is None:
        raise SystemExit("the companion entry point is not installed (pip install -e .)")
    return [found]


def environment(home: Path) -> dict[str, str]:
    """This environment, quiet, with a fresh home and no remote provider."""
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    env.update(QUIET)
    env["COMPANION_HOME"] = str(home)
    return env


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def help_seconds(home: Path) -> float:
    """Wall time of ``companion --help``."""
    started = time.perf_counter()
    subprocess.run(
        [*companion_command(), "--help"],
        env=environment(home),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def first_response_seconds(home: Path, timeout: float) -> float:
    """Seconds from starting the app until ``GET /`` answers 200."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        process = subprocess.Popen(
            [*companion_command(), "--port", str(port), "--home", str(home)],
            env=environment(home),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            while time.perf_counter() - started < timeout:
                if process.poll() is not None:
                    log.seek(0)
                    output = log.read().decode(errors="replace")[-800:]
                    raise SystemExit(f"the app exited: {output}")
                try:
                    with opener.open(url, timeout=1) as response:
                        if response.status == 200:
                            return time.perf_counter() - started
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
                time.sleep(0.02)
            raise SystemExit(f"the app did not answer within {timeout:.0f} s")
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each measurement")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the app")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="companion-bench-") as folder:
        home = Path(folder) / "home"
        helps = [help_seconds(home) for _ in range(args.runs)]
        apps = [first_response_seconds(home, args.timeout) for _ in range(args.runs)]
    print(f"\nMedian (min–max) of {args.runs} runs, fresh COMPANION_HOME, no provider.\n")
    print("| measurement | median s | min s | max s |\n|---|---:|---:|---:|")
    for name, values in (("companion --help", helps), ("app: start → first GET / 200", apps)):
        print(
            f"| {name} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |"
        )


if __name__ == "__main__":
    main()
