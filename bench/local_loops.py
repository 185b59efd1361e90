"""The bundled model's loops: a short chat's reply with the loop ended against the same
reply let run to the token cap (issue 23's follow-up, ``nodes.repeats``).

The bundled SmolLM2-135M on its supervised local server, the app's own short system
message and chat model (``providers.chat.make_chat_model``: temperature 0.3, 512 tokens
at most), each of ``CHATS`` sent ``--runs`` times, the two ways interleaved so load hits
both alike, through ``nodes.call_model.stream_reply`` as a turn calls it. It prints, per
way: how many replies ran to the cap, how many were ended as a loop, the median and the
total seconds a reply took, and the median reply's length. The replies differ from run to
run (temperature 0.3): read the counts over many runs.

    python -m bench.local_loops --runs 4
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime

from langchain_core.messages import HumanMessage, SystemMessage

from bench import quiet_environment
from config.settings import Settings
from nodes.build_context import system_text
from nodes.call_model import stream_reply
from providers.chat import LOCAL_MAX_TOKENS, make_chat_model
from providers.llama_server import local_server
from tools.registry import builtin_specs

# Short chats a newcomer opens with (the first-run examples are elsewhere).
CHATS = (
    "Hi! How are you today?",
    "I had a long day at work.",
    "Tell me about yourself.",
    "What should I cook for dinner tonight?",
    "Can you recommend a good book?",
    "I feel a bit lonely this evening.",
    "What is your favourite season and why?",
    "Give me a tip to sleep better.",
    "My cat knocked over my tea again.",
    "What do you like to talk about?",
)
WAYS = {"let run": False, "loop ended": True}


async def reply(model: object, system: str, text: str, end_loops: bool) -> tuple[float, str, str]:
    """Seconds the reply took, how it finished, its text."""
    started = time.perf_counter()
    messages = [SystemMessage(system), HumanMessage(text)]
    answer = await stream_reply(model, messages, None, end_loops=end_loops)
    finish = str(answer.response_metadata.get("finish_reason") or "")
    return time.perf_counter() - started, finish, str(answer.content)


async def run(runs: int, chats: tuple[str, ...] = CHATS) -> dict[str, list[tuple[float, str, str]]]:
    settings = Settings()
    system = system_text(settings, builtin_specs(), datetime.now(UTC))
    model = make_chat_model(settings)
    found: dict[str, list[tuple[float, str, str]]] = {way: [] for way in WAYS}
    await reply(model, system, "Hello.", False)  # the prompt's prefix in the cache
    for n in range(runs):
        for text in chats:
            ways = list(WAYS.items())
            for way, end_loops in ways if n % 2 == 0 else ways[::-1]:
                found[way].append(await reply(model, system, text, end_loops))
    return found


def main(argv: list[str] | None = None) -> None:
    quiet_environment()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="times each chat is sent, per way")
    parser.add_argument("--chats", type=int, default=len(CHATS), help="the first N chats only")
    args = parser.parse_args(argv)
    chats = CHATS[: args.chats]
    try:
        found = asyncio.run(run(args.runs, chats))
    finally:
        local_server().stop()
    total = len(chats) * args.runs
    print(f"\nThe bundled SmolLM2-135M, {total} short replies per way, interleaved.\n")
    print(
        f"| way | ran to the cap ({LOCAL_MAX_TOKENS} tokens) | ended as a loop | median s "
        "| total s | median characters |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for way, replies in found.items():
        capped = sum(finish == "length" for _, finish, _ in replies)
        ended = sum(finish == "repeating" for _, finish, _ in replies)
        seconds = [s for s, _, _ in replies]
        chars = statistics.median(len(text) for _, _, text in replies)
        print(
            f"| {way} | {capped}/{total} | {ended}/{total} | {statistics.median(seconds):.2f} "
            f"| {sum(seconds):.1f} | {chars:.0f} |"
        )


if __name__ == "__main__":
    main()
