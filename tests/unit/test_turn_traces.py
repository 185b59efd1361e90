"""Every turn's trace is kept with its answer, and the Graph tab shows any turn from it
(issue 25, item 6): the steps, each model call's prompt as sent, the tokens, each tool's
arguments and result, the person's rating; all as plain text."""

from __future__ import annotations

from datetime import UTC, datetime

from langchain_core.messages import AIMessage, HumanMessage
from markdown_it import MarkdownIt

from app.graph_tab import chat_turns
from app.graph_view import NOT_KEPT, turn_label, turn_markdown, verbatim
from graph.events import Answer
from graph.runner import kept_trace, run_turn, stream_turn
from memory import Feedback
from nodes.call_model import MAX_PROMPT_CHARS, _sent_message, token_counts
from tests.support.chat_model import tool_call

HOSTILE = '![pin](http://127.0.0.1:9/?x=1) <img src=x onerror="alert(1)"> ```` [a](b)'


def rendered(markdown: str) -> str:
    """As gr.Markdown renders it: CommonMark with raw HTML and tables on."""
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


async def test_each_answer_keeps_its_turns_trace_with_the_prompts_sent(make_context) -> None:
    ctx = make_context([tool_call("echo", {"text": "hi"}), "It said hi."])
    first = await run_turn(ctx, "s1", "echo hi please")
    ctx2 = make_context(["Four."])
    second = await run_turn(ctx2, "s1", "What is 2+2?")
    store = ctx.store
    assert await store.traced_answers("s1") == [first.answer_message_id, second.answer_message_id]
    kept = await store.turn_trace(first.answer_message_id)
    assert kept is not None
    assert [e["kind"] for e in kept["entries"]][:3] == ["node", "model", "tool"]
    tool = next(e for e in kept["entries"] if e["kind"] == "tool")
    assert tool["detail"]["args"] == {"text": "hi"} and tool["detail"]["ok"] is True
    assert kept["models"] == ["scripted-chat"]
    assert kept["tokens"] is None  # the scripted model reports no usage
    # One prompt per model call, as the model got it: the system message, the question,
    # then (second call) the model's call and the tool's result; the schemas offered.
    first_call, second_call = kept["prompts"]
    assert [m["role"] for m in first_call["messages"]] == ["system", "human"]
    sent = ctx.chat_model.calls[0]["messages"]
    assert first_call["messages"][0]["text"] == sent[0].content[:MAX_PROMPT_CHARS]
    assert first_call["messages"][1]["text"] == "echo hi please"
    assert [t["function"]["name"] for t in first_call["tools"]] == [
        t["function"]["name"] for t in ctx.chat_model.calls[0]["tools"]
    ]
    # the second call adds the model's call and the tool's result: the rest is kept once
    assert second_call["shared"] == 2 and second_call["tools"] is None
    assert [m["role"] for m in second_call["messages"]] == ["ai", "tool"]
    shown = rendered(turn_markdown(kept, "echo hi please"))
    assert "Model call 2: scripted-chat, 4 messages, the same tool schemas" in shown
    assert "Messages 1 to 2: as in model call 1" in shown
    assert second_call["messages"][-2]["calls"][0]["name"] == "echo"
    assert second_call["messages"][-1]["tool"] == "echo"
    # the second turn's replay holds the first turn
    again = await store.turn_trace(second.answer_message_id)
    assert again is not None and "echo hi please" in str(again["prompts"][0]["messages"])


async def test_the_trace_is_kept_after_the_answer_is_out(make_context) -> None:
    """Issue 27: nothing that can wait delays the answer. The Answer event carries the
    trace the page shows; the stored copy (for the Graph tab later) is written once the
    consumer asks for more, before the stream ends."""
    ctx = make_context(["Four."])
    seen: list[object] = []
    async for event in stream_turn(ctx, "s1", "What is 2+2?"):
        if isinstance(event, Answer):
            assert event.message_id is not None and event.trace
            seen.append(await ctx.store.turn_trace(event.message_id))
            answered = event.message_id
    assert seen == [None]
    kept = await ctx.store.turn_trace(answered)
    assert kept is not None and [e["kind"] for e in kept["entries"]] == ["node", "model"]


def test_token_counts_are_kept_when_the_provider_reports_them() -> None:
    counted = AIMessage(
        content="Four.",
        usage_metadata={"input_tokens": 120, "output_tokens": 7, "total_tokens": 127},
    )
    final = {
        "trace": [
            {
                "kind": "model",
                "name": "call_model",
                "ms": 5.0,
                "detail": {"model": "m", "tokens": {"input": 120, "output": 7}},
            },
            {
                "kind": "model",
                "name": "call_model",
                "ms": 5.0,
                "detail": {"model": "m", "tokens": {"input": 30, "output": 3}},
            },
        ]
    }
    assert kept_trace(final)["tokens"] == {"input": 150, "output": 10}
    assert kept_trace({"trace": []})["tokens"] is None
    assert token_counts(counted) == {"input": 120, "output": 7}


def test_a_prompt_keeps_each_message_clipped_and_no_image_bytes() -> None:
    long = "x" * (MAX_PROMPT_CHARS + 500)
    picture = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 9000}}
    kept = _sent_message(HumanMessage(content=[{"type": "text", "text": long}, picture]))
    assert len(kept["text"]) == MAX_PROMPT_CHARS and kept["text"].endswith("…")
    assert kept["images"] == 1 and "base64" not in str(kept)


def test_a_turn_shows_as_plain_text_with_its_prompts_and_tools() -> None:
    kept = {
        "entries": [
            {"kind": "node", "name": "build_context", "ms": 1.0, "detail": {"messages": 2}},
            {
                "kind": "model",
                "name": "call_model",
                "ms": 12.0,
                "detail": {"model": "m1", "text": HOSTILE, "tokens": {"input": 10, "output": 5}},
            },
        ],
        "prompts": [
            {
                "model": "m1",
                "messages": [
                    {"role": "system", "text": "Be kind.\n    indented"},
                    {"role": "human", "text": HOSTILE},
                ],
                "tools": [{"type": "function", "function": {"name": "weather", "parameters": {}}}],
            }
        ],
        "models": ["m1"],
        "tokens": {"input": 10, "output": 5},
    }
    rating = Feedback(1, "s1", -1, f"wrong {HOSTILE}", "2026-11-25 09:31:00")
    html = rendered(turn_markdown(kept, HOSTILE, rating))
    assert "<img" not in html and "<a " not in html  # nothing of theirs renders
    assert "10 in, 5 out" in html
    assert "👎" in html and "wrong" in html
    assert html.count("<details>") == 1 and "Model call 1: m1, 2 messages, 1 tool schemas" in html
    assert "Be kind.\n    indented" in html  # the prompt exactly as sent
    assert html.count("<pre>") == 3  # two messages and the schemas, each a block of its own
    assert "Rating:** not rated" in turn_markdown(kept, "q")
    assert turn_markdown(None, "q") == NOT_KEPT


def test_a_block_cannot_be_closed_by_the_text_inside() -> None:
    text = "```\n<b>bold</b>\n````\n[x](y)"
    html = rendered(verbatim(text))
    assert html.count("<pre>") == 1 and "&lt;b&gt;" in html and "<b>" not in html


def test_turns_are_named_by_time_and_question() -> None:
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    assert turn_label("2026-11-25 07:02:00", "what's   the weather", "Asia/Jakarta", now) == (
        "14:02 — what's the weather"
    )
    older = turn_label("2026-11-20 07:02:00", "x" * 80, "UTC", now)
    assert older.startswith("20 Nov 07:02 — ") and older.endswith("…") and len(older) < 70


async def test_the_chats_turns_pair_each_answer_with_its_question(async_store) -> None:
    asked = await async_store.add_message("s1", "user", "weather?")
    step = await async_store.add_message("s1", "weather_tool", "🔧", tool_name="weather")
    answer = await async_store.add_message("s1", "assistant", "Sunny.")
    other = await async_store.add_message("s1", "user", "thanks")
    second = await async_store.add_message("s1", "assistant", "Any time.")
    turns = chat_turns(await async_store.messages("s1"), [answer.id, second.id])
    assert [(t.asked.id, [m.id for m in t.tools]) for t in turns if t.asked] == [
        (asked.id, [step.id]),
        (other.id, []),
    ]
