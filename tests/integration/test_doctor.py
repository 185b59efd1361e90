"""``companion doctor``, run for real: one line per check, non-zero when chat can't answer."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.fixtures import DuckDuckGoFixture, OpenMeteoFixture
from tests.support.fake_openai import FakeOpenAIServer, Step


@pytest.fixture(scope="module")
def services() -> Iterator[dict[str, str]]:
    """The web services' stand-ins, so doctor never reaches outside this machine."""
    with DuckDuckGoFixture() as ddg, OpenMeteoFixture() as meteo:
        yield {
            "COMPANION_WEB_SEARCH_URL": ddg.search_url,
            "COMPANION_WEATHER_URL": meteo.forecast_url,
        }


def doctor(home: Path, services: dict[str, str], **env: str) -> subprocess.CompletedProcess[str]:
    """Run the real CLI's doctor with a clean environment plus ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER"))}
    clean.update(COMPANION_HOME=str(home), COMPANION_CHAT_MODEL="fake-model", **services)
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "doctor"],
        capture_output=True,
        text=True,
        timeout=180,
        env=clean,
    )


def test_a_working_endpoint_passes(tmp_path: Path, services: dict[str, str]) -> None:
    with FakeOpenAIServer() as chat:
        done = doctor(tmp_path, services, COMPANION_BASE_URL=chat.url, COMPANION_API_KEY="k")
        completions = [r for r in chat.requests if r.get("max_tokens") == 1]
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("✓ database:") and "integrity ok" in line for line in lines)
    assert any(line.startswith("✓ chat endpoint:") for line in lines)
    assert any(line.startswith("✓ completion:") for line in lines)
    assert any(line.startswith("✓ web search:") for line in lines)
    assert any(line.startswith("· vision model: none") for line in lines)
    assert any(line.startswith("· location: not set") for line in lines)
    assert completions, "doctor sent no 1-token completion"


def test_a_refused_key_fails_with_the_key_advice(tmp_path: Path, services: dict[str, str]) -> None:
    with FakeOpenAIServer() as chat:
        chat.push(Step(status=401))
        done = doctor(tmp_path, services, COMPANION_BASE_URL=chat.url, COMPANION_API_KEY="bad")
    assert done.returncode == 1
    assert "✗ completion: HTTP 401" in done.stdout
    assert "the key was refused" in done.stdout


def test_an_unreachable_endpoint_fails(tmp_path: Path, services: dict[str, str]) -> None:
    done = doctor(tmp_path, services, COMPANION_BASE_URL="http://127.0.0.1:9/v1")
    assert done.returncode == 1
    assert "✗ chat endpoint: http://127.0.0.1:9/v1 unreachable" in done.stdout
    assert "the chat path cannot answer" in done.stderr


@pytest.mark.local_model
def test_the_default_configuration_passes(tmp_path: Path, services: dict[str, str]) -> None:
    done = doctor(tmp_path, services)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "✓ local model: generated" in done.stdout
    assert "✓ completion: smollm2 answered" in done.stdout


def test_no_chat_model_fails_naming_the_variable(tmp_path: Path, services: dict[str, str]) -> None:
    with FakeOpenAIServer() as chat:
        done = doctor(tmp_path, services, COMPANION_BASE_URL=chat.url, COMPANION_CHAT_MODEL="")
    assert done.returncode == 1
    assert "✗ chat model: no chat model is set" in done.stdout
    assert "COMPANION_CHAT_MODEL" in done.stdout
