"""weather: current conditions from Open-Meteo (no key), for a place name or coordinates.

A place name is geocoded with Open-Meteo's geocoding API. Ambiguity rule: among the
matches whose name equals the asked name (all matches when none does), narrowed by any
qualifiers after commas ("Springfield, Illinois" keeps matches whose region, country or
country code equals "Illinois"), the most populous match is taken when it has at least
five times the population of the next one ("London" is London, England); otherwise the
name is ambiguous and the error lists the candidates so the caller can add a region or
country. Coordinates (0, 0) mean "no location set": that is an error and no request is
made.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import httpx

from config.settings import Settings
from tools.base import ToolContext, ToolSpec
from tools.net import (
    TooLarge,
    describe_http_error,
    endpoint_client,
    read_limited,
    request_timeout,
)

MAX_BODY_BYTES = 1_000_000  # an Open-Meteo answer is a few kB; anything bigger is not one

# Every code of the WMO weather interpretation table documented by Open-Meteo.
WMO_WEATHER = {
    0: "clear sky",
    1: "mainly clear",
    2: "partly cloudy",
    3: "overcast",
    45: "fog",
    48: "depositing rime fog",
    51: "light drizzle",
    53: "moderate drizzle",
    55: "dense drizzle",
    56: "light freezing drizzle",
    57: "dense freezing drizzle",
    61: "slight rain",
    63: "moderate rain",
    65: "heavy rain",
    66: "light freezing rain",
    67: "heavy freezing rain",
    71: "slight snowfall",
    73: "moderate snowfall",
    75: "heavy snowfall",
    77: "snow grains",
    80: "slight rain showers",
    81: "moderate rain showers",
    82: "violent rain showers",
    85: "slight snow showers",
    86: "heavy snow showers",
    95: "thunderstorm",
    96: "thunderstorm with slight hail",
    99: "thunderstorm with heavy hail",
}
CURRENT_VARIABLES = "temperature_2m,weather_code,wind_speed_10m"
GEOCODING_CANDIDATES = 10
DOMINANCE = 5  # population ratio that makes the top match "clearly" the one meant

USE_WHEN = (
    "Get the current weather (temperature in °C, conditions, wind in km/h) when the user "
    "asks about the weather now."
)
DESCRIPTION = (
    "`location`: a place name, optionally with region or country "
    'to disambiguate, e.g. "Springfield, Illinois"; or `lat` and `lon` in decimal degrees. '
    "With neither, the user's saved location is used. Given both, the weather is for "
    "lat/lon and `location` is only the label."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "location": {
            "type": "string",
            "minLength": 1,
            "description": 'Place name, e.g. "Tokyo" or "Paris, France".',
        },
        "lat": {"type": "number", "minimum": -90, "maximum": 90, "description": "Latitude."},
        "lon": {
            "type": "number",
            "minimum": -180,
            "maximum": 180,
            "description": "Longitude.",
        },
    },
    "additionalProperties": False,
}

LOCATION_NOT_SET = "location_not_set"
HALF_COORDINATES = "give both lat and lon, or a location name"
UNKNOWN_PLACE = "unknown location {name!r}: no place of that name was found"
AMBIGUOUS_PLACE = "ambiguous location {name!r}: it could be {options}. Say which, e.g. {example!r}"
_COORDINATES = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*[,\s]\s*(-?\d+(?:\.\d+)?)\s*$")


class WeatherError(Exception):
    """A failure whose message is the tool's error text."""


def describe_code(code: int | None) -> str:
    """The WMO weather code in words."""
    if code is None:
        return "unknown conditions"
    return WMO_WEATHER.get(code, f"unknown conditions (WMO code {code})")


def place_label(place: dict[str, Any]) -> str:
    """'Name, Region, Country' without repeats."""
    parts: list[str] = []
    for key in ("name", "admin1", "country"):
        value = place.get(key)
        if value and value not in parts:
            parts.append(str(value))
    return ", ".join(parts)


def _matches(place: dict[str, Any], qualifier: str) -> bool:
    wanted = qualifier.casefold()
    fields = ("admin1", "admin2", "country", "country_code")
    return any(str(place.get(key) or "").casefold() == wanted for key in fields)


def choose_place(asked: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The one place meant by ``asked`` among geocoding results (see the module rule)."""
    name, *qualifiers = [part.strip() for part in asked.split(",") if part.strip()]
    exact = [r for r in results if str(r.get("name", "")).casefold() == name.casefold()]
    candidates = exact or results
    for qualifier in qualifiers:
        candidates = [place for place in candidates if _matches(place, qualifier)]
    if not candidates:
        raise WeatherError(UNKNOWN_PLACE.format(name=asked))
    ranked = sorted(candidates, key=lambda p: int(p.get("population") or 0), reverse=True)
    if len(ranked) == 1:
        return ranked[0]
    first, second = (int(p.get("population") or 0) for p in ranked[:2])
    if first > 0 and first >= DOMINANCE * second:
        return ranked[0]
    labels = [place_label(place) for place in ranked[:5]]
    raise WeatherError(
        AMBIGUOUS_PLACE.format(name=asked, options="; ".join(labels), example=labels[0])
    )


async def _get_json(client: httpx.AsyncClient, url: str, params: dict[str, Any]) -> tuple[int, Any]:
    """GET ``url``: its status and parsed JSON body, streamed under the size cap."""
    async with client.stream("GET", url, params=params) as response:
        try:
            body = await read_limited(response, MAX_BODY_BYTES)
        except TooLarge as exc:
            raise WeatherError(f"the weather service sent too much ({exc})") from exc
    try:
        return response.status_code, json.loads(body)
    except ValueError:
        return response.status_code, None


def _reason(body: Any) -> str:
    """The ": reason" Open-Meteo gives with an error status, if any."""
    return f": {body['reason']}" if isinstance(body, dict) and body.get("reason") else ""


async def _search(client: httpx.AsyncClient, url: str, name: str) -> list[dict[str, Any]]:
    """The geocoder's matches for ``name`` (at most ``GEOCODING_CANDIDATES``)."""
    params: dict[str, str | int] = {
        "name": name,
        "count": GEOCODING_CANDIDATES,
        "language": "en",
        "format": "json",
    }
    status, body = await _get_json(client, url, params)
    if status != 200:
        raise WeatherError(f"geocoding failed: HTTP {status}")
    if not isinstance(body, dict):
        raise WeatherError("geocoding returned no JSON")
    results = body.get("results") or []
    return [place for place in results if isinstance(place, dict)]


async def _geocode(client: httpx.AsyncClient, url: str, asked: str) -> dict[str, Any]:
    return choose_place(asked, await _search(client, url, asked.split(",", 1)[0].strip()))


@dataclass(frozen=True)
class Place:
    """A match of Settings' place search: what fills latitude, longitude and time zone."""

    label: str  # "Bandung, West Java, Indonesia"
    latitude: float
    longitude: float
    timezone: str  # IANA, "" when the geocoder gave none


async def find_places(settings: Settings, name: str) -> list[Place]:
    """The geocoder's matches for the place ``name`` (Settings' "Find"), most populous
    first; WeatherError when the service fails or is unreachable."""
    name = name.split(",", 1)[0].strip()
    if len(name) < 2:
        return []
    try:
        async with endpoint_client(
            settings, "geocoding_url", timeout=request_timeout(settings)
        ) as client:
            found = await _search(client, settings.geocoding_url, name)
    except httpx.HTTPError as exc:
        raise WeatherError(describe_http_error(exc, "the geocoding service")) from exc
    found.sort(key=lambda place: int(place.get("population") or 0), reverse=True)
    return [
        Place(
            place_label(place),
            float(place["latitude"]),
            float(place["longitude"]),
            str(place.get("timezone") or ""),
        )
        for place in found
        if "latitude" in place and "longitude" in place
    ]


async def _current(client: httpx.AsyncClient, url: str, lat: float, lon: float) -> dict[str, Any]:
    params: dict[str, str | float] = {
        "latitude": lat,
        "longitude": lon,
        "current": CURRENT_VARIABLES,
        "temperature_unit": "celsius",
        "wind_speed_unit": "kmh",
        "timezone": "auto",
    }
    status, body = await _get_json(client, url, params)
    if status != 200:
        raise WeatherError(f"weather service answered HTTP {status}{_reason(body)}")
    current = body.get("current") if isinstance(body, dict) else None
    if not isinstance(current, dict) or "temperature_2m" not in current:
        raise WeatherError("weather service returned no current conditions")
    return current


def _target(args: dict[str, Any], ctx: ToolContext) -> tuple[float, float] | None:
    """Coordinates to use (explicit, else the saved ones), or None to geocode a name."""
    has_lat, has_lon = "lat" in args, "lon" in args
    if has_lat != has_lon:
        raise WeatherError(HALF_COORDINATES)
    if has_lat:
        return float(args["lat"]), float(args["lon"])
    if args.get("location"):
        return None
    return ctx.settings.latitude, ctx.settings.longitude


async def weather(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Current temperature, conditions and wind for the asked place."""
    location = str(args.get("location") or "").strip()
    try:
        target = _target(args, ctx)
    except WeatherError as exc:
        return {"error": str(exc)}
    if target is not None and target == (0.0, 0.0):
        return {"error": LOCATION_NOT_SET}
    settings = ctx.settings
    try:
        async with endpoint_client(
            settings, "geocoding_url", "weather_url", timeout=request_timeout(settings)
        ) as client:
            if target is None:
                place = await _geocode(client, settings.geocoding_url, location)
                lat, lon = float(place["latitude"]), float(place["longitude"])
                label = place_label(place)
            else:
                lat, lon = target
                label = location or f"{lat:.4g}, {lon:.4g}"
            current = await _current(client, settings.weather_url, lat, lon)
    except WeatherError as exc:
        return {"error": str(exc)}
    except httpx.HTTPError as exc:
        return {"error": describe_http_error(exc, "the weather service")}
    except ValueError:
        return {"error": "the weather service returned something that is not JSON"}
    code = current.get("weather_code")
    return {
        "location": label,
        "latitude": lat,
        "longitude": lon,
        "temperature": current.get("temperature_2m"),
        "weather": describe_code(int(code) if code is not None else None),
        "weather_code": code,
        "wind_speed": current.get("wind_speed_10m"),
        "units": {"temperature": "°C", "wind_speed": "km/h"},
        "observed_at": current.get("time"),
    }


def parse_command(text: str) -> dict[str, Any]:
    """``/weather Tokyo`` -> location; ``/weather 35.68, 139.69`` -> lat/lon; bare -> {}."""
    text = text.strip()
    coordinates = _COORDINATES.match(text)
    if coordinates:
        return {"lat": float(coordinates.group(1)), "lon": float(coordinates.group(2))}
    return {"location": text} if text else {}


def sent(args: dict[str, Any]) -> str | None:
    """What a call sends off the machine that the model wrote: the place name, or the
    coordinates it gave (None for the person's saved location)."""
    location = str(args.get("location") or "").strip()
    if location:
        return location
    if args.get("lat") is not None and args.get("lon") is not None:
        return f"{args['lat']}, {args['lon']}"
    return None


def format_weather(result: dict[str, Any]) -> str:
    """One line: place, temperature, conditions, wind."""
    return (
        f"{result['location']}: {result['temperature']} °C, {result['weather']}, "
        f"wind {result['wind_speed']} km/h"
        + (f" (observed {result['observed_at']} local time)" if result.get("observed_at") else "")
    )


TOOLS = [
    ToolSpec(
        name="weather",
        use_when=USE_WHEN,
        description=DESCRIPTION,
        parameters=PARAMETERS,
        run=weather,
        role="weather_tool",
        command="weather",
        parse_command=parse_command,
        format=format_weather,
        examples=("/weather Tokyo", "/weather", "/weather -6.2, 106.85"),
        outbound=sent,
    )
]
