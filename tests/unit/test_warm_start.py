"""The bundled model's warm start (issue 23, item 2): at start the app and ``companion chat``
have the local server load the model and process a new chat's first system message, the
very text the first turn then sends, so it is in the server's prefix cache; with another
model nothing starts."""

from __future__ import annotations

from typing import Any

import pytest

from graph import setup
from graph.runner import run_turn


class FakeServer:
    """Records what it was asked to warm (the real one starts llama.cpp's server)."""

    def __init__(self) -> None:
        self.warmed: list[str] = []
        self.log_dir: Any = None

    def warm(self, system_prompt: str = "") -> None:
        self.warmed.append(system_prompt)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    fake = FakeServer()
    monkeypatch.setattr(setup, "local_server", lambda: fake)
    return fake


@pytest.mark.parametrize("mode", ["native", "commands"])
async def test_the_warmed_prompt_is_the_first_turns_system_message(
    make_context: Any, server: FakeServer, mode: str
) -> None:
    ctx = make_context(["Hello!"], provider="local", tool_mode=mode)
    await setup.warm_local_model(ctx)
    assert server.log_dir == ctx.settings.home / "logs"
    await run_turn(ctx, "s1", "hi there")
    first = ctx.chat_model.calls[0]["messages"][0].content
    assert server.warmed == [first]


async def test_another_model_starts_nothing(make_context: Any, server: FakeServer) -> None:
    await setup.warm_local_model(make_context(["Hello!"]))
    assert server.warmed == []
