"""call_model tells a provider's failure from a bug in Companion, and logs both."""

from __future__ import annotations

import logging

import httpx
import openai
import pytest

from graph.runner import run_turn
from providers import ProviderError

REQUEST = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (openai.APIConnectionError(request=REQUEST), "could not be reached"),
        (ProviderError("the local model server stopped (signal 11)"), "signal 11"),
    ],
)
async def test_provider_failure_is_reported_as_the_providers(
    make_context, caplog, exc, expected
) -> None:
    ctx = make_context([exc])
    with caplog.at_level(logging.ERROR, logger="companion"):
        result = await run_turn(ctx, "s1", "hello?")
    assert "couldn't reach the language model" in result.answer
    assert expected in result.answer
    assert ctx.store.blocking.messages("s1")[0].content == "hello?"
    logged = [r for r in caplog.records if r.name == "companion.call_model"]
    assert logged and logged[0].exc_info is not None
    assert logged[0].exc_info[0] is type(exc)


REFUSED = httpx.Response(401, request=REQUEST)


@pytest.mark.parametrize(
    ("exc", "advice"),
    [
        (openai.AuthenticationError("no", response=REFUSED, body=None), "Check the key"),
        (openai.APITimeoutError(request=REQUEST), "try again in a moment"),
    ],
)
async def test_the_advice_matches_the_cause(make_context, exc, advice) -> None:
    ctx = make_context([exc])
    result = await run_turn(ctx, "s1", "hello?")
    assert advice in result.answer


async def test_a_bug_is_not_blamed_on_the_provider(make_context, caplog) -> None:
    ctx = make_context([TypeError("unsupported operand")])
    with caplog.at_level(logging.ERROR, logger="companion"):
        result = await run_turn(ctx, "s1", "hello?")
    assert "couldn't reach" not in result.answer
    assert "something went wrong inside Companion" in result.answer
    assert "TypeError: unsupported operand" in result.answer
    assert str(ctx.settings.log_file) in result.answer
    stored = ctx.store.blocking.messages("s1")
    assert stored[0].content == "hello?"
    assert stored[-1].meta["error"] is True and stored[-1].meta["internal"] is True
    logged = [r for r in caplog.records if r.name == "companion.call_model"]
    assert logged and logged[0].exc_info is not None and logged[0].exc_info[0] is TypeError


async def test_no_chat_model_says_to_choose_one_and_calls_nothing(make_context) -> None:
    ctx = make_context([AssertionError("the model must not be called")], chat_model=None)
    result = await run_turn(ctx, "s1", "hello?")
    assert "I can't answer yet: no chat model is set" in result.answer
    assert "COMPANION_CHAT_MODEL" in result.answer and "try again" not in result.answer
    assert ctx.store.blocking.messages("s1")[0].content == "hello?"
