"""A reply caught in a loop (nodes.repeats) is ended the second time a sentence is said,
and keeps its text up to where the repeating began; other replies are untouched."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langchain_core.messages import AIMessageChunk, HumanMessage

from graph.runner import run_turn
from nodes.call_model import stream_reply, stream_was_cut
from nodes.repeats import loop_start, may_end_sentence, repeated_from, run_from

LOOP = "I love jasmine tea in the morning. " * 40


def test_the_second_time_a_sentence_is_said_the_loop_starts() -> None:
    text = "Hello there! I love jasmine tea. I love jasmine tea."
    assert text[: repeated_from(text)].rstrip() == "Hello there! I love jasmine tea."
    assert repeated_from("Hello there! I love jasmine tea. I love oolong tea too.") is None


def test_a_loop_of_two_sentences_is_cut_after_its_first_round() -> None:
    text = "The sky is very blue. The grass is very green. " * 3
    assert text[: repeated_from(text)].rstrip() == "The sky is very blue. The grass is very green."


def test_short_sentences_list_items_and_case_or_spacing() -> None:
    # "Yes." and "- tea" may come back: too short to count.
    assert repeated_from("Yes. Yes. Yes. I am sure of it now. No.") is None
    assert repeated_from("- tea\n- tea\n- tea\n") is None
    # Case, spacing and punctuation don't hide a repeat; a list item is a sentence.
    items = "- a cup of jasmine tea\n- A cup of  jasmine tea!\n- a cup of jasmine tea\n"
    assert items[: repeated_from(items)] == "- a cup of jasmine tea\n"
    # An unfinished second time is not yet a repeat.
    assert repeated_from("I love jasmine tea. I love jasmine t") is None


def test_only_a_piece_with_an_end_mark_may_end_a_sentence() -> None:
    assert may_end_sentence("tea.") and may_end_sentence("\n") and may_end_sentence("?")
    assert not may_end_sentence("jasmine tea")


class Stream:
    """A model whose stream says ``text`` word by word; counts what was read and closed."""

    def __init__(self, text: str) -> None:
        self.words = text.split(" ")
        self.read = 0
        self.closed = False

    async def astream(self, messages: Any) -> AsyncIterator[AIMessageChunk]:
        try:
            for n, word in enumerate(self.words):
                self.read += 1
                last = n == len(self.words) - 1
                yield AIMessageChunk(
                    content=word if last else word + " ",
                    response_metadata={"finish_reason": "stop", "model_provider": "openai"}
                    if last
                    else {"model_provider": "openai"},
                )
        finally:
            self.closed = True


async def test_the_bundled_models_loop_is_ended_and_kept_to_its_first_round() -> None:
    model = Stream(LOOP)
    reply = await stream_reply(model, [HumanMessage("tea?")], None, end_loops=True)
    assert reply.content == "I love jasmine tea in the morning."
    assert model.closed and model.read < 30  # of 280 words
    assert reply.response_metadata["finish_reason"] == "repeating"
    assert not stream_was_cut(reply)  # an ended loop is not a dropped connection


async def test_without_end_loops_or_without_a_loop_the_reply_is_whole() -> None:
    model = Stream(LOOP)
    reply = await stream_reply(model, [HumanMessage("tea?")], None)
    assert reply.content == LOOP
    assert model.read == len(model.words)
    text = "Jasmine is lovely. Oolong too. Green tea is fine as well."
    reply = await stream_reply(Stream(text), [HumanMessage("tea?")], None, end_loops=True)
    assert reply.content == text and reply.response_metadata["finish_reason"] == "stop"


async def test_a_turn_on_the_bundled_model_stores_and_answers_the_first_round(
    make_context,
) -> None:
    ctx = make_context(lambda messages, kwargs: LOOP, provider="local", tool_mode="commands")
    result = await run_turn(ctx, "s1", "do you like tea?")
    assert result.answer == "I love jasmine tea in the morning."
    stored = ctx.store.blocking.messages("s1")
    assert [m.content for m in stored] == ["do you like tea?", result.answer]


async def test_a_turn_on_an_endpoint_keeps_a_reply_that_repeats(make_context) -> None:
    ctx = make_context(lambda messages, kwargs: LOOP)
    result = await run_turn(ctx, "s1", "do you like tea?")
    assert result.answer == LOOP.strip()


def test_a_line_of_short_sentences_that_comes_back_is_a_loop() -> None:
    # Each sentence is too short to count; the line they make is not (the bundled model).
    text = "I'm sorry, I'm sorry. It's not a word.\n\n" + "I'm sorry. It's not a word.\n\n" * 3
    kept = "I'm sorry, I'm sorry. It's not a word.\n\nI'm sorry. It's not a word."
    assert text[: repeated_from(text)].rstrip() == kept


def test_words_said_over_and_over_are_a_loop() -> None:
    text = "Oh no, " + "no " * 40
    assert text[: run_from(text)].rstrip() == "Oh no,"
    thanks = "Well, thank you " + "thank you " * 9
    assert thanks[: run_from(thanks)].rstrip() == "Well, thank you"
    # Seven times on end is not yet a run, a word half out of the stream is not read,
    # and laughter short of the run is text.
    assert run_from("I am " + "so " * 7) is None
    assert run_from("ha ha ha, that is funny. ") is None
    assert loop_start("Oh " + "no " * 8, "no ") is not None
    # Short sentences in a row, and marks standing alone, are runs too (the eval's).
    sorry = "I'm sorry, " + "I'm sorry. " * 8
    assert sorry[: run_from(sorry)].rstrip() == "I'm sorry,"
    stars = "The weather is currently: " + "* " * 20
    assert stars[: run_from(stars)].rstrip() == "The weather is currently: *"
    # A run far into a long reply is found in its last characters.
    long = "A sentence of some length with words. " * 30 + "very " * 8
    assert long[: run_from(long)].endswith("words. very ")


async def test_a_run_of_words_ends_the_stream() -> None:
    model = Stream("Oh no, " + "no " * 300)
    reply = await stream_reply(model, [HumanMessage("oops")], None, end_loops=True)
    assert reply.content == "Oh no," and model.closed and model.read < 20
