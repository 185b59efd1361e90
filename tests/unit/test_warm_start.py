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


async def test_the_bundled_models_client_is_made_while_it_loads(
    make_context: Any, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The OpenAI client (about a second of imports) is made by the warm start, not by the
    first message: the first call reuses it."""
    from providers import local_model
    from providers.local_model import LazyLocalChatModel

    class Started:
        log_dir: Any = None
        model_path: Any = None

        def ensure(self, timeout: float = 180.0) -> str:
            return "http://127.0.0.1:9/v1"

    made: list[str] = []

    def connect(settings: Any) -> str:
        made.append("client")
        return "the client"

    monkeypatch.setattr(local_model, "local_server", Started)
    ctx = make_context(["Hello!"], provider="local")
    lazy = LazyLocalChatModel(settings=ctx.settings, connect=connect)
    lazy.connect_early().join(timeout=30)
    assert made == ["client"]
    assert lazy._model() == "the client" and made == ["client"]

    ctx.chat_model = lazy
    started: list[bool] = []
    monkeypatch.setattr(LazyLocalChatModel, "connect_early", lambda self: started.append(True))
    await setup.warm_local_model(ctx)
    assert started == [True] and len(server.warmed) == 1
