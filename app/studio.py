"""Companion served by LangGraph's Agent Server: ``langgraph dev``, Studio, the SDK.

``langgraph.json`` names ``graph`` here. A thread speaks the messages convention
(``{"messages": [{"role": "user", "content": "…"}]}``); each run answers the thread's
newest user message with the app's own turn (graph.runner.stream_turn over the compiled
graph of graph.builder, the ``companion`` step, drawn inside this one), for the person
the server runs as: the home's single person, or ``COMPANION_USER`` when accounts are on.
A thread is a chat: its first run starts a chat titled by its first message (the app's
sidebar lists it), and the thread's state keeps that chat's id, so later runs go on with
it. The person's store keeps every message; the thread's ``messages`` are what Studio shows.
"""

from __future__ import annotations

import asyncio
import os
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

from app.chat_handlers import ensure_session
from graph.builder import compile_graph
from graph.context import Context
from graph.events import Answer
from graph.runner import RECURSION_LIMIT, stream_turn
from graph.setup import ContextFactory, People

COMPANION = compile_graph()
_people: dict[str, Any] = {}


class Thread(TypedDict, total=False):
    """A served thread: its conversation as Studio shows it, and the chat it is."""

    messages: Annotated[list[AnyMessage], add_messages]
    session_id: str


def person_factory() -> ContextFactory:
    """The ContextFactory of the person this server runs as (one ``People`` per process;
    opening it reads files: call it in a thread)."""
    people = _people.get("people")
    if people is None:
        people = _people["people"] = People()
    factory = people.factory(os.environ.get("COMPANION_USER") if people.accounts_on else None)
    _ = factory.store  # the store opens here, off the event loop
    return factory


async def person_context() -> Context:
    """The Context of the person this server runs as."""
    factory = await asyncio.to_thread(person_factory)
    return await factory()


def newest_request(messages: list[AnyMessage]) -> str:
    """The text of the thread's newest user message ("" when there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text
    return ""


async def companion(state: Thread) -> dict[str, Any]:
    """Answer the thread's newest user message as the app does, in the thread's chat."""
    ctx = await person_context()
    text = newest_request(state.get("messages") or [])
    session_id = await ensure_session(ctx.store, state.get("session_id"), text)
    answer = ""
    inside = {"recursion_limit": RECURSION_LIMIT}  # the served run's thread and stream
    async for event in stream_turn(ctx, session_id, text, graph=COMPANION, config=inside):
        if isinstance(event, Answer):
            answer = event.text
    return {"messages": [AIMessage(answer)], "session_id": session_id}


def build() -> CompiledStateGraph[Thread, None, Thread, Thread]:
    """The served graph: one ``companion`` step, the app's graph inside it."""
    served = StateGraph(Thread)
    served.add_node("companion", companion)
    served.add_edge(START, "companion")
    return served.compile(name="companion")


graph = build()
