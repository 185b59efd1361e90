"""Build and compile the conversation graph.

START → build_context → call_model → route: execute_tool | build_context (tools off) | END;
execute_tool → build_context. The path map makes the drawn graph the real one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.context import Context
from graph.routing import ROUTES, Route, route
from graph.state import State
from nodes.build_context import build_context
from nodes.call_model import call_model
from nodes.execute_tool import execute_tool


async def _route(state: State) -> Route:
    """``route`` as a coroutine: LangGraph runs a plain-function router in a worker thread,
    a thread hop per model reply that costs more than the routing itself."""
    return route(state)


def build_graph() -> StateGraph[State, Context, State, State]:
    """The uncompiled graph."""
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("build_context", build_context)
    graph.add_node("call_model", call_model)
    graph.add_node("execute_tool", execute_tool)
    graph.add_edge(START, "build_context")
    graph.add_edge("build_context", "call_model")
    graph.add_conditional_edges(
        "call_model", _route, {k: (END if v == "__end__" else v) for k, v in ROUTES.items()}
    )
    graph.add_edge("execute_tool", "build_context")
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
