"""image_analyze: resolving the image meant, local-path safety, URL limits, cache and gate."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config.settings import Settings
from evals.fixtures import ImageFixture, cat_image
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tools import net
from tools.base import ToolContext
from tools.image_analyze import (
    NOT_AVAILABLE,
    TOO_LONG,
    TOOLS,
    available,
    extract_target,
    format_loaded,
    image_analyze,
)
from tools.images import media_path
from tools.registry import ToolRegistry

SESSION = "s1"


@pytest.fixture(scope="module")
def images() -> Iterator[ImageFixture]:
    with ImageFixture(color="orange") as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_requests(images: ImageFixture) -> None:
    images.clear()


def make_ctx(home: Path, vision: bool = True, **settings: Any) -> ToolContext:
    values: dict[str, Any] = {"home": home, "allow_private_urls": True, **settings}
    return ToolContext(
        Settings(**values),
        AsyncSqliteStore(SqliteStore.open_home(home)),
        SESSION,
        vision_available=vision,
    )


def add_image(ctx: ToolContext, name: str, data: bytes) -> Path:
    path = ctx.settings.media_dir / name
    path.write_bytes(data)
    ctx.store.blocking.add_message(SESSION, "user", "look at this", image_path=str(path))
    return path


def decoded(result: dict[str, Any]) -> bytes:
    return base64.b64decode(result["image_base64"])


async def test_latest_image_of_the_session_by_default(tmp_path):
    ctx = make_ctx(tmp_path)
    add_image(ctx, "old.png", cat_image("black"))
    newest = add_image(ctx, "new.png", cat_image("orange"))
    ctx.store.blocking.add_message(SESSION, "assistant", "what a cat")

    result = await image_analyze({}, ctx)

    assert decoded(result) == newest.read_bytes()
    assert (result["mime"], result["source"]) == ("image/png", "latest")
    assert result["image_path"] == str(newest.resolve())
    assert (result["width"], result["height"]) == (256, 256)


async def test_no_image_in_reach_is_an_error_and_closes_the_gate(tmp_path):
    ctx = make_ctx(tmp_path)
    ctx.store.blocking.add_message(SESSION, "user", "hello")
    assert await available(ctx) is False
    result = await image_analyze({}, ctx)
    assert result["error"].startswith("there is no image in this conversation yet")


async def test_gate_needs_a_vision_model_and_an_image(tmp_path):
    ctx = make_ctx(tmp_path)
    add_image(ctx, "cat.png", cat_image())
    assert await available(ctx) is True
    assert await available(make_ctx(tmp_path, vision=False)) is False
    other = ToolContext(ctx.settings, ctx.store, "another-session", vision_available=True)
    assert await available(other) is False


async def test_markdown_url_is_downloaded_sniffed_and_saved_by_hash(tmp_path, images):
    ctx = make_ctx(tmp_path)
    url = images.image_url("black-cat.jpg")
    result = await image_analyze({"reference": f"Here: ![my cat]({url})"}, ctx)

    data = decoded(result)
    assert result["mime"] == "image/jpeg", "from the bytes, not the octet-stream header"
    assert (result["source"], result["url"], result["cached"]) == ("reference", url, False)
    expected = media_path(data, tmp_path / "media", "jpg")  # keyed by the person's salt
    assert result["image_path"] == str(expected)
    assert expected.read_bytes() == data


async def test_same_url_again_comes_from_the_cache(tmp_path, images):
    ctx = make_ctx(tmp_path)
    url = images.image_url("cat.png")
    first = await image_analyze({"reference": url}, ctx)
    second = await image_analyze({"reference": url}, ctx)
    assert second["cached"] is True
    assert second["image_base64"] == first["image_base64"]
    assert len(images.requests) == 1


async def test_same_content_from_two_urls_is_stored_once(tmp_path, images):
    ctx = make_ctx(tmp_path)
    direct = await image_analyze({"reference": images.image_url("grey-cat.png")}, ctx)
    redirected = await image_analyze({"reference": f"{images.url}/redirect/grey-cat.png"}, ctx)
    assert direct["image_path"] == redirected["image_path"]
    assert [r.path for r in images.requests] == [
        "/images/grey-cat.png",
        "/redirect/grey-cat.png",
        "/images/grey-cat.png",
    ]
    assert len(list((tmp_path / "media").glob("*.png"))) == 1


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("not-an-image.png", "that is not an image I can load"),
        ("huge.png", "the image is larger than 10.0 MB"),
        ("huge-stream.png", "the image is larger than 10.0 MB"),
        ("missing.png", "the image URL answered HTTP 404"),
    ],
)
async def test_bad_downloads_are_refused_and_not_saved(tmp_path, images, name, expected):
    result = await image_analyze({"reference": images.image_url(name)}, make_ctx(tmp_path))
    assert result["error"].startswith(expected)
    assert list((tmp_path / "media").iterdir()) == []


async def test_slow_download_is_an_error(tmp_path, images):
    ctx = make_ctx(tmp_path, tool_timeout=0.5)
    result = await image_analyze({"reference": images.image_url("slow-cat.png")}, ctx)
    assert result == {"error": "the image URL did not answer in time"}


async def test_private_hosts_are_refused_unless_allowed(tmp_path, images):
    ctx = make_ctx(tmp_path, allow_private_urls=False)
    result = await image_analyze({"reference": images.image_url("cat.png")}, ctx)
    assert result["error"].startswith("refused: 127.0.0.1 resolves to a private or local address")
    assert images.requests == []
    localhost = images.image_url("cat.png").replace("127.0.0.1", "localhost")
    assert "refused" in (await image_analyze({"reference": localhost}, ctx))["error"]
    metadata = await image_analyze({"reference": "http://169.254.169.254/latest/x.png"}, ctx)
    assert "refused" in metadata["error"]


@pytest.mark.parametrize(
    "host", ["[::127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]", "[::ffff:127.0.0.1]"]
)
async def test_loopback_inside_ipv6_is_refused(tmp_path, images, host):
    port = images.url.rsplit(":", 1)[1]
    ctx = make_ctx(tmp_path, allow_private_urls=False)
    result = await image_analyze({"reference": f"http://{host}:{port}/images/cat.png"}, ctx)
    assert result["error"].startswith("refused: "), result
    assert images.requests == []


def resolving(monkeypatch, answers: dict[str, list[str]]) -> None:
    """Stand in for DNS: each name in ``answers`` resolves to its addresses."""

    async def resolve(host: str, port: int) -> list[str]:
        return answers[host]

    monkeypatch.setattr(net, "resolve_host", resolve)


async def test_a_public_looking_name_resolving_to_loopback_is_refused(
    tmp_path, images, monkeypatch
):
    resolving(
        monkeypatch, {"cats.example": ["127.0.0.1"], "mixed.example": ["8.8.8.8", "127.0.0.1"]}
    )
    port = images.url.rsplit(":", 1)[1]
    ctx = make_ctx(tmp_path, allow_private_urls=False)
    for host in ("cats.example", "mixed.example"):
        result = await image_analyze({"reference": f"http://{host}:{port}/images/cat.png"}, ctx)
        assert result["error"].startswith(f"refused: {host} resolves to"), result
    assert images.requests == []


async def test_the_connection_goes_to_the_address_that_was_resolved(tmp_path, images, monkeypatch):
    resolving(monkeypatch, {"cats.example": ["127.0.0.1"]})
    port = images.url.rsplit(":", 1)[1]
    ctx = make_ctx(tmp_path, allow_private_urls=True)
    result = await image_analyze({"reference": f"http://cats.example:{port}/images/cat.png"}, ctx)
    assert result["mime"] == "image/png"
    (request,) = images.requests
    assert request.headers["host"] == f"cats.example:{port}"


async def test_other_schemes_and_hostless_urls_are_refused(tmp_path):
    ctx = make_ctx(tmp_path)
    ftp = await image_analyze({"reference": "ftp://example.com/cat.png"}, ctx)
    assert ftp == {"error": "only http and https URLs can be fetched, not ftp"}
    hostless = await image_analyze({"reference": "http:///nohost.png"}, ctx)
    assert hostless["error"].startswith("the URL has no host")


async def test_local_paths_inside_media_relative_or_absolute(tmp_path):
    ctx = make_ctx(tmp_path)
    path = ctx.settings.media_dir / "photo.png"
    path.write_bytes(cat_image("brown"))
    by_name = await image_analyze({"reference": "photo.png"}, ctx)
    by_path = await image_analyze({"reference": f"![photo]({path})"}, ctx)
    by_file_url = await image_analyze({"reference": path.as_uri()}, ctx)
    assert by_name["image_path"] == by_path["image_path"] == by_file_url["image_path"]
    assert decoded(by_name) == path.read_bytes()


async def test_missing_and_forbidden_paths_get_the_same_answer(tmp_path):
    ctx = make_ctx(tmp_path / "home")
    outside = tmp_path / "secret.png"
    outside.write_bytes(cat_image())
    link = ctx.settings.media_dir / "link.png"
    link.symlink_to(outside)

    forbidden = (str(outside), "../../secret.png", "link.png", str(tmp_path))
    missing = ("nothing-here.png", str(tmp_path / "nothing-here.png"), "../../nothing.png")
    for reference in forbidden + missing:
        result = await image_analyze({"reference": reference}, ctx)
        assert result == {"error": NOT_AVAILABLE.format(path=reference)}, reference
    assert NOT_AVAILABLE.startswith("not available:")


async def test_allowed_image_dir_is_also_in_reach(tmp_path):
    pictures = tmp_path / "Pictures"
    pictures.mkdir()
    (pictures / "cat.webp").write_bytes(cat_image("purple", image_format="WEBP"))
    ctx = make_ctx(tmp_path / "home", allowed_image_dir=pictures)
    result = await image_analyze({"reference": str(pictures / "cat.webp")}, ctx)
    assert result["mime"] == "image/webp"


async def test_local_file_that_is_not_an_image(tmp_path):
    ctx = make_ctx(tmp_path)
    (ctx.settings.media_dir / "notes.png").write_text("just text")
    result = await image_analyze({"reference": "notes.png"}, ctx)
    assert result["error"].startswith("that is not an image I can load")


async def test_an_adversarial_reference_is_answered_quickly(tmp_path):
    ctx = make_ctx(tmp_path)
    started = time.perf_counter()
    near_cap = await image_analyze({"reference": "![](" * 1000}, ctx)
    over_cap = await image_analyze({"reference": "![" * 50_000}, ctx)
    # Generous for a loaded machine; an unbounded regex took seconds.
    assert time.perf_counter() - started < 3
    assert near_cap["error"].startswith("not available:")
    assert over_cap == {"error": TOO_LONG}


def test_extract_target_from_markdown():
    assert extract_target('![a cat](https://x.example/c.png "title")') == "https://x.example/c.png"
    assert extract_target("see ![](<media/c d.png>) here") == "media/c d.png"
    assert extract_target("/plain/path.png") == "/plain/path.png"


def test_format_has_no_base64():
    text = format_loaded({"image_base64": "QUJD" * 1000, "mime": "image/png", "size_bytes": 12_300})
    assert text == "Image loaded (image/png, 12 KB) — it is attached below for you to look at."


async def test_through_the_registry_and_command(tmp_path, images):
    ctx = make_ctx(tmp_path)
    add_image(ctx, "cat.png", cat_image())
    registry = ToolRegistry(TOOLS)
    spec = registry.by_command("image_analyze")
    assert spec is not None and spec.role == "image_tool"
    assert spec.command_arguments("") == {}
    assert [s.name for s in await registry.enabled(ctx)] == ["image_analyze"]

    latest = await registry.execute("image_analyze", spec.command_arguments(""), ctx)
    assert latest["source"] == "latest"
    url = images.image_url("cat.png")
    by_url = await registry.execute("image_analyze", spec.command_arguments(url), ctx)
    assert by_url["url"] == url
    assert "image_base64" not in registry.format_result("image_analyze", by_url)
    invalid = await registry.execute("image_analyze", {"reference": 5}, ctx)
    assert invalid["error"].startswith("invalid arguments for image_analyze")
