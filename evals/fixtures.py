"""Real local HTTP servers standing in for the outside world, for tests and evals.

Each fixture is a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (port chosen by the OS) in a
background thread, used as a context manager or with ``start()``/``stop()``; ``.url`` is
its base URL, ``.requests`` every request it received, and ``settings_overrides()`` the
``Settings`` fields that point the tools at it. ``DuckDuckGoFixture`` answers searches
(the query picks the page: results, none, a bot check, an error, a hostile page, a huge
or compressed body); ``OpenMeteoFixture`` the forecast and geocoding over
``fixture_data/open_meteo_places.json``; ``ImageFixture`` the three image backends and
static images. Which query gives which page: docs/evals.md.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import html
import io
import json
import math
import threading
import time
import uuid
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, quote, quote_plus, unquote, urlsplit

from PIL import Image, ImageDraw

DATA_DIR = Path(__file__).parent / "fixture_data"

COLOURS: dict[str, tuple[int, int, int]] = {
    "orange": (240, 130, 20),
    "ginger": (240, 130, 20),
    "black": (25, 25, 25),
    "white": (250, 250, 250),
    "grey": (128, 128, 128),
    "gray": (128, 128, 128),
    "brown": (120, 72, 30),
    "red": (210, 30, 30),
    "blue": (40, 80, 220),
    "green": (40, 160, 60),
    "yellow": (240, 210, 40),
    "purple": (130, 50, 170),
    "pink": (240, 140, 180),
}
BACKGROUND = (200, 225, 250)


@dataclass(frozen=True)
class RecordedRequest:
    """One request a fixture received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    @property
    def form(self) -> dict[str, list[str]]:
        """The body read as an urlencoded form."""
        return parse_qs(self.body.decode("utf-8", "replace"))

    def param(self, name: str) -> str | None:
        """A query-string or form field (first value), whichever has it."""
        values = self.query.get(name) or self.form.get(name)
        return values[0] if values else None

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body or b"null")


@dataclass
class Reply:
    """What a fixture answers: status, headers and a body (bytes or a stream of chunks).

    A streamed body is sent without Content-Length, ended by closing the connection.
    """

    status: int = 200
    body: bytes | Iterable[bytes] = b""
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Reply:
        """A JSON reply."""
        return cls(status, json.dumps(data).encode(), "application/json")


class _Handler(BaseHTTPRequestHandler):
    server_version = "CompanionFixture/1.0"
    server: _Server

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``requests`` instead of a log."""

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=unquote(parts.path),
            query=parse_qs(parts.query),
            headers={key.lower(): value for key, value in self.headers.items()},
            body=body,
        )
        fixture = self.server.fixture
        fixture.record(request)
        reply = fixture.handle(request)
        if reply.delay and fixture.stopping.wait(reply.delay):
            return
        # The client may give up (size or time limit): that is what is being tested.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send(reply)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        for key, value in reply.headers.items():
            self.send_header(key, value)
        if isinstance(reply.body, bytes):
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            return
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in reply.body:
            self.wfile.write(chunk)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, fixture: FixtureServer) -> None:
        self.fixture = fixture
        super().__init__(("127.0.0.1", 0), _Handler)


class FixtureServer:
    """Base of the fixtures: a local server whose ``handle`` subclasses define."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:40123`` (the server must be started)."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        """Start serving in a background thread; returns self."""
        if self._server is None:
            self.stopping.clear()
            self._server = _Server(self)
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=type(self).__name__,
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port (delayed replies are abandoned)."""
        if self._server is None:
            return
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def record(self, request: RecordedRequest) -> None:
        """Keep a received request (thread-safe)."""
        with self._lock:
            self.requests.append(request)

    def clear(self) -> None:
        """Forget the requests received so far."""
        with self._lock:
            self.requests.clear()

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """The received requests whose path starts with ``path``."""
        with self._lock:
            return [request for request in self.requests if request.path.startswith(path)]

    def handle(self, request: RecordedRequest) -> Reply:
        """The reply to one request."""
        raise NotImplementedError

    def settings_overrides(self) -> dict[str, Any]:
        """``Settings`` fields that point the tools at this fixture."""
        raise NotImplementedError


def _data(name: str) -> str:
    return (DATA_DIR / name).read_text(encoding="utf-8")


class DuckDuckGoFixture(FixtureServer):
    """DuckDuckGo's HTML endpoint at ``/html/``; the query text chooses the page."""

    def __init__(
        self,
        slow_seconds: float = 3.0,
        huge_bytes: int = 300 * 1024 * 1024,
        many_results: int = 8_000,
    ) -> None:
        super().__init__()
        self.slow_seconds = slow_seconds
        self.huge_bytes = huge_bytes
        self.many_results = many_results

    @functools.cached_property
    def gzip_bomb(self) -> bytes:
        """Gzip bytes that decode to ``huge_bytes`` of zeros (made once, about a second)."""
        compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        chunk = bytes(1024 * 1024)
        parts = [compressor.compress(chunk) for _ in range(self.huge_bytes // len(chunk))]
        return b"".join(parts) + compressor.flush()

    @property
    def search_url(self) -> str:
        """The endpoint to configure as ``web_search_url``."""
        return f"{self.url}/html/"

    def settings_overrides(self) -> dict[str, Any]:
        """Point web_search here."""
        return {"web_search_url": self.search_url}

    def handle(self, request: RecordedRequest) -> Reply:
        """Serve the page the query asks for."""
        if request.path.rstrip("/") != "/html":
            return Reply(404, b"not found", "text/plain")
        query = (request.param("q") or "").strip()
        lowered = query.lower()
        if not query:
            return Reply(200, self._page("", _data("ddg_no_results.html")))
        if "ratelimit" in lowered:
            return Reply(202, _fill(_data("ddg_anomaly.html"), query))
        if "captcha" in lowered or "anomaly" in lowered:
            return Reply(200, _fill(_data("ddg_anomaly.html"), query))
        if "servererror" in lowered:
            return Reply(500, b"<html><body>Internal Server Error</body></html>")
        if "unexpected" in lowered:
            return Reply(200, _fill(_data("ddg_unexpected.html"), query))
        if "noresults" in lowered:
            return Reply(200, self._page(query, _data("ddg_no_results.html")))
        if "hugepage" in lowered:
            return Reply(200, _zeros_stream(self.huge_bytes, b"<html><body>"))
        if "gzipbomb" in lowered:
            return Reply(200, self.gzip_bomb, headers={"Content-Encoding": "gzip"})
        if "manyresults" in lowered:
            return Reply(200, self._page(query, _many_results(self.many_results)))
        delay = self.slow_seconds if "slow" in lowered else 0.0
        return Reply(
            200,
            self._page(query, _data(_topic_page(lowered)) + _data("ddg_next.html")),
            delay=delay,
        )

    @staticmethod
    def _page(query: str, body: str) -> bytes:
        page = _data("ddg_header.html") + body + _data("ddg_footer.html")
        return _fill(page, query)


def _many_results(count: int) -> str:
    """A results block of ``count`` small organic results."""
    result = (
        '<div class="result web-result"><a class="result__a" href="https://r{n}.example/">'
        'Result {n}</a><a class="result__snippet">snippet {n}</a></div>\n'
    )
    return (
        '<div id="links" class="results">'
        + "".join(result.format(n=n) for n in range(count))
        + "</div>"
    )


def _zeros_stream(total: int, head: bytes = b"") -> Iterator[bytes]:
    """``head`` then zero bytes up to ``total``, in 64 KB chunks (never held whole)."""
    yield head
    sent = len(head)
    chunk = bytes(64 * 1024)
    while sent < total:
        yield chunk
        sent += len(chunk)


def _topic_page(lowered: str) -> str:
    words = set(lowered.replace("/", " ").split())
    if "rainbow cat cafe" in lowered:
        return "ddg_hostile.html"
    if {"usd", "jpy"} <= words or "yen" in words or "exchange rate" in lowered or "kurs" in words:
        return "ddg_currency.html"
    if words & {"weather", "forecast", "cuaca", "temperature"}:
        return "ddg_weather.html"
    return "ddg_generic.html"


def _fill(page: str, query: str) -> bytes:
    filled = page.replace("{{query_uddg}}", quote(quote_plus(query), safe=""))
    return filled.replace("{{query}}", html.escape(query)).encode("utf-8")


class OpenMeteoFixture(FixtureServer):
    """Open-Meteo's forecast (``/v1/forecast``) and geocoding (``/v1/search``) APIs."""

    def __init__(self) -> None:
        super().__init__()
        data = json.loads(_data("open_meteo_places.json"))
        self.places: list[dict[str, Any]] = data["places"]

    @property
    def forecast_url(self) -> str:
        """The endpoint to configure as ``weather_url``."""
        return f"{self.url}/v1/forecast"

    @property
    def geocoding_url(self) -> str:
        """The endpoint to configure as ``geocoding_url``."""
        return f"{self.url}/v1/search"

    def settings_overrides(self) -> dict[str, Any]:
        """Point weather (and its geocoding) here."""
        return {"weather_url": self.forecast_url, "geocoding_url": self.geocoding_url}

    def set_current(
        self,
        latitude: float,
        longitude: float,
        *,
        temperature: float,
        weather_code: int,
        wind_speed: float,
        name: str = "Fixture Point",
    ) -> None:
        """Add a place whose current conditions the forecast will report."""
        self.places.append(
            {
                "id": len(self.places) + 1,
                "name": name,
                "latitude": latitude,
                "longitude": longitude,
                "country_code": "XX",
                "country": "Nowhere",
                "population": 0,
                "current": {
                    "temperature_2m": temperature,
                    "weather_code": weather_code,
                    "wind_speed_10m": wind_speed,
                },
            }
        )

    def handle(self, request: RecordedRequest) -> Reply:
        """Answer a forecast or geocoding request."""
        if request.path == "/v1/search":
            return self._search(request)
        if request.path == "/v1/forecast":
            return self._forecast(request)
        return Reply.json({"error": True, "reason": "Not found"}, 404)

    def _search(self, request: RecordedRequest) -> Reply:
        name = (request.param("name") or "").strip().casefold()
        count = int(request.param("count") or 10)
        started = time.perf_counter()
        if len(name) < 2:
            matches: list[dict[str, Any]] = []
        elif len(name) == 2:
            matches = [p for p in self.places if p["name"].casefold() == name]
        else:
            matches = [p for p in self.places if p["name"].casefold().startswith(name)]
        matches.sort(key=lambda p: -int(p.get("population") or 0))
        body: dict[str, Any] = {"generationtime_ms": (time.perf_counter() - started) * 1000}
        if matches:
            body["results"] = [
                {k: v for k, v in place.items() if k != "current"} for place in matches[:count]
            ]
        return Reply.json(body)

    def _forecast(self, request: RecordedRequest) -> Reply:
        try:
            lat = float(request.param("latitude") or "nan")
            lon = float(request.param("longitude") or "nan")
        except ValueError:
            return Reply.json(
                {"error": True, "reason": "Cannot initialize from invalid value"}, 400
            )
        if not -90 <= lat <= 90:
            return Reply.json(
                {
                    "error": True,
                    "reason": f"Latitude must be in range of -90 to 90°. Given: {lat}.",
                },
                400,
            )
        if not -180 <= lon <= 180:
            return Reply.json(
                {
                    "error": True,
                    "reason": f"Longitude must be in range of -180 to 180°. Given: {lon}.",
                },
                400,
            )
        conditions = self._conditions(lat, lon)
        wanted = (request.param("current") or "").split(",")
        wind_unit = request.param("wind_speed_unit") or "kmh"
        if wind_unit == "ms":
            conditions["wind_speed_10m"] = round(conditions["wind_speed_10m"] / 3.6, 1)
        if request.param("temperature_unit") == "fahrenheit":
            conditions["temperature_2m"] = round(conditions["temperature_2m"] * 9 / 5 + 32, 1)
        units = {
            "temperature_2m": "°F" if request.param("temperature_unit") == "fahrenheit" else "°C",
            "weather_code": "wmo code",
            "wind_speed_10m": {"ms": "m/s", "mph": "mp/h"}.get(wind_unit, "km/h"),
        }
        current: dict[str, Any] = {"time": "2026-11-20T09:00", "interval": 900}
        current_units: dict[str, str] = {"time": "iso8601", "interval": "seconds"}
        for name in wanted:
            if name in conditions:
                current[name] = conditions[name]
                current_units[name] = units[name]
        return Reply.json(
            {
                "latitude": round(lat, 4),
                "longitude": round(lon, 4),
                "generationtime_ms": 0.05,
                "utc_offset_seconds": 0,
                "timezone": "GMT",
                "timezone_abbreviation": "GMT",
                "elevation": 40.0,
                "current_units": current_units,
                "current": current,
            }
        )

    def _conditions(self, lat: float, lon: float) -> dict[str, Any]:
        """A known place's conditions (within 0.1°), else deterministic made-up ones."""
        for place in self.places:
            if abs(place["latitude"] - lat) < 0.1 and abs(place["longitude"] - lon) < 0.1:
                return dict(place["current"])
        codes = (0, 1, 2, 3, 45, 61, 80, 95)
        return {
            "temperature_2m": round(30 - abs(lat) * 0.6, 1),
            "weather_code": codes[int(abs(lat) + abs(lon)) % len(codes)],
            "wind_speed_10m": round(5 + (abs(lat * 7 + lon * 3) % 25), 1),
        }


def cat_image(
    colour: str = "orange", size: tuple[int, int] = (256, 256), image_format: str = "PNG"
) -> bytes:
    """Real image bytes: a simple cat in ``colour`` on a light-blue background."""
    fill = COLOURS.get(colour, COLOURS["orange"])
    width, height = size
    image = Image.new("RGB", size, BACKGROUND)
    draw = ImageDraw.Draw(image)
    unit = min(width, height) / 16
    cx, cy = width / 2, height / 2
    draw.ellipse((cx - 5 * unit, cy, cx + 5 * unit, cy + 7 * unit), fill=fill)  # body
    draw.ellipse((cx - 4 * unit, cy - 6 * unit, cx + 4 * unit, cy + unit), fill=fill)  # head
    for side in (-1, 1):
        ear = [
            (cx + side * 1.5 * unit, cy - 5 * unit),
            (cx + side * 4 * unit, cy - 5 * unit),
            (cx + side * 3.5 * unit, cy - 8 * unit),
        ]
        draw.polygon(ear, fill=fill)
        eye = cx + side * 1.6 * unit
        draw.ellipse(
            (eye - 0.6 * unit, cy - 3 * unit, eye + 0.6 * unit, cy - 1.8 * unit), fill=(40, 160, 70)
        )
    tail = [
        (cx + 4.5 * unit + math.cos(t / 4) * 2 * unit, cy + 6 * unit - t * unit * 0.6)
        for t in range(8)
    ]
    draw.line(tail, fill=fill, width=max(2, int(unit)))
    out = io.BytesIO()
    image.save(out, format=image_format)
    return out.getvalue()


def colour_in(text: str, default: str) -> str:
    """The first colour word in ``text`` (e.g. "a black cat" -> black), else ``default``."""
    for word in text.lower().replace("-", " ").replace("/", " ").split():
        if word in COLOURS:
            return word
    return default


class ImageFixture(FixtureServer):
    """Image generation backends and static images.

    - ``POST /v1/images/generations``: OpenAI-compatible; answers ``b64_json`` unless
      ``openai_response = "url"`` (then a ``url`` under ``/files/``).
    - ``POST /v1/chat/completions``: OpenRouter-style; the image is a data URL in
      ``choices[0].message.images`` when ``modalities`` includes "image".
    - ``GET /prompt/<text>?model=...``: key-free backend answering JPEG bytes.
    - ``GET /images/cat.png`` (or ``<colour>-cat.png``/``.jpg``): a static image;
      ``/images/not-an-image.png`` (HTML served as image/png); ``/images/huge.png``
      (announces ``oversize_bytes``); ``/images/huge-stream.png`` (streams them with no
      length); ``/images/slow-cat.png`` (answers after ``slow_seconds``);
      ``/redirect/<name>`` -> 302 to ``/images/<name>``.

    A prompt containing "refuse" is refused (HTTP 400 for OpenAI-style, text only for
    OpenRouter-style, HTTP 400 for ``/prompt``); "notimage" gets bytes that are not an
    image. With ``api_key`` set, ``/v1/*`` requires ``Authorization: Bearer <api_key>``.
    """

    def __init__(
        self,
        color: str = "orange",
        size: tuple[int, int] = (256, 256),
        api_key: str | None = None,
        oversize_bytes: int = 11 * 1024 * 1024,
        slow_seconds: float = 3.0,
    ) -> None:
        super().__init__()
        self.color = color
        self.size = size
        self.api_key = api_key
        self.oversize_bytes = oversize_bytes
        self.slow_seconds = slow_seconds
        self.openai_response = "b64_json"
        self._files: dict[str, bytes] = {}

    @property
    def base_url(self) -> str:
        """``image_base_url`` for the openai and openrouter backends."""
        return f"{self.url}/v1"

    def image_url(self, name: str = "cat.png") -> str:
        """URL of a static image under ``/images/``."""
        return f"{self.url}/images/{name}"

    def settings_overrides(self) -> dict[str, Any]:
        """Configure the OpenAI-compatible backend here."""
        return {
            "image_backend": "openai",
            "image_base_url": self.base_url,
            "image_model": "fixture-image-1",
            "image_api_key": self.api_key,
        }

    def handle(self, request: RecordedRequest) -> Reply:
        """Route to the backend or static image the path names."""
        path = request.path
        if (
            path.startswith("/v1/")
            and self.api_key is not None
            and (request.headers.get("authorization") != f"Bearer {self.api_key}")
        ):
            return Reply.json({"error": {"message": "Invalid API key", "code": 401}}, 401)
        if path == "/v1/images/generations" and request.method == "POST":
            return self._openai(request)
        if path == "/v1/chat/completions" and request.method == "POST":
            return self._openrouter(request)
        if path.startswith("/prompt/"):
            return self._prompt(path.removeprefix("/prompt/"))
        if path.startswith("/files/") and path.removeprefix("/files/") in self._files:
            return Reply(200, self._files[path.removeprefix("/files/")], "image/png")
        if path.startswith("/redirect/"):
            return Reply(
                302, b"", "text/plain", {"Location": "/images/" + path.removeprefix("/redirect/")}
            )
        if path.startswith("/images/"):
            return self._static(path.removeprefix("/images/"))
        return Reply(404, b"not found", "text/plain")

    def _draw(self, text: str, image_format: str = "PNG") -> bytes:
        return cat_image(colour_in(text, self.color), self.size, image_format)

    def _openai(self, request: RecordedRequest) -> Reply:
        prompt = str(request.json().get("prompt", ""))
        if "refuse" in prompt:
            return Reply.json(
                {
                    "error": {
                        "message": "Your request was rejected as a result of our safety system.",
                        "type": "invalid_request_error",
                        "code": "content_policy_violation",
                    }
                },
                400,
            )
        data = b"<html>not an image</html>" if "notimage" in prompt else self._draw(prompt)
        if self.openai_response == "url":
            name = f"{uuid.uuid4().hex}.png"
            self._files[name] = data
            item = {"url": f"{self.url}/files/{name}", "revised_prompt": prompt}
        else:
            item = {"b64_json": base64.b64encode(data).decode(), "revised_prompt": prompt}
        return Reply.json({"created": int(time.time()), "data": [item]})

    def _openrouter(self, request: RecordedRequest) -> Reply:
        payload = request.json()
        messages = payload.get("messages") or [{}]
        prompt = str(messages[-1].get("content", ""))
        message: dict[str, Any] = {"role": "assistant", "content": "Here is your image."}
        if "refuse" in prompt or "image" not in (payload.get("modalities") or []):
            message["content"] = "I can't create that image, but I can describe it instead."
        else:
            data = b"<html>not an image</html>" if "notimage" in prompt else self._draw(prompt)
            message["images"] = [
                {
                    "type": "image_url",
                    "image_url": {
                        "url": "data:image/png;base64," + base64.b64encode(data).decode()
                    },
                }
            ]
        return Reply.json(
            {
                "id": f"gen-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": payload.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            }
        )

    def _prompt(self, prompt: str) -> Reply:
        if "refuse" in prompt:
            return Reply(400, b"prompt rejected", "text/plain")
        if "notimage" in prompt:
            return Reply(200, b"<html>not an image</html>", "image/jpeg")
        return Reply(200, self._draw(prompt, "JPEG"), "image/jpeg")

    def _static(self, name: str) -> Reply:
        if name == "not-an-image.png":
            return Reply(200, b"<!DOCTYPE html><html><body>Nothing here</body></html>", "image/png")
        if name == "huge.png":
            return Reply(200, b"\x89PNG\r\n\x1a\n" + bytes(self.oversize_bytes - 8), "image/png")
        if name == "huge-stream.png":
            return Reply(200, self._stream(self.oversize_bytes), "image/png")
        if name == "slow-cat.png":
            return Reply(200, self._draw(""), "image/png", delay=self.slow_seconds)
        stem, _, extension = name.rpartition(".")
        image_format = {
            "png": "PNG",
            "jpg": "JPEG",
            "jpeg": "JPEG",
            "gif": "GIF",
            "webp": "WEBP",
        }.get(extension.lower())
        if image_format is None or not (stem == "cat" or stem.endswith("-cat")):
            return Reply(404, b"not found", "text/plain")
        # The Content-Type is deliberately generic: clients must read the bytes.
        return Reply(200, self._draw(stem, image_format), "application/octet-stream")

    @staticmethod
    def _stream(total: int) -> Iterator[bytes]:
        yield b"\x89PNG\r\n\x1a\n"
        sent = 8
        chunk = bytes(64 * 1024)
        while sent < total:
            yield chunk
            sent += len(chunk)


class FixtureSuite:
    """All three fixtures together, for the eval harness: one context manager."""

    def __init__(self, image_color: str = "orange") -> None:
        self.duckduckgo = DuckDuckGoFixture()
        self.open_meteo = OpenMeteoFixture()
        self.images = ImageFixture(color=image_color)

    def __enter__(self) -> Self:
        for fixture in (self.duckduckgo, self.open_meteo, self.images):
            fixture.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for fixture in (self.duckduckgo, self.open_meteo, self.images):
            fixture.stop()

    def settings_overrides(self) -> dict[str, Any]:
        """``Settings`` fields pointing web_search, weather and image_generate here."""
        return {
            **self.duckduckgo.settings_overrides(),
            **self.open_meteo.settings_overrides(),
            **self.images.settings_overrides(),
            "allow_private_urls": True,
        }
