"""Settings' place search (``tools.weather.find_places``) against a loopback Open-Meteo
geocoding fixture: every match with its coordinates and time zone, most populous first;
nothing for a too-short name; a clear error when the service is down."""

from __future__ import annotations

import dataclasses

import pytest

from config.settings import Settings
from evals.fixtures import OpenMeteoFixture
from tests.integration.conftest import free_port
from tools.weather import Place, WeatherError, find_places


async def test_every_match_comes_with_its_time_zone_most_populous_first(
    open_meteo: OpenMeteoFixture,
) -> None:
    settings = dataclasses.replace(Settings(), **open_meteo.settings_overrides())
    found = await find_places(settings, "Springfield, Illinois")  # the name is what is asked
    assert [place.label for place in found] == [
        "Springfield, Missouri, United States",
        "Springfield, Massachusetts, United States",
        "Springfield, Illinois, United States",
        "Springfield, Queensland, Australia",
    ]
    assert found[2] == Place(
        "Springfield, Illinois, United States", 39.80172, -89.64371, "America/Chicago"
    )
    assert [place.timezone for place in await find_places(settings, "bandung")] == ["Asia/Jakarta"]
    assert await find_places(settings, "b") == []
    assert await find_places(settings, "Atlantis") == []
    assert open_meteo.requests[-1].param("name") == "Atlantis"


async def test_a_service_that_is_down_is_one_clear_sentence() -> None:
    down = f"http://127.0.0.1:{free_port()}/v1/search"
    settings = dataclasses.replace(Settings(), geocoding_url=down)
    with pytest.raises(WeatherError, match="geocoding service"):
        await find_places(settings, "Bandung")
