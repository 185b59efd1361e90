"""The real ``companion`` CLI configures logging: stderr at --log-level, a file at INFO."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from evals.fixtures import ImageFixture
from tests.support.fake_openai import FakeOpenAIServer, Step


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPANION_", "OPENROUTER_"))}
    env["COMPANION_HOME"] = str(home)
    env.update(extra)
    return env


def _draw(home: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run ``companion [flags] chat -m`` once against a chat model that draws an image."""
    with FakeOpenAIServer() as chat, ImageFixture(api_key="image-key") as images:
        endpoint = images.base_url
        chat.push(Step(tool_calls=[("image_generate", '{"prompt": "an orange cat"}')]), "Here.")
        env = _env(
            home,
            COMPANION_BASE_URL=chat.url,
            COMPANION_API_KEY="chat-key",
            COMPANION_CHAT_MODEL="fake-chat",
            COMPANION_IMAGE_BACKEND="openai",
            COMPANION_IMAGE_BASE_URL=images.base_url,
            COMPANION_IMAGE_MODEL="fixture-image-1",
            COMPANION_IMAGE_API_KEY="image-key",
            COMPANION_ALLOW_PRIVATE_URLS="1",
        )
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", *flags, "chat", "-m", "Draw me a cat"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    return done, endpoint


def test_image_tool_lines_reach_the_log_file(tmp_path: Path) -> None:
    done, endpoint = _draw(tmp_path)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "logs" / "companion.log").read_text()
    assert "[IMAGE TOOL] Selected model: fixture-image-1" in log
    assert f"[IMAGE TOOL] Endpoint: {endpoint}" in log
    assert "[IMAGE TOOL]" not in done.stderr  # INFO stays out of stderr by default
    assert "chat-key" not in log and "image-key" not in log


def test_log_level_flag_sends_info_to_stderr(tmp_path: Path) -> None:
    done, _ = _draw(tmp_path, "--log-level", "info")
    assert done.returncode == 0, done.stderr
    assert "[IMAGE TOOL] Selected model: fixture-image-1" in done.stderr
