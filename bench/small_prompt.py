"""The bundled model's short system prompt against the full one (issue 23, item 4).

One supervised local server (``providers.LocalServer``, the bundled SmolLM2-135M), the
app's own system message for the embedded default (``nodes.build_context.system_text``:
the full one, and ``compact``, what the app now sends in commands mode), runs interleaved
so load hits both alike. It prints, per prompt: its tokens; the time to the first token
with nothing cached (a number before the system message defeats the prefix cache: what a
message sent before the warm start has finished pays), median of ``--runs``; and, for
``QUESTIONS`` (each wanting one command, or none), how often the reply's first line is
that command at temperature 0. That last figure is the model's, on these prompts only:
``companion eval --model local`` is the eval.

    python -m bench.small_prompt --runs 5
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench import quiet_environment
from config.settings import Settings
from nodes.build_context import system_text
from providers import LocalServer
from providers.llama_server import SERVED_NAME
from tools.registry import builtin_specs

# (the person's message, the command its reply should open with; "" = no command)
QUESTIONS = (
    ("What's the weather in Tokyo right now?", "/weather"),
    ("Search the web for the USD to JPY exchange rate.", "/web_search"),
    ("Remember that my favourite tea is jasmine.", "/create_memory"),
    ("What did I tell you last Thursday about dinner?", "/memory_search"),
    ("What is 12 times 7?", ""),
    ("Hi! How are you today?", ""),
)


def prompts() -> dict[str, str]:
    """The full and the short system message of the embedded default, all tools on."""
    settings = Settings()
    now = datetime.now(UTC)
    tools = builtin_specs()
    full = system_text(dataclasses.replace(settings, provider="openai-compatible"), tools, now)
    return {"full": full, "compact": system_text(settings, tools, now)}


def first_token(url: str, system: str, question: str) -> tuple[float, int, str]:
    """Seconds until the first streamed token, the prompt's tokens, the reply's text."""
    body = {
        "model": SERVED_NAME,
        "temperature": 0,
        "max_tokens": 24,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": question},
        ],
    }
    started, first, tokens, text = time.perf_counter(), 0.0, 0, ""
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=300) as reply:
        for line in reply.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = httpx.Response(200, content=line[6:]).json()
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece and not first:
                    first = time.perf_counter() - started
                text += piece
            tokens = (chunk.get("usage") or {}).get("prompt_tokens", tokens)
    return first, tokens, text


def chose(text: str, wanted: str) -> bool:
    """True when the reply opens with the wanted command (or with none when none is)."""
    opening = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    return opening == wanted if wanted else not opening.startswith("/")


def main(argv: list[str] | None = None) -> None:
    quiet_environment()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="uncached first tokens per prompt")
    args = parser.parse_args(argv)
    systems = prompts()
    waits: dict[str, list[float]] = {name: [] for name in systems}
    sizes: dict[str, int] = {}
    right = dict.fromkeys(systems, 0)
    with tempfile.TemporaryDirectory(prefix="companion-small-prompt-") as folder:
        server = LocalServer()
        server.log_dir = Path(folder)
        try:
            url = server.ensure()
            for run in range(args.runs):
                for name, system in systems.items():
                    fresh = f"{time.perf_counter()}\n{system}"  # never in the prefix cache
                    seconds, sizes[name], _ = first_token(url, fresh, f"Hello ({run})")
                    waits[name].append(seconds)
            for name, system in systems.items():  # one prompt's questions share its cache
                for question, wanted in QUESTIONS:
                    right[name] += chose(first_token(url, system, question)[2], wanted)
        finally:
            server.stop()
    full = statistics.median(waits["full"])
    print(f"\nThe bundled SmolLM2-135M, {args.runs} interleaved runs per prompt (medians).\n")
    print("| system message | tokens | first token, uncached s | vs full | command right |")
    print("|---|---:|---:|---:|---:|")
    for name in systems:
        median = statistics.median(waits[name])
        print(
            f"| {name} | {sizes[name]} | {median:.2f} | {median / full:.2f}x "
            f"| {right[name]}/{len(QUESTIONS)} |"
        )


if __name__ == "__main__":
    main()
