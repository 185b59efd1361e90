"""Every schema parameter of the outside-world tools is honoured: changing it changes the
request made or the result. A parameter added to a schema without a case here fails.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from config.settings import Settings
from evals.fixtures import DuckDuckGoFixture, ImageFixture, OpenMeteoFixture, cat_image
from graph.runner import run_turn
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.memories import create_memory
from memory.sqlite.store import SqliteStore
from tools import image_analyze, image_generate, weather, web_search
from tools.base import ToolContext
from tools.registry import ToolRegistry, builtin_specs

SPECS = [*web_search.TOOLS, *weather.TOOLS, *image_generate.TOOLS, *image_analyze.TOOLS]


@dataclass
class World:
    """The three fixtures and a registry of the four tools, for one test."""

    ddg: DuckDuckGoFixture
    meteo: OpenMeteoFixture
    images: ImageFixture
    home: Path

    def ctx(self) -> ToolContext:
        settings = Settings(
            home=self.home,
            **self.ddg.settings_overrides(),
            **self.meteo.settings_overrides(),
            **self.images.settings_overrides(),
            allow_private_urls=True,
        )
        return ToolContext(
            settings,
            AsyncSqliteStore(SqliteStore.open_home(self.home)),
            "s1",
            vision_available=True,
        )

    async def run(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await ToolRegistry(SPECS).execute(name, args, self.ctx())
        assert "error" not in result, result
        return result


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[DuckDuckGoFixture, OpenMeteoFixture, ImageFixture]]:
    with DuckDuckGoFixture() as ddg, OpenMeteoFixture() as meteo, ImageFixture() as images:
        yield ddg, meteo, images


@pytest.fixture
def world(servers, tmp_path) -> World:
    for server in servers:
        server.clear()
    ddg, meteo, images = servers
    return World(ddg, meteo, images, tmp_path)


async def web_search_query(world: World) -> None:
    first = await world.run("web_search", {"query": "USD to JPY"})
    second = await world.run("web_search", {"query": "weather Tokyo"})
    assert [r.form["q"] for r in world.ddg.requests] == [["USD to JPY"], ["weather Tokyo"]]
    assert first["results"] != second["results"]


async def web_search_max_results(world: World) -> None:
    three = await world.run("web_search", {"query": "tea", "max_results": 3})
    five = await world.run("web_search", {"query": "tea", "max_results": 5})
    assert (len(three["results"]), len(five["results"])) == (3, 5)


async def weather_location(world: World) -> None:
    tokyo = await world.run("weather", {"location": "Tokyo"})
    jakarta = await world.run("weather", {"location": "Jakarta"})
    names = [r.param("name") for r in world.meteo.requests_to("/v1/search")]
    assert names == ["Tokyo", "Jakarta"]
    assert tokyo["weather"] != jakarta["weather"]


async def weather_lat(world: World) -> None:
    await world.run("weather", {"lat": 35.69, "lon": 139.69})
    await world.run("weather", {"lat": -6.21, "lon": 139.69})
    latitudes = [r.param("latitude") for r in world.meteo.requests_to("/v1/forecast")]
    assert latitudes == ["35.69", "-6.21"]


async def weather_lon(world: World) -> None:
    await world.run("weather", {"lat": 35.69, "lon": 139.69})
    await world.run("weather", {"lat": 35.69, "lon": -0.13})
    longitudes = [r.param("longitude") for r in world.meteo.requests_to("/v1/forecast")]
    assert longitudes == ["139.69", "-0.13"]


async def image_generate_prompt(world: World) -> None:
    black = await world.run("image_generate", {"prompt": "a black cat"})
    white = await world.run("image_generate", {"prompt": "a white cat"})
    prompts = [r.json()["prompt"] for r in world.images.requests]
    assert prompts == ["a black cat", "a white cat"]
    assert Path(black["image_path"]).read_bytes() != Path(white["image_path"]).read_bytes()


async def image_analyze_reference(world: World) -> None:
    ctx = world.ctx()
    latest = ctx.settings.media_dir / "latest.png"
    latest.write_bytes(cat_image("orange"))
    ctx.store.blocking.add_message("s1", "user", "my cat", image_path=str(latest))
    default = await world.run("image_analyze", {})
    referenced = await world.run(
        "image_analyze", {"reference": world.images.image_url("black-cat.jpg")}
    )
    assert (default["mime"], referenced["mime"]) == ("image/png", "image/jpeg")
    assert default["image_base64"] != referenced["image_base64"]
    assert len(world.images.requests) == 1


CASES: dict[tuple[str, str], Callable[[World], Awaitable[None]]] = {
    ("web_search", "query"): web_search_query,
    ("web_search", "max_results"): web_search_max_results,
    ("weather", "location"): weather_location,
    ("weather", "lat"): weather_lat,
    ("weather", "lon"): weather_lon,
    ("image_generate", "prompt"): image_generate_prompt,
    ("image_analyze", "reference"): image_analyze_reference,
}


def test_every_parameter_has_a_case():
    declared = {(spec.name, name) for spec in SPECS for name in spec.parameters["properties"]}
    assert declared == set(CASES)


@pytest.mark.parametrize("key", list(CASES), ids=lambda key: ".".join(key))
async def test_parameter_is_honoured(world, key):
    await CASES[key](world)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_schema_is_valid_and_described(spec):
    jsonschema.Draft202012Validator.check_schema(spec.parameters)
    assert spec.parameters["additionalProperties"] is False
    assert all(prop.get("description") for prop in spec.parameters["properties"].values())
    assert len(spec.description) < 500
    assert spec.schema()["function"]["name"] == spec.name


@pytest.mark.parametrize("spec", builtin_specs(), ids=lambda spec: spec.name)
def test_each_tool_has_one_use_when_sentence_that_opens_its_description(spec):
    assert spec.use_when.endswith(".") and not re.search(r"[.!?] [A-Z]", spec.use_when)
    assert spec.schema()["function"]["description"].startswith(f"{spec.use_when} ")
    assert spec.use_when not in spec.description  # said once, in one place


async def test_both_tool_modes_read_the_same_use_when_sentences(make_context):
    """One source per tool: the native schema and the command block carry the same text."""
    registry = ToolRegistry(builtin_specs())
    ctx = make_context(["ok"], registry=registry)
    create_memory(ctx.store.blocking, "identity", "name", "Rina")
    ctx.store.blocking.add_message("s1", "user", "earlier")
    await run_turn(ctx, "s1", "hello")
    offered = [t["function"] for t in ctx.chat_model.calls[0]["tools"]]
    native = {function["name"]: function["description"] for function in offered}
    commands = make_context(["ok"], registry=registry, tool_mode="commands")
    await run_turn(commands, "s1", "hello again")
    assert commands.chat_model.calls[0]["tools"] == []
    block = commands.chat_model.calls[0]["messages"][0].content
    assert {"create_memory", "update_memory", "delete_memory", "memory_search"} <= set(native)
    for name, description in native.items():
        spec = registry.get(name)
        assert spec is not None
        assert description.startswith(spec.use_when)
        assert f"- /{spec.command}: {spec.use_when}\n" in block
