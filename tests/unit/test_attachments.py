"""Finding an image URL pasted into a message: what is found, and in linear time."""

from __future__ import annotations

import time

import pytest

from app.attachments import MAX_URL_CHARS, image_url_in, serves_image, urls_in
from config.settings import Settings
from evals.fixtures import ImageFixture


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("look https://example.com/cat.PNG please", "https://example.com/cat.PNG"),
        ("see https://example.com/cat.jpg.", "https://example.com/cat.jpg"),
        ("is it https://example.com/cat.jpg?", "https://example.com/cat.jpg"),
        ("https://example.com/a.gif, https://example.com/b.png", "https://example.com/a.gif"),
        ("(http://x.org/a/b.jpeg?size=2)", "http://x.org/a/b.jpeg?size=2"),
        ("https://cdn.example/cat.jpg?w=200&h=100!", "https://cdn.example/cat.jpg?w=200&h=100"),
        ("![cat](https://example.com/c.webp)", "https://example.com/c.webp"),
        ('he sent "https://example.com/c.png"', "https://example.com/c.png"),
        ("<https://example.com/c.jpeg>", "https://example.com/c.jpeg"),
        ("link:https://example.com/c.png", "https://example.com/c.png"),
        (
            "https://example.com/page.html then https://example.com/z.png",
            "https://example.com/z.png",
        ),
        ("https://example.com/page.html", None),
        ("http:// .png", None),
        ("http://[::1/cat.png", None),
        ("no link here", None),
        ("", None),
    ],
)
def test_pasted_image_urls_are_found(text: str, url: str | None) -> None:
    assert image_url_in(text) == url


@pytest.mark.parametrize(
    "text",
    [
        "http://" * 20_000,  # the 140 KB message that took 15.8 s
        ("http://" * 290 + " ") * 70,  # just under the token cap, many times
        "https://a.png?" * 10_000,
        "![](" * 35_000,
        ("x" * (MAX_URL_CHARS + 1) + " ") * 68,
    ],
)
def test_an_adversarial_message_is_scanned_quickly(text: str) -> None:
    assert len(text) > 100_000
    started = time.perf_counter()
    image_url_in(text + " https://example.com/cat.png")
    # Linear: milliseconds; the quadratic scan took 15.8 s (bound generous for load).
    assert time.perf_counter() - started < 3


def test_a_url_after_a_long_adversarial_token_is_still_found() -> None:
    text = "http://" * 20_000 + " and https://example.com/cat.png."
    assert image_url_in(text) == "https://example.com/cat.png"


def test_tokens_longer_than_any_url_are_skipped() -> None:
    long_url = "https://example.com/" + "a" * MAX_URL_CHARS + ".png"
    assert image_url_in(long_url) is None


def test_every_pasted_link_is_found_without_its_sentence_punctuation() -> None:
    text = "see https://example.com/photo?id=3. and (https://cdn.example/p/42), http:// no"
    assert list(urls_in(text)) == ["https://example.com/photo?id=3", "https://cdn.example/p/42"]


async def test_a_link_is_an_image_when_it_answers_with_an_image_type(tmp_path) -> None:
    settings = Settings(home=tmp_path, allow_private_urls=True)
    with ImageFixture() as images:
        assert await serves_image(f"{images.url}/prompt/a-cat", settings)
        assert not await serves_image(f"{images.url}/nothing-here", settings)
        assert not await serves_image("http://127.0.0.1:9/closed", settings)


async def test_a_link_to_a_private_address_is_not_probed_without_permission(tmp_path) -> None:
    with ImageFixture() as images:
        assert not await serves_image(f"{images.url}/prompt/a-cat", Settings(home=tmp_path))
