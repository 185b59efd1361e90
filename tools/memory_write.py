"""create_memory, update_memory, delete_memory: the model keeps its facts about the user.

Each call maps to one by-key write of the store (``remember``, ``revise``, ``forget``).
The result has the seed's shape: ``success`` and a ``message`` saying what changed (with
the memory's ``memory_id``), or ``success: false`` and the ``error`` (unknown category,
missing key, empty value, key already taken), a message that tells the model what to do
instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable
from typing import Any

from memory import Memory, MemoryRecordError
from memory.rules.memories import CATEGORIES
from tools.base import ToolContext, ToolSpec, writes_always

CATEGORY_HELP = (
    "identity = who the user is (name, age, home, job, family); principles = how they want "
    "to be treated or answered; focus = what they are busy with now (projects, goals, "
    "plans); signals = preferences, likes, dislikes and moods you noticed."
)
CATEGORY: dict[str, Any] = {
    "type": "string",
    "enum": list(CATEGORIES),
    "description": CATEGORY_HELP,
}
KEY: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 100,
    "description": 'A short name for the fact, e.g. "name", "favourite food", "job".',
}
VALUE: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 2000,
    "description": 'The fact itself, e.g. "Budi", "nasi goreng".',
}

CREATE_USE_WHEN = (
    "Save a new lasting fact when the user tells you something about themselves worth "
    "remembering across chats: their name, preferences, the people in their life, plans, "
    "health constraints."
)
CREATE_DESCRIPTION = (
    "Fails if the key already exists in that category (then use update_memory). Example: "
    "category identity, key name, value Budi."
)
UPDATE_USE_WHEN = "Change a saved fact when the user corrects it or it has changed."
DELETE_USE_WHEN = (
    "Forget a saved fact when the user takes it back, asks you to forget it, or it is no "
    "longer true."
)
ONE_CATEGORY = "`category` is only needed when the same key exists in more than one category."
UPDATE_DESCRIPTION = f"{ONE_CATEGORY} Example: key job, value nurse at the city hospital."
DELETE_DESCRIPTION = f"{ONE_CATEGORY} Example: key favourite drink."
SAVED = "Saved {category} / {key}: {value}"
UPDATED = "Updated {category} / {key}: {value}"
FORGOTTEN = "Forgot {category} / {key}"

CREATE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"category": CATEGORY, "key": KEY, "value": VALUE},
    "required": ["category", "key", "value"],
    "additionalProperties": False,
}
UPDATE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"category": CATEGORY, "key": KEY, "value": VALUE},
    "required": ["key", "value"],
    "additionalProperties": False,
}
DELETE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"category": CATEGORY, "key": KEY},
    "required": ["key"],
    "additionalProperties": False,
}

_CATEGORY_PREFIX = re.compile(rf"^\s*({'|'.join(CATEGORIES)})\b[\s/|:]*", re.IGNORECASE)


def _split_command(text: str) -> dict[str, Any]:
    """``[category] key: value``, ``category | key | value`` or a JSON object."""
    text = text.strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    args: dict[str, Any] = {}
    if "|" in text:
        parts = [part.strip() for part in text.split("|")]
        if parts[0].lower() in CATEGORIES:
            args["category"] = parts.pop(0).lower()
        pieces = [parts[0], " | ".join(parts[1:])] if len(parts) > 1 else parts
    else:
        found = _CATEGORY_PREFIX.match(text)
        if found:
            args["category"] = found[1].lower()
            text = text[found.end() :]
        pieces = re.split(r"\s*[:=]\s*", text, maxsplit=1)
    if pieces and pieces[0].strip():
        args["key"] = pieces[0].strip()
    if len(pieces) > 1 and pieces[1].strip():
        args["value"] = pieces[1].strip()
    return args


async def _result(writing: Awaitable[Memory], done: str) -> dict[str, Any]:
    """``success`` with ``done`` filled from the memory written, or ``success: false``
    with the store's reason."""
    try:
        memory = await writing
    except MemoryRecordError as exc:
        return {"success": False, "error": str(exc)}
    message = done.format(category=memory.category, key=memory.key, value=memory.value)
    return {"success": True, "message": message, "memory_id": memory.id}


async def create(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Save a new memory."""
    writing = ctx.store.remember(args["category"], args["key"], args["value"], ctx.now())
    return await _result(writing, SAVED)


async def update(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Change an existing memory's value."""
    writing = ctx.store.revise(args.get("category"), args["key"], args["value"], ctx.now())
    return await _result(writing, UPDATED)


async def delete(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Forget a memory."""
    return await _result(ctx.store.forget(args.get("category"), args["key"]), FORGOTTEN)


def format_write(result: dict[str, Any]) -> str:
    """One line: what changed, or the error."""
    if "error" in result:
        return f"Error: {result['error']}"
    return str(result["message"])


async def has_memories(ctx: ToolContext) -> bool:
    """Gate for changing or forgetting: there must be a memory to change."""
    return (await ctx.memory_gates()).memories


TOOLS = [
    ToolSpec(
        name="create_memory",
        use_when=CREATE_USE_WHEN,
        description=CREATE_DESCRIPTION,
        parameters=CREATE_PARAMETERS,
        run=create,
        role="memory_tool",
        command="create_memory",
        parse_command=_split_command,
        format=format_write,
        examples=("/create_memory identity name: Budi",),
        writes_memory=writes_always,
    ),
    ToolSpec(
        name="update_memory",
        use_when=UPDATE_USE_WHEN,
        description=UPDATE_DESCRIPTION,
        parameters=UPDATE_PARAMETERS,
        run=update,
        role="memory_tool",
        command="update_memory",
        parse_command=_split_command,
        available=has_memories,
        format=format_write,
        examples=("/update_memory focus project: finishing the thesis",),
        writes_memory=writes_always,
    ),
    ToolSpec(
        name="delete_memory",
        use_when=DELETE_USE_WHEN,
        description=DELETE_DESCRIPTION,
        parameters=DELETE_PARAMETERS,
        run=delete,
        role="memory_tool",
        command="delete_memory",
        parse_command=_split_command,
        available=has_memories,
        format=format_write,
        examples=("/delete_memory signals favourite drink",),
        writes_memory=writes_always,
    ),
]
