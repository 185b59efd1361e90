"""COMPANION_LOCAL_MODEL chooses the local model's GGUF (issue 23, item 5): unset, the
bundled SmolLM2; a known short name, a model shipped in parts and joined once; a path, that
file. A missing or wrong file is one ProviderError naming the fix, before any server starts;
the server then serves the chosen file, and the chat shows the chosen model's name."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from config.settings import LOCAL_MODEL_NAME, load_settings
from providers import ProviderError, chat, local_model_path, make_chat_model
from providers import local_model as lm
from providers.local_model import KnownModel, LazyLocalChatModel, choose, model_file, prepare

PARTS = [b"GGUF\x03\x00\x00\x00first part ", b"second part ", b"last"]


class FakeServer:
    """Records the file and folder it was set to (the real one starts llama.cpp's server)."""

    def __init__(self) -> None:
        self.model_path: Path | None = None
        self.log_dir: Path | None = None


@pytest.fixture
def parted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KnownModel:
    """A known model whose three parts are installed as packages on sys.path."""
    site = tmp_path / "site"
    for n, data in enumerate(PARTS, start=1):
        folder = site / f"fake_model_part{n}" / "data"
        folder.mkdir(parents=True)
        (folder.parent / "__init__.py").write_text("")
        (folder / f"part{n:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    model = KnownModel(
        label="Fake-Model-Q4",
        parts=tuple((f"fake_model_part{n}", f"data/part{n:02d}.bin") for n in (1, 2, 3)),
        install="pip install fake-model-part1 fake-model-part2 fake-model-part3",
        sha256=hashlib.sha256(b"".join(PARTS)).hexdigest(),
    )
    monkeypatch.setitem(lm.KNOWN_MODELS, "fake-model", model)
    monkeypatch.setattr(lm, "ASSEMBLED_DIR", tmp_path / "models")
    return model


def gguf(path: Path, body: bytes = b"GGUF\x03\x00\x00\x00rest") -> Path:
    path.write_bytes(body)
    return path


def test_the_variable_is_read_by_load_settings() -> None:
    settings = load_settings(env={"COMPANION_LOCAL_MODEL": "~/m.gguf"})
    assert settings.local_model == "~/m.gguf"
    assert load_settings(env={}).local_model is None


def test_unset_or_smollm2_is_the_bundled_model() -> None:
    assert model_file(None) == model_file("smollm2") == local_model_path()


def test_a_path_is_that_gguf(tmp_path: Path) -> None:
    path = gguf(tmp_path / "mine.gguf")
    assert model_file(str(path)) == path


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    path = gguf(tmp_path / "broken.gguf", b"<html>not found</html>")
    with pytest.raises(ProviderError, match="is not a GGUF file"):
        model_file(str(path))


def test_an_unknown_name_names_the_known_ones() -> None:
    with pytest.raises(ProviderError, match=re.escape("(smollm2, qwen2.5-coder-0.5b)")):
        model_file("llama-70b")


def test_a_known_model_in_parts_is_joined_once(parted: KnownModel) -> None:
    path = model_file("fake-model")
    assert path.read_bytes() == b"".join(PARTS)
    assert path.parent == lm.ASSEMBLED_DIR and path.name == "Fake-Model-Q4.gguf"
    written = path.stat().st_mtime_ns
    assert model_file("fake-model") == path
    assert path.stat().st_mtime_ns == written  # not joined again
    assert list(path.parent.iterdir()) == [path]  # no partial file left


def test_parts_that_do_not_make_the_known_file_are_refused(
    parted: KnownModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = dataclasses.replace(parted, sha256="0" * 64)  # as if a part were swapped
    monkeypatch.setitem(lm.KNOWN_MODELS, "fake-model", other)
    with pytest.raises(ProviderError, match=r"do not make the known file.*reinstall them"):
        model_file("fake-model")
    assert not lm.ASSEMBLED_DIR.exists() or list(lm.ASSEMBLED_DIR.iterdir()) == []


def test_a_known_model_not_installed_says_how_to_install(
    parted: KnownModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not p.endswith("site")])
    sys.modules.pop("fake_model_part2", None)
    with pytest.raises(ProviderError, match=r"not installed: pip install fake-model-part1"):
        model_file("fake-model")


def test_the_server_serves_the_chosen_file(tmp_path: Path) -> None:
    path = gguf(tmp_path / "mine.gguf")
    settings = load_settings({"home": tmp_path / "home"}, env={"COMPANION_LOCAL_MODEL": str(path)})
    server: Any = prepare(FakeServer(), settings)  # type: ignore[arg-type]
    assert server.model_path == path
    assert server.log_dir == tmp_path / "home" / "logs"


def test_making_the_chat_model_chooses_the_file_the_warm_start_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = gguf(tmp_path / "mine.gguf")
    settings = load_settings({"home": tmp_path}, env={"COMPANION_LOCAL_MODEL": str(path)})
    server = FakeServer()
    monkeypatch.setattr(chat, "local_server", lambda: server)
    chat.lazy_local_model(settings)
    assert server.model_path == path


def test_a_missing_file_is_one_logged_line_then_the_first_calls_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "gone.gguf"
    settings = load_settings({"home": tmp_path}, env={"COMPANION_LOCAL_MODEL": str(missing)})
    server = FakeServer()
    with caplog.at_level(logging.ERROR, logger="companion.providers"):
        choose(server, settings)  # type: ignore[arg-type]
    assert server.model_path is None
    assert f"COMPANION_LOCAL_MODEL={missing}: no such GGUF file" in caplog.text
    with pytest.raises(ProviderError, match="no such GGUF file"):
        prepare(FakeServer(), settings)  # type: ignore[arg-type]


def test_the_chat_names_the_chosen_model(tmp_path: Path) -> None:
    def named(**env: str) -> tuple[str | None, str]:
        settings = load_settings({"home": tmp_path}, env=env)
        model = LazyLocalChatModel(settings=settings, connect=make_chat_model)
        return settings.chat_model, model.model_name

    assert named() == (LOCAL_MODEL_NAME, LOCAL_MODEL_NAME)
    qwen = "qwen2.5-coder-0.5b (local)"
    assert named(COMPANION_LOCAL_MODEL="qwen2.5-coder-0.5b") == (qwen, qwen)
    mine = "mine.gguf (local)"
    assert named(COMPANION_LOCAL_MODEL="/models/mine.gguf") == (mine, mine)
    chosen = named(COMPANION_LOCAL_MODEL="/models/mine.gguf", COMPANION_CHAT_MODEL="Mine")
    assert chosen == ("Mine", "Mine")
