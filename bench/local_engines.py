"""The bundled model under each installed engine, through the HTTP path the app uses.

For the prebuilt xllamacpp and (where it is installed) the compiled llama-cpp-python, it
starts the supervised server (``providers.LocalServer``) and measures: the start until
``/v1/models`` answers (process start and model load), prompt processing (a long system
prompt, one token out), generation (a counting answer, tokens per second of wall time),
and what the server does with the native tool-call shapes the app sends (a streamed
automatic tool choice; an assistant message with ``content: null`` and a ``tool`` reply).

    python -m bench.local_engines --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench import quiet_environment
from providers import LocalServer
from providers.llama_server import COMPILED, PREBUILT, SERVED_NAME, Engine, installed

SYSTEM = "You are Companion, a warm and practical assistant who answers briefly. " * 45
COUNT = "Count from one to one hundred, in words, separated by commas."
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 80}},
            "required": ["city"],
        },
    },
}
ASKED = {"role": "user", "content": "What's the weather in Paris right now?"}
CALL = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
ANSWERED = [
    ASKED,
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"temperature_c": 18}'},
]


def post(url: str, **body: Any) -> tuple[httpx.Response, float]:
    """One chat completion and its wall time."""
    started = time.perf_counter()
    body = {"model": SERVED_NAME, "temperature": 0, **body}
    reply = httpx.post(f"{url}/chat/completions", json=body, timeout=300, trust_env=False)
    return reply, time.perf_counter() - started


def rates(url: str) -> tuple[float, float]:
    """Prompt tokens per second (uncached system prompt) and generated tokens per second."""
    nonce = {"role": "user", "content": f"Hello {time.perf_counter()}"}
    system = {"role": "system", "content": f"{time.perf_counter()} {SYSTEM}"}  # never cached
    reply, seconds = post(url, messages=[system, nonce], max_tokens=1)
    prompt = reply.json()["usage"]["prompt_tokens"] / seconds
    reply, seconds = post(url, messages=[{"role": "user", "content": COUNT}], max_tokens=200)
    return prompt, reply.json()["usage"]["completion_tokens"] / seconds


def tool_shapes(url: str) -> str:
    """What the server does with the app's native tool-call requests."""
    asked = {"messages": [ASKED], "tools": [WEATHER], "max_tokens": 48}
    streamed, _ = post(url, **asked, tool_choice="auto", stream=True)
    called = '"tool_calls"' in streamed.text
    history, _ = post(url, messages=ANSWERED, tools=[WEATHER], max_tokens=48)
    return (
        f"streamed auto choice: HTTP {streamed.status_code}"
        f"{' (a tool call)' if called else ''}; content null + tool reply: "
        f"HTTP {history.status_code}"
    )


def measure(engine: Engine, runs: int, logs: Path) -> str:
    """One table row for ``engine``: medians of ``runs`` starts and rate measurements."""
    starts, prompts, generated = [], [], []
    shapes = ""
    for _ in range(runs):
        server = LocalServer(engine=engine)
        server.log_dir = logs
        started = time.perf_counter()
        try:
            url = server.ensure()
            starts.append(time.perf_counter() - started)
            prompt, generation = rates(url)
            prompts.append(prompt)
            generated.append(generation)
            shapes = shapes or tool_shapes(url)
        finally:
            server.stop()
    return (
        f"| {engine} | {statistics.median(starts):.2f} | {statistics.median(prompts):.0f} "
        f"| {statistics.median(generated):.1f} | {shapes} |"
    )


def main() -> None:
    quiet_environment()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="starts of each engine")
    args = parser.parse_args()
    engines = [e for e in (PREBUILT, COMPILED) if installed(e)]
    with tempfile.TemporaryDirectory(prefix="companion-engines-") as folder:
        rows = [measure(engine, args.runs, Path(folder)) for engine in engines]
    print(f"\nMedian of {args.runs} server starts per engine, the bundled SmolLM2-135M.\n")
    print("| engine | start → /v1/models s | prompt tokens/s | generated tokens/s | tools |")
    print("|---|---:|---:|---:|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
