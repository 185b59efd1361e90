"""Benchmarks (scripts that print Markdown tables; not tests): ``python -m bench.<name>``."""

from __future__ import annotations

import os

QUIET = {
    "GRADIO_ANALYTICS_ENABLED": "False",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "NO_PROXY": "127.0.0.1,localhost",
}


def quiet_environment() -> None:
    """No telemetry, and loopback never through a proxy (benchmarks stay on 127.0.0.1)."""
    for name, value in QUIET.items():
        os.environ.setdefault(name, value)
