"""Start-up time: ``companion --help``, the app until it answers its first HTTP request,
and the first answer's first token.

All run the installed ``companion`` entry point as a subprocess (the one beside this
Python), with a fresh COMPANION_HOME and no provider configured (the bundled local model),
so nothing but 127.0.0.1 is involved. The app time is from process start until ``GET /``
returns 200. The first token is timed as a person sees it: the app is started, and
``--typing`` seconds after its page serves (a person reading it and typing) a message is
sent through the app's ``/send_streamed`` API with gradio_client; the time is from sending until
the first update whose chat holds answer text.

    python -m bench.startup --runs 5
    python -m bench.startup --runs 3 --first-token --typing 0 --typing 10
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import QUIET

PROVIDER_VARIABLES = ("OPENROUTER_API_KEY", "COMPANION_API_KEY", "COMPANION_BASE_URL")
FIRST_MESSAGE = "Hi! What is 2+2?"


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


@contextmanager
def running_app(home: Path, timeout: float) -> Iterator[tuple[str, float]]:
    """The app started on a free port: its URL and the seconds until ``GET /`` was 200."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        process = subprocess.Popen(
            [*companion_command(), "--port", str(port), "--home", str(home)],
            env=environment(home),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_page(process, url, log, started + timeout)
            yield url, time.perf_counter() - started
        finally:
            stop(process)


def wait_for_page(process: subprocess.Popen[bytes], url: str, log: Any, deadline: float) -> None:
    """Until ``GET url`` answers 200; the app's output if it exits first."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while time.perf_counter() < deadline:
        if process.poll() is not None:
            log.seek(0)
            output = log.read().decode(errors="replace")[-800:]
            raise SystemExit(f"the app exited: {output}")
        try:
            with opener.open(url, timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.02)
    raise SystemExit("the app did not answer in time")


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate the app (its local model server stops with it)."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def first_response_seconds(home: Path, timeout: float) -> float:
    """Seconds from starting the app until ``GET /`` answers 200."""
    with running_app(home, timeout) as (_, seconds):
        return seconds


def answer_text(update: Any) -> str:
    """The text of the answer in a ``/send_streamed`` update (its chat is the first output)."""
    chat = update[0] if isinstance(update, list | tuple) and update else None
    if not isinstance(chat, list) or not chat:  # an update that leaves the chat as it is
        return ""
    last = chat[-1]
    if last.get("role") != "assistant" or (last.get("metadata") or {}).get("title"):
        return ""
    content = last.get("content")
    if isinstance(content, str):
        return content.strip()
    return " ".join(p.get("text", "") for p in content or [] if isinstance(p, dict)).strip()


def first_token_seconds(home: Path, timeout: float, typing: float) -> float:
    """Seconds from sending the first message (``typing`` s after the page served) until
    the first update with answer text."""
    from gradio_client import Client

    with running_app(home, timeout) as (url, _):
        client = Client(url, verbose=False, analytics_enabled=False)
        time.sleep(typing)
        sent = time.perf_counter()
        job = client.submit(
            {"text": FIRST_MESSAGE, "files": []}, "", False, api_name="/send_streamed"
        )
        for update in job:
            if answer_text(update):
                return time.perf_counter() - sent
        raise SystemExit(f"no answer text in the /send_streamed updates: {job.outputs()[-1:]}")


def row(name: str, values: list[float]) -> str:
    """One Markdown table row: median, min, max."""
    return f"| {name} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each measurement")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the app")
    parser.add_argument(
        "--first-token", action="store_true", help="only the first answer's first token"
    )
    parser.add_argument(
        "--typing",
        type=float,
        action="append",
        help="seconds between the page serving and sending (repeatable; default 0)",
    )
    args = parser.parse_args()

    rows: list[tuple[str, list[float]]] = []
    with tempfile.TemporaryDirectory(prefix="companion-bench-") as folder:
        if not args.first_token:
            home = Path(folder) / "home"
            helps = [help_seconds(home) for _ in range(args.runs)]
            apps = [first_response_seconds(home, args.timeout) for _ in range(args.runs)]
            rows += [("companion --help", helps), ("app: start → first GET / 200", apps)]
        for typing in args.typing or [0.0]:
            homes = [Path(folder) / f"first-{typing}-{run}" for run in range(args.runs)]
            firsts = [first_token_seconds(h, args.timeout, typing) for h in homes]
            rows.append((f"first token after sending ({typing:g} s after the page served)", firsts))
    print(f"\nMedian (min–max) of {args.runs} runs, fresh COMPANION_HOME, no provider.\n")
    print("| measurement | median s | min s | max s |\n|---|---:|---:|---:|")
    for name, values in rows:
        print(row(name, values))


if __name__ == "__main__":
    main()
