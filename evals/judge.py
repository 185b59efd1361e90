"""The judge: our own chat model behind deepeval's ``DeepEvalBaseLLM`` interface.

``ChatJudge`` wraps any LangChain chat model we already use (the scripted model in CI,
the local model, or the configured endpoint), so deepeval never builds a client of its
own and nothing leaves 127.0.0.1 unless that endpoint is remote. ``judged_metrics`` are
the optional GEval checks of ``--judge`` ("answers naturally from the tool result",
"stays in persona"), and ``style_metric`` "follows the style note". See docs/evals.md.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

# deepeval reads these when it is imported: no .env loading, no telemetry.
os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "1"
os.environ["DEEPEVAL_DISABLE_DOTENV"] = "1"

from deepeval.models import DeepEvalBaseLLM
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from deepeval.metrics import GEval
    from langchain_core.language_models import BaseChatModel

JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)

NATURAL_CRITERIA = (
    "The actual output answers the user's input directly and naturally, using the facts the "
    "context (tool results) provides, without inventing facts the context does not hold, "
    "and without mentioning tools, searches, commands, function calls or how the "
    "information was obtained."
)
PERSONA_CRITERIA = (
    "The actual output stays in the voice of a warm, caring personal companion: it speaks "
    "to the user as a friend would, in the user's language, and never describes itself as "
    "a program, a language model or a tool."
)
STYLE_CRITERIA = (
    "The user asked for this reply to take a particular form: {note!r}. The actual output "
    "follows that request in its shape (length, layout, tone as asked) while still "
    "answering the input."
)


class ChatJudge(DeepEvalBaseLLM):
    """A deepeval judge that asks one of our chat models."""

    def __init__(self, chat_model: BaseChatModel, name: str | None = None) -> None:
        self.chat_model = chat_model
        self.judge_name = name or str(getattr(chat_model, "model_name", "") or "companion-judge")
        super().__init__(self.judge_name)

    def load_model(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped chat model (deepeval keeps it as ``self.model``)."""
        return self.chat_model

    def generate(self, prompt: str, schema: type[BaseModel] | None = None, **_: Any) -> Any:
        """The model's answer to one prompt (parsed into ``schema`` when asked and possible)."""
        reply = self.chat_model.invoke([HumanMessage(content=prompt)])
        return _shaped(_content(reply.content), schema)

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None, **_: Any) -> Any:
        """Async ``generate``."""
        reply = await self.chat_model.ainvoke([HumanMessage(content=prompt)])
        return _shaped(_content(reply.content), schema)

    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        """The judge's name in deepeval's reports."""
        return self.judge_name


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _shaped(text: str, schema: type[BaseModel] | None) -> Any:
    """The schema instance when the text holds one as JSON; else the text (deepeval parses)."""
    if schema is None:
        return text
    found = JSON_OBJECT.search(text)
    if found:
        try:
            return schema.model_validate(json.loads(found[0]))
        except (json.JSONDecodeError, ValidationError):
            pass
    return text


def judged_metrics(judge: ChatJudge) -> list[GEval]:
    """The optional LLM-judged checks, built on our judge."""
    from deepeval.metrics import GEval
    from deepeval.test_case import SingleTurnParams

    return [
        GEval(
            name="answers naturally from the tool result",
            criteria=NATURAL_CRITERIA,
            evaluation_params=[
                SingleTurnParams.INPUT,
                SingleTurnParams.ACTUAL_OUTPUT,
                SingleTurnParams.CONTEXT,
            ],
            model=judge,
            threshold=0.5,
            async_mode=False,
        ),
        GEval(
            name="stays in persona",
            criteria=PERSONA_CRITERIA,
            evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT],
            model=judge,
            threshold=0.5,
            async_mode=False,
        ),
    ]


def style_metric(judge: ChatJudge, note: str) -> GEval:
    """Whether the answer takes the form a one-turn style note asked for."""
    from deepeval.metrics import GEval
    from deepeval.test_case import SingleTurnParams

    return GEval(
        name="follows the style note",
        criteria=STYLE_CRITERIA.format(note=note),
        evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT],
        model=judge,
        threshold=0.5,
        async_mode=False,
    )
