"""weather against the local Open-Meteo fixture: geocoding rule, defaults, codes, errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config.settings import Settings
from evals.fixtures import OpenMeteoFixture, RecordedRequest, Reply
from memory.sqlite.async_store import AsyncSqliteStore
from memory.sqlite.store import SqliteStore
from tools.base import ToolContext
from tools.registry import ToolRegistry
from tools.weather import (
    TOOLS,
    WMO_WEATHER,
    WeatherError,
    choose_place,
    describe_code,
    format_weather,
    parse_command,
    weather,
)

DOCUMENTED_WMO_CODES = (
    0,
    1,
    2,
    3,
    45,
    48,
    51,
    53,
    55,
    56,
    57,
    61,
    63,
    65,
    66,
    67,
    71,
    73,
    75,
    77,
    80,
    81,
    82,
    85,
    86,
    95,
    96,
    99,
)


@pytest.fixture(scope="module")
def meteo() -> Iterator[OpenMeteoFixture]:
    with OpenMeteoFixture() as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_requests(meteo: OpenMeteoFixture) -> None:
    meteo.clear()


def make_ctx(home: Path, server: OpenMeteoFixture, **settings: Any) -> ToolContext:
    values: dict[str, Any] = {"home": home, **server.settings_overrides(), **settings}
    return ToolContext(Settings(**values), AsyncSqliteStore(SqliteStore.open_home(home)), "s1")


async def test_place_name_is_geocoded_then_forecast(tmp_path, meteo):
    result = await weather({"location": "Tokyo"}, make_ctx(tmp_path, meteo))

    assert result["location"] == "Tokyo, Japan"
    assert (result["temperature"], result["weather"], result["wind_speed"]) == (
        14.2,
        "overcast",
        9.7,
    )
    assert result["units"] == {"temperature": "°C", "wind_speed": "km/h"}
    search, forecast = meteo.requests
    assert search.path == "/v1/search" and search.param("name") == "Tokyo"
    assert forecast.path == "/v1/forecast"
    assert float(forecast.param("latitude") or 0) == pytest.approx(35.6895)
    assert forecast.param("current") == "temperature_2m,weather_code,wind_speed_10m"
    assert forecast.param("wind_speed_unit") == "kmh"
    assert format_weather(result).startswith("Tokyo, Japan: 14.2 °C, overcast, wind 9.7 km/h")


async def test_jakarta_thunderstorm(tmp_path, meteo):
    result = await weather({"location": "jakarta"}, make_ctx(tmp_path, meteo))
    assert result["location"] == "Jakarta, Indonesia"
    assert result["weather"] == "thunderstorm"


async def test_dominant_match_wins_over_small_namesakes(tmp_path, meteo):
    london = await weather({"location": "London"}, make_ctx(tmp_path, meteo))
    assert london["location"] == "London, England, United Kingdom"
    paris = await weather({"location": "Paris"}, make_ctx(tmp_path, meteo))
    assert paris["location"] == "Paris, Île-de-France, France"


async def test_ambiguous_name_is_an_error_listing_candidates(tmp_path, meteo):
    result = await weather({"location": "Springfield"}, make_ctx(tmp_path, meteo))

    assert result["error"].startswith("ambiguous location 'Springfield'")
    assert "Springfield, Illinois, United States" in result["error"]
    assert "Springfield, Queensland, Australia" in result["error"]
    assert [r.path for r in meteo.requests] == ["/v1/search"], "no forecast for a guess"


async def test_qualifier_picks_one_of_the_namesakes(tmp_path, meteo):
    result = await weather({"location": "Springfield, Illinois"}, make_ctx(tmp_path, meteo))
    assert result["location"] == "Springfield, Illinois, United States"
    assert meteo.requests[0].param("name") == "Springfield"
    by_country = await weather({"location": "London, CA"}, make_ctx(tmp_path, meteo))
    assert by_country["location"] == "London, Ontario, Canada"


async def test_unknown_place_is_an_error_without_forecast(tmp_path, meteo):
    result = await weather({"location": "Atlantis"}, make_ctx(tmp_path, meteo))
    assert result == {"error": "unknown location 'Atlantis': no place of that name was found"}
    assert [r.path for r in meteo.requests] == ["/v1/search"]
    wrong_region = await weather({"location": "Tokyo, France"}, make_ctx(tmp_path, meteo))
    assert wrong_region["error"].startswith("unknown location 'Tokyo, France'")


async def test_coordinates_skip_geocoding(tmp_path, meteo):
    result = await weather({"lat": 51.5, "lon": -0.12}, make_ctx(tmp_path, meteo))
    assert result["location"] == "51.5, -0.12"
    assert result["weather"] == "moderate rain"
    (forecast,) = meteo.requests
    assert (forecast.param("latitude"), forecast.param("longitude")) == ("51.5", "-0.12")


async def test_location_with_coordinates_is_only_a_label(tmp_path, meteo):
    result = await weather(
        {"location": "Home", "lat": -6.2, "lon": 106.85}, make_ctx(tmp_path, meteo)
    )
    assert result["location"] == "Home"
    assert result["weather"] == "thunderstorm"
    assert [r.path for r in meteo.requests] == ["/v1/forecast"]


async def test_saved_location_is_the_default(tmp_path, meteo):
    ctx = make_ctx(tmp_path, meteo, latitude=-6.9, longitude=107.6)
    result = await weather({}, ctx)
    assert result["weather"] == "slight rain"
    assert result["location"] == "-6.9, 107.6"


@pytest.mark.parametrize("args", [{}, {"lat": 0, "lon": 0}, {"lat": 0.0, "lon": 0.0}])
async def test_zero_zero_is_location_not_set_and_no_request(tmp_path, meteo, args):
    result = await weather(args, make_ctx(tmp_path, meteo))
    assert result == {"error": "location_not_set"}
    assert meteo.requests == []


async def test_half_coordinates_are_refused(tmp_path, meteo):
    result = await weather({"lat": 10.0}, make_ctx(tmp_path, meteo))
    assert result == {"error": "give both lat and lon, or a location name"}
    assert meteo.requests == []


async def test_service_error_reason_is_reported(tmp_path, meteo):
    result = await weather({"lat": 95.0, "lon": 10.0}, make_ctx(tmp_path, meteo))
    assert result["error"].startswith("weather service answered HTTP 400: Latitude must be")


async def test_unreachable_service_is_an_error(tmp_path):
    with OpenMeteoFixture() as closed:
        overrides = closed.settings_overrides()
    ctx = ToolContext(
        Settings(home=tmp_path, **overrides), AsyncSqliteStore(SqliteStore.open_home(tmp_path))
    )
    result = await weather({"location": "Tokyo"}, ctx)
    assert result == {"error": "could not connect to the weather service"}


def test_every_documented_wmo_code_has_words():
    assert set(WMO_WEATHER) == set(DOCUMENTED_WMO_CODES)
    assert describe_code(48) == "depositing rime fog"
    assert describe_code(99) == "thunderstorm with heavy hail"
    assert describe_code(42) == "unknown conditions (WMO code 42)"


async def test_code_from_the_service_becomes_words(tmp_path, meteo):
    meteo.set_current(12.0, 34.0, temperature=-3.5, weather_code=86, wind_speed=40.2)
    result = await weather({"lat": 12.0, "lon": 34.0}, make_ctx(tmp_path, meteo))
    assert (result["temperature"], result["weather"], result["wind_speed"]) == (
        -3.5,
        "heavy snow showers",
        40.2,
    )


def test_choose_place_rule_on_population():
    close = [
        {"name": "Twin", "country": "A", "population": 1000},
        {"name": "Twin", "country": "B", "population": 300},
    ]
    with pytest.raises(WeatherError, match="ambiguous"):
        choose_place("Twin", close)
    close[1]["population"] = 200
    assert choose_place("Twin", close)["country"] == "A"
    fuzzy = [{"name": "Twinsburg", "country": "A", "population": 5}]
    assert choose_place("Twin", fuzzy)["name"] == "Twinsburg", "no exact match: use all"


def test_command_parsing():
    (spec,) = TOOLS
    assert (spec.command, spec.role) == ("weather", "weather_tool")
    assert spec.command_arguments("Tokyo") == {"location": "Tokyo"}
    assert spec.command_arguments("") == {}
    assert parse_command("-6.2, 106.85") == {"lat": -6.2, "lon": 106.85}


async def test_through_the_registry(tmp_path, meteo):
    registry = ToolRegistry(TOOLS)
    ctx = make_ctx(tmp_path, meteo)
    result = await registry.execute("weather", {"location": "London"}, ctx)
    assert result["temperature"] == 8.3
    assert "WEATHER" in registry.format_result("weather", result)
    invalid = await registry.execute("weather", {"lat": 200, "lon": 0}, ctx)
    assert invalid["error"].startswith("invalid arguments for weather: lat")
    unknown_key = await registry.execute("weather", {"city": "Tokyo"}, ctx)
    assert "invalid arguments" in unknown_key["error"]


class FloodingMeteo(OpenMeteoFixture):
    """An Open-Meteo stand-in whose forecast streams far more than any real answer."""

    def handle(self, request: RecordedRequest) -> Reply:
        if request.path == "/v1/forecast":
            chunk = b" " * 65_536
            return Reply(200, (chunk for _ in range(3_000)), "application/json")
        return super().handle(request)


async def test_a_flooding_service_is_cut_off_at_the_cap(tmp_path):
    with FloodingMeteo() as flood:
        result = await weather({"lat": 35.7, "lon": 139.7}, make_ctx(tmp_path, flood))
    assert result["error"].startswith("the weather service sent too much")
