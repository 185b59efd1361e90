"""The router and its guards, as tables over hand-written states."""

from __future__ import annotations

from typing import Any

import pytest

from graph.commands import call_signature
from graph.routing import NO_VISION_NOTICE, guard_reason, model_role, route, vision_missing
from graph.state import ExecutedCall, ToolCall
from prompts.templates import CAP_REASON, DUPLICATE_REASON


def call(name: str = "echo", **args: Any) -> ToolCall:
    return ToolCall(
        id=f"c-{name}-{len(args)}", name=name, args=args, raw_args=None, command=None, native=True
    )


def ran(name: str = "echo", ok: bool = True, **args: Any) -> ExecutedCall:
    return ExecutedCall(name=name, signature=call_signature(name, args), ok=ok, message_id=1)


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({}, "final"),
        ({"calls": []}, "final"),
        ({"calls": [call(text="a")]}, "execute_tool"),
        ({"calls": [call(text="a")], "executed": [ran(text="A!")]}, "build_context"),
        (
            {"calls": [call(text="a"), call("boom", text="b")], "executed": [ran(text="a")]},
            "execute_tool",
        ),
        ({"calls": [call(text="a")], "no_tools_reason": CAP_REASON}, "final"),
        ({"calls": [call(text="a")], "error": "down"}, "final"),
    ],
)
def test_route(state: dict, expected: str) -> None:
    assert route(state) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({}, None),
        ({"loops": 2}, None),
        ({"loops": 3}, CAP_REASON),
        ({"loops": 1, "calls": [call(text="x")], "executed": [ran(text="x")]}, DUPLICATE_REASON),
        ({"loops": 1, "calls": [call(text="y")], "executed": [ran(text="x")]}, None),
    ],
)
def test_guard_reason(state: dict, expected: str | None) -> None:
    assert guard_reason(state) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("executed", "expected"),
    [
        ([], "chat"),
        ([ran("image_generate")], "vision"),
        ([ran("image_analyze")], "vision"),
        ([ran("image_generate", ok=False)], "chat"),
        ([ran("image_generate"), ran("web_search")], "chat"),
    ],
)
def test_model_role(executed: list, expected: str) -> None:
    assert model_role({"executed": executed}) == expected


@pytest.mark.parametrize(
    ("role", "available", "expected"),
    [
        ("vision", False, NO_VISION_NOTICE),
        ("vision", True, None),
        ("chat", False, None),
        ("chat", True, None),
    ],
)
def test_vision_missing(role: str, available: bool, expected: str | None) -> None:
    assert vision_missing(role, available) == expected  # type: ignore[arg-type]
