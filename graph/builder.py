"""Build and compile the conversation graph.

START → build_context → call_model → route: tools → execute_tool | final → END |
repeat → repeat_nudge; execute_tool → after_tools: loop → build_context | loop_cap →
cap_nudge; each nudge node → build_context (tools off, one last call, then final). The
routers' path maps (graph.routing) make the drawn graph the real one, guard edges
labelled with their names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Hashable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.context import Context
from graph.routing import AFTER_TOOLS, GUARDS, ROUTES, after_tools, route
from graph.state import State
from nodes.build_context import build_context
from nodes.call_model import call_model
from nodes.execute_tool import execute_tool
from nodes.nudges import cap_nudge, repeat_nudge


class _Router(Runnable[State, str]):
    """A pure router as the graph calls it: inline on the event loop, untraced. LangGraph
    wraps a plain-function router in callbacks and runs it as a task of its own (a
    coroutine) or in a worker thread (a function): per step, more than the routing costs."""

    def __init__(self, router: Callable[[State], str]) -> None:
        self.router = router
        self.name = router.__name__

    def invoke(self, input: State, config: RunnableConfig | None = None, **kwargs: Any) -> str:
        """The router's outcome for this state."""
        return self.router(input)

    async def ainvoke(
        self, input: State, config: RunnableConfig | None = None, **kwargs: Any
    ) -> str:
        """The same, without leaving the event loop."""
        return self.router(input)


def _path_map(outcomes: Iterable[tuple[str, str]]) -> dict[Hashable, str]:
    return {outcome: node for outcome, node in outcomes}


def build_graph() -> StateGraph[State, Context, State, State]:
    """The uncompiled graph."""
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("build_context", build_context)
    graph.add_node("call_model", call_model)
    graph.add_node("execute_tool", execute_tool)
    graph.add_node(GUARDS["loop_cap"].node, cap_nudge)
    graph.add_node(GUARDS["repeat"].node, repeat_nudge)
    graph.add_edge(START, "build_context")
    graph.add_edge("build_context", "call_model")
    graph.add_conditional_edges("call_model", _Router(route), _path_map(ROUTES.items()))
    graph.add_conditional_edges(
        "execute_tool", _Router(after_tools), _path_map(AFTER_TOOLS.items())
    )
    for edge in GUARDS.values():
        graph.add_edge(edge.node, "build_context")
    return graph


def compile_graph(checkpointer: Any = None) -> CompiledStateGraph[State, Context, State, State]:
    """The compiled graph; pass a LangGraph checkpointer for debugging/time travel."""
    return build_graph().compile(checkpointer=checkpointer, name="companion")


@asynccontextmanager
async def checkpointed_graph(
    path: Path | str,
) -> AsyncIterator[CompiledStateGraph[State, Context, State, State]]:
    """The graph with LangGraph's SQLite checkpointer, for debugging and time travel inside
    a turn (thread id = ``session:user_message_id``). History is never rebuilt from it,
    and the prompt is never in it (``State.context`` and ``history`` are untracked)."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield compile_graph(checkpointer=saver)


def mermaid() -> str:
    """The compiled graph as Mermaid text (offline)."""
    return compile_graph().get_graph().draw_mermaid()
