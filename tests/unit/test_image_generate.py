"""image_generate against the local image fixture: each backend, checks, gate and logging."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from config.settings import Settings
from evals.fixtures import COLOURS, ImageFixture, RecordedRequest, Reply
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tools.base import ToolContext
from tools.image_generate import TOOLS, available, format_generated, image_generate
from tools.registry import ToolRegistry

API_KEY = "sk-fixture"


@pytest.fixture(scope="module")
def images() -> Iterator[ImageFixture]:
    with ImageFixture(color="orange", size=(320, 240), api_key=API_KEY) as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_requests(images: ImageFixture) -> Iterator[None]:
    images.clear()
    yield
    images.openai_response = "b64_json"


def make_ctx(home: Path, server: ImageFixture, **settings: Any) -> ToolContext:
    values: dict[str, Any] = {"home": home, **server.settings_overrides(), **settings}
    return ToolContext(Settings(**values), AsyncSqliteStore(SqliteStore.open_home(home)), "s1")


def centre_colour(path: str) -> Any:
    """The RGB pixel in the middle of the drawn cat's body."""
    with Image.open(path) as image:
        rgb = image.convert("RGB")
        return rgb.getpixel((rgb.width // 2, int(rgb.height * 0.75)))


def media_files(home: Path) -> list[Path]:
    return sorted((home / "media").glob("*"))


async def test_openai_backend_b64(tmp_path, images, caplog):
    caplog.set_level(logging.INFO, logger="companion.image")
    result = await image_generate({"prompt": "a cat on a sofa"}, make_ctx(tmp_path, images))

    assert result["mime"] == "image/png"
    assert (result["width"], result["height"]) == (320, 240)
    assert (result["model"], result["backend"], result["prompt"]) == (
        "fixture-image-1",
        "openai",
        "a cat on a sofa",
    )
    path = Path(result["image_path"])
    assert path.parent == tmp_path / "media" and path.is_file()
    assert centre_colour(result["image_path"]) == COLOURS["orange"]
    (request,) = images.requests
    assert request.path == "/v1/images/generations"
    assert request.json() == {"model": "fixture-image-1", "prompt": "a cat on a sofa", "n": 1}
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    messages = [record.getMessage() for record in caplog.records]
    assert "[IMAGE TOOL] Selected model: fixture-image-1" in messages
    assert f"[IMAGE TOOL] Endpoint: {images.url}/v1/images/generations" in messages


async def test_openai_backend_url_response_is_downloaded(tmp_path, images):
    images.openai_response = "url"
    result = await image_generate({"prompt": "a black cat"}, make_ctx(tmp_path, images))

    assert centre_colour(result["image_path"]) == COLOURS["black"]
    assert [r.path.split("/")[1] for r in images.requests] == ["v1", "files"]


async def test_image_url_on_another_host_than_the_backend_is_address_checked(tmp_path, images):
    """The backend answers with a URL on 127.0.0.1, but the backend is configured as localhost."""
    images.openai_response = "url"
    elsewhere = images.base_url.replace("127.0.0.1", "localhost")
    result = await image_generate(
        {"prompt": "a black cat"}, make_ctx(tmp_path, images, image_base_url=elsewhere)
    )
    assert result["error"].startswith("refused: 127.0.0.1 resolves to a private or local address")
    assert [r.path.split("/")[1] for r in images.requests] == ["v1"], "nothing downloaded"
    assert media_files(tmp_path) == []

    allowed = make_ctx(tmp_path, images, image_base_url=elsewhere, allow_private_urls=True)
    result = await image_generate({"prompt": "a black cat"}, allowed)
    assert centre_colour(result["image_path"]) == COLOURS["black"]
    download = images.requests[-1]
    assert download.path.startswith("/files/")
    assert "authorization" not in download.headers, "the key stays with the backend"


async def test_openrouter_backend_reads_the_data_url(tmp_path, images):
    ctx = make_ctx(
        tmp_path, images, image_backend="openrouter", image_model="google/gemini-2.5-flash-image"
    )
    result = await image_generate({"prompt": "a white cat"}, ctx)

    assert result["backend"] == "openrouter"
    assert result["mime"] == "image/png"
    assert centre_colour(result["image_path"]) == COLOURS["white"]
    (request,) = images.requests
    assert request.path == "/v1/chat/completions"
    body = request.json()
    assert body["modalities"] == ["image", "text"]
    assert body["model"] == "google/gemini-2.5-flash-image"
    assert body["messages"] == [{"role": "user", "content": "a white cat"}]


async def test_openrouter_text_only_answer_is_an_error(tmp_path, images):
    ctx = make_ctx(tmp_path, images, image_backend="openrouter")
    result = await image_generate({"prompt": "refuse this"}, ctx)
    assert result["error"].startswith("the image model returned no image (it said: I can't")
    assert media_files(tmp_path) == []


async def test_url_backend_gets_the_prompt_path(tmp_path, images, caplog):
    caplog.set_level(logging.INFO, logger="companion.image")
    ctx = make_ctx(
        tmp_path,
        images,
        image_backend="url",
        image_base_url=images.url,
        image_model="flux",
        image_api_key=None,
    )
    result = await image_generate({"prompt": "a blue cat / sketch"}, ctx)

    assert result["mime"] == "image/jpeg"
    assert Path(result["image_path"]).suffix == ".jpg"
    (request,) = images.requests
    assert request.method == "GET"
    assert request.path == "/prompt/a blue cat / sketch"
    assert request.query == {"model": ["flux"]}
    endpoint = f"{images.url}/prompt/a%20blue%20cat%20%2F%20sketch"
    assert f"[IMAGE TOOL] Endpoint: {endpoint}" in caplog.messages


async def test_each_generation_gets_its_own_file(tmp_path, images):
    ctx = make_ctx(tmp_path, images)
    first = await image_generate({"prompt": "a cat"}, ctx)
    second = await image_generate({"prompt": "a cat"}, ctx)
    assert first["image_path"] != second["image_path"]
    assert len(media_files(tmp_path)) == 2


async def test_backend_refusal_is_reported(tmp_path, images):
    result = await image_generate({"prompt": "refuse me"}, make_ctx(tmp_path, images))
    assert result == {
        "error": "the image backend answered HTTP 400: Your request was rejected "
        "as a result of our safety system."
    }


async def test_bytes_that_are_not_an_image_are_not_saved(tmp_path, images):
    result = await image_generate({"prompt": "notimage"}, make_ctx(tmp_path, images))
    assert result["error"].startswith("the image backend did not return a usable image")
    assert media_files(tmp_path) == []


async def test_wrong_key_is_reported(tmp_path, images):
    result = await image_generate(
        {"prompt": "a cat"}, make_ctx(tmp_path, images, image_api_key="sk-wrong")
    )
    assert result == {"error": "the image backend answered HTTP 401: Invalid API key"}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"image_backend": None}, "image generation is not configured: set the image backend"),
        ({"image_base_url": None}, "the openai backend needs a base URL"),
        ({"image_model": None}, "the openai backend needs a model name"),
        ({"image_backend": "url", "image_model": ""}, "the url backend needs a model name"),
    ],
)
async def test_missing_configuration_closes_the_gate(tmp_path, images, changes, expected):
    ctx = make_ctx(tmp_path, images, **changes)
    assert await available(ctx) is False
    assert await ToolRegistry(TOOLS).enabled(ctx) == []
    result = await image_generate({"prompt": "a cat"}, ctx)
    assert expected in result["error"]
    assert images.requests == []


async def test_gate_open_when_configured(tmp_path, images):
    assert await available(make_ctx(tmp_path, images)) is True


def test_format_names_the_saved_path_and_says_shown():
    text = format_generated(
        {
            "image_path": "/home/u/media/generated-1.png",
            "model": "m",
            "width": 512,
            "height": 512,
            "mime": "image/png",
        }
    )
    assert text == (
        "Image generated (model m, 512x512) and saved as media/generated-1.png. It is shown "
        "to the user automatically; don't repeat the path."
    )


async def test_imagine_command_through_the_registry(tmp_path, images):
    registry = ToolRegistry(TOOLS)
    spec = registry.by_command("imagine")
    assert spec is not None and spec.role == "image_tool"
    args = spec.command_arguments("a green cat")
    assert args == {"prompt": "a green cat"}
    result = await registry.execute("image_generate", args, make_ctx(tmp_path, images))
    assert centre_colour(result["image_path"]) == COLOURS["green"]
    with Image.open(io.BytesIO(Path(result["image_path"]).read_bytes())) as image:
        assert image.format == "PNG"
    stored = registry.format_result("image_generate", result)
    assert f"saved as media/{Path(result['image_path']).name}." in stored
    empty = await registry.execute("image_generate", {"prompt": ""}, make_ctx(tmp_path, images))
    assert empty["error"].startswith("invalid arguments for image_generate: prompt")


class FloodingBackend(ImageFixture):
    """An OpenAI-style image backend whose answer streams far past any real image."""

    def handle(self, request: RecordedRequest) -> Reply:
        if request.path == "/v1/images/generations":
            chunk = b" " * 65_536
            return Reply(200, (chunk for _ in range(600)), "application/json")
        return super().handle(request)


async def test_a_flooding_backend_is_cut_off_at_the_cap(tmp_path):
    with FloodingBackend() as flood:
        result = await image_generate({"prompt": "a cat"}, make_ctx(tmp_path, flood))
    assert result == {"error": "the generated image is larger than 10485760 bytes"}
    assert media_files(tmp_path) == []


class RedirectingBackend(ImageFixture):
    """An OpenAI-style image backend that answers a generation with a 302 to ``target``."""

    target = ""

    def handle(self, request: RecordedRequest) -> Reply:
        if request.path == "/v1/images/generations":
            return Reply(302, headers={"Location": self.target})
        return super().handle(request)


@pytest.mark.parametrize("where", ["metadata", "internal"])
async def test_a_redirect_off_the_backend_is_refused_at_the_hop(tmp_path, images, where):
    """The operator's backend on 127.0.0.1 is reached; where it redirects is checked."""
    internal = images.image_url("cat.png").replace("127.0.0.1", "localhost")  # other origin
    with RedirectingBackend(api_key=API_KEY) as backend:
        backend.target = (
            "http://169.254.169.254/latest/meta-data/" if where == "metadata" else internal
        )
        result = await image_generate({"prompt": "a cat"}, make_ctx(tmp_path, backend))
        assert backend.requests_to("/v1/images/generations"), "the backend itself was asked"
    assert result["error"].startswith("refused: ")
    assert "resolves to a private or local address" in result["error"]
    assert images.requests == [], "the internal service was never reached"
    assert media_files(tmp_path) == []


async def test_a_backend_a_person_chose_is_not_contacted(tmp_path, images):
    ctx = make_ctx(
        tmp_path, images, accounts_on=True, personal_endpoints=frozenset({"image_base_url"})
    )
    result = await image_generate({"prompt": "a cat"}, ctx)
    assert result["error"].startswith("refused: 127.0.0.1 resolves to a private or local address")
    assert images.requests == []
