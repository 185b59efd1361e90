"""The router and its guards, as tables over hand-written states."""

from __future__ import annotations

from typing import Any

import pytest

from graph.commands import call_signature
from graph.routing import (
    NO_VISION_NOTICE,
    ToolKinds,
    after_tools,
    clearance,
    legs,
    model_role,
    route,
    vision_missing,
)
from graph.state import ExecutedCall, ToolCall
from prompts.templates import CAP_REASON


def call(name: str = "echo", **args: Any) -> ToolCall:
    return ToolCall(
        id=f"c-{name}-{len(args)}", name=name, args=args, raw_args=None, command=None, native=True
    )


def ran(name: str = "echo", ok: bool = True, **args: Any) -> ExecutedCall:
    signature = call_signature(name, args)
    return ExecutedCall(name=name, signature=signature, ok=ok, message_id=1, gist="")


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({}, "final"),
        ({"calls": []}, "final"),
        ({"calls": [call(text="a")]}, "tools"),
        ({"calls": [call(text="a")], "executed": [ran(text="A!")]}, "repeat"),
        (
            {"calls": [call(text="a"), call("boom", text="b")], "executed": [ran(text="a")]},
            "tools",
        ),
        # the one call after a guard ends the turn, whatever it attempted
        ({"calls": [call(text="a")], "no_tools_reason": CAP_REASON}, "final"),
        ({"calls": [call(text="a")], "error": "down"}, "final"),
        ({"calls": [call(text="a")], "loops": 2, "executed": [ran(text="b")]}, "tools"),
    ],
)
def test_route(state: dict, expected: str) -> None:
    assert route(state) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({}, "loop"),
        ({"loops": 1}, "loop"),
        ({"loops": 2}, "loop"),
        ({"loops": 3}, "loop_cap"),
        ({"loops": 3, "executed": [ran(text="x")], "calls": []}, "loop_cap"),
    ],
)
def test_after_tools(state: dict, expected: str) -> None:
    assert after_tools(state) == expected  # type: ignore[arg-type]


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


# --- the lethal trifecta: private data, outside content, an outbound request -----------

KINDS = ToolKinds(
    private=frozenset({"memory_search", "memory_sql"}),
    outside=frozenset({"web_search", "image_analyze"}),
)
PAGE = [ran("web_search", query="cafe")]
SECRETS = [ran("memory_sql", sql="SELECT value FROM memories")]


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({}, set()),
        ({"executed": [ran("weather", location="Tokyo")]}, set()),
        ({"memories_shown": True}, {"private"}),
        ({"executed": SECRETS}, {"private"}),
        ({"executed": [ran("memory_search", ok=False, query="x")]}, {"private"}),
        ({"executed": PAGE}, {"outside"}),
        ({"executed": [ran("image_analyze")]}, {"outside"}),
        ({"window_tools": ["web_search"]}, {"outside"}),  # a page read in an earlier turn
        ({"window_tools": ["memory_search", "weather"]}, {"private"}),
        ({"window_tools": ["web_search"], "memories_shown": True}, {"private", "outside"}),
        ({"executed": [*PAGE, *SECRETS]}, {"private", "outside"}),
    ],
)
def test_legs(state: dict, expected: set[str]) -> None:
    assert legs(state, KINDS) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "outbound", "writes", "expected"),
    [
        # an outbound request waits only when the other two legs are both in
        ({}, True, False, "run"),
        ({"memories_shown": True}, True, False, "run"),  # the first search of a turn
        ({"executed": PAGE}, True, False, "run"),  # no private data: nothing to leak
        ({"executed": [*PAGE, *SECRETS]}, True, False, "confirm"),
        ({"executed": PAGE, "memories_shown": True}, True, False, "confirm"),
        ({"window_tools": ["web_search"], "memories_shown": True}, True, False, "confirm"),
        ({"window_tools": ["web_search", "memory_sql"]}, True, False, "confirm"),
        ({"executed": [*PAGE, *SECRETS]}, False, False, "run"),  # reading is not sending
        # a memory change is a proposal while outside content is in the context
        ({}, False, True, "run"),
        ({"executed": SECRETS}, False, True, "run"),
        ({"executed": PAGE}, False, True, "propose"),
        ({"window_tools": ["image_analyze"]}, False, True, "propose"),  # the next turn too
    ],
)
def test_clearance(state: dict, outbound: bool, writes: bool, expected: str) -> None:
    assert clearance(state, KINDS, outbound=outbound, writes=writes) == expected  # type: ignore[arg-type]
