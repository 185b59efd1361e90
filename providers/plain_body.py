"""The OpenAI SDK's chat-completions call, with a plain JSON request sent as it is.

``openai``'s ``AsyncCompletions.create`` runs every request through its type-driven
transform (``async_maybe_transform``): a recursive walk of the messages and tool schemas
against the request's TypedDicts, to rename aliased keys and encode file inputs. Chat
completions have neither, so for the JSON ChatOpenAI builds (dicts, lists, strings,
numbers) the output is the input; the walk still cost 8.8 ms of CPU per request for a
system prompt, 25 messages and 9 tool schemas on this machine, more than the rest of a
turn's own work, and it bounded ``bench.concurrency`` (every turn's CPU is on one event
loop). ``PlainCompletions.create`` sends such a body as it is, through the SDK's own
``_post`` (the same headers, retries, timeout, errors and stream classes); a body with
anything else (a file, an iterator, a type the walk would convert) takes the SDK's path.

A streamed answer comes back the same way (``PlainChunks``): each server-sent chunk as
the JSON dict the server sent, which is what ChatOpenAI reads (it ``model_dump``s the
SDK's pydantic ``ChatCompletionChunk`` back into that dict): building and dumping the
model cost 171 µs of CPU per chunk, a third of a streamed answer's own work. The SDK's
error events and the stream's closing are unchanged (its own ``AsyncStream`` reads it).

``plain_bodies(model)`` puts it on a ChatOpenAI made by ``providers.chat``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from openai import AsyncStream, NotGiven, Omit
from openai._base_client import make_request_options
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import ChatCompletion

# create()'s keyword arguments that are request options, not part of the body
OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")
JSON_LEAVES = (str, int, float, bool, type(None))


def is_plain_json(value: Any) -> bool:
    """Whether ``value`` is made only of dicts with string keys, lists and JSON scalars:
    what the SDK's transform returns unchanged for a chat-completions request."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, JSON_LEAVES):
            continue
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            return False
    return True


class PlainChunks(AsyncStream[object]):
    """A streamed chat completion's chunks as the dicts the server sent (the SDK returns
    the parsed JSON as it is for a stream of ``object``). A choice without a ``delta``
    gets ``None``, as the SDK's model gave it: ChatOpenAI indexes ``choice["delta"]``."""

    async def __stream__(self) -> AsyncIterator[object]:
        async for chunk in super().__stream__():
            if isinstance(chunk, dict):
                for choice in chunk.get("choices") or ():
                    if isinstance(choice, dict):
                        choice.setdefault("delta", None)
            yield chunk


class PlainCompletions(AsyncCompletions):
    """``chat.completions`` whose ``create`` skips the transform for a plain JSON body."""

    async def create(self, **params: Any) -> Any:
        """As the SDK's ``create``; a plain JSON body is posted as it is."""
        body = {
            key: value
            for key, value in params.items()
            if key not in OPTIONS and not isinstance(value, Omit | NotGiven)
        }
        if "response_format" in body or not is_plain_json(body):
            return await super().create(**params)  # the SDK validates and converts those
        options: Mapping[str, Any] = {key: params[key] for key in OPTIONS if key in params}
        stream = bool(body.get("stream"))
        return await self._post(
            "/chat/completions",
            body=body,
            options=make_request_options(**options, security={"bearer_auth": True}),
            cast_to=ChatCompletion,
            stream=stream,
            stream_cls=PlainChunks,
        )


def plain_bodies(model: Any) -> Any:
    """``model`` (a ChatOpenAI) with its async chat-completions client replaced by a
    ``PlainCompletions`` on the same OpenAI client; returned for chaining."""
    model.async_client = PlainCompletions(model.root_async_client)
    return model
