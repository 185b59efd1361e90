"""A tab's queue stream outlives its events (app.queue_streams), on a real Gradio server.

Without ``OpenQueueStreams`` Gradio sends ``close_stream`` as soon as the tab's last
pending event completes; a message sent in that instant was lost in the browser.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import gradio as gr
import httpx
import pytest
from starlette.middleware import Middleware

from app.queue_streams import HELD, OpenQueueStreams
from tests.e2e.harness import free_port

SESSION = "tab-one"
QUIET_SECONDS = 1.5


def launched(keep_open: bool) -> tuple[gr.Blocks, str, gr.Button]:
    with gr.Blocks() as demo:
        button = gr.Button("go")
        out = gr.Textbox()
        button.click(lambda: "done", None, out)
    demo.queue()
    stack = [Middleware(OpenQueueStreams, blocks=demo)] if keep_open else []
    _, url, _ = demo.launch(
        server_port=free_port(),
        prevent_thread_lock=True,
        quiet=True,
        ssr_mode=False,
        app_kwargs={"middleware": stack},
    )
    return demo, str(url).rstrip("/"), button


@pytest.fixture(params=[True, False], ids=["kept-open", "gradio-alone"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[gr.Blocks, str, gr.Button, bool]]:
    demo, url, button = launched(request.param)
    try:
        yield demo, url, button, request.param
    finally:
        demo.close()


async def join(client: httpx.AsyncClient, url: str, button: gr.Button) -> str:
    body = {"data": [], "event_data": None, "fn_index": 0, "trigger_id": button._id}
    answer = await client.post(
        f"{url}/gradio_api/queue/join", json={**body, "session_hash": SESSION}
    )
    answer.raise_for_status()
    return str(answer.json()["event_id"])


async def messages(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, object]]:
    async for line in lines:
        if line.startswith("data:"):
            yield json.loads(line[5:])


async def until_completed(stream: AsyncIterator[dict[str, object]], event_id: str) -> None:
    async for message in stream:
        if message.get("msg") == "process_completed" and message.get("event_id") == event_id:
            return


async def test_the_stream_stays_open_after_the_last_event_and_carries_the_next(server) -> None:
    demo, url, button, keep_open = server
    async with httpx.AsyncClient(timeout=10) as client:
        first = await join(client, url, button)
        queue_data = f"{url}/gradio_api/queue/data?session_hash={SESSION}"
        async with client.stream("GET", queue_data) as response:
            stream = messages(response.aiter_lines())
            await asyncio.wait_for(until_completed(stream, first), 10)
            try:
                after = await asyncio.wait_for(anext(stream), QUIET_SECONDS)
            except TimeoutError:
                after = None
            if not keep_open:  # what lost the message: Gradio closes the tab's stream
                assert after is not None and after.get("msg") == "close_stream"
                return
            assert after is None or after.get("msg") != "close_stream"
            second = await join(client, url, button)
            await asyncio.wait_for(until_completed(stream, second), 10)
    # The tab left: nothing of it is held any more.
    for _ in range(50):
        if SESSION not in demo._queue.pending_event_ids_session:
            break
        await asyncio.sleep(0.1)
    assert HELD not in demo._queue.pending_event_ids_session.get(SESSION, set())
