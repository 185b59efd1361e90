"""The Memories tab's "Your data": bring a history from another app.

An import runs as a job the server owns (``Job``: an asyncio task per person, one at a
time), never inside the browser's request: the page follows its progress while the
person chats on in the Chat tab, and a page that closes leaves it running (the tab shows
it again when it is chosen). The file is one Gradio upload, capped by the app's
``max_file_size`` (said beside the control; Gradio's own refusal names it too); the
import itself is ``app.imports.import_export`` (checked whole first, then a transaction
per chat), then each new chat's episodes are cut (extractive, as ``companion import``
does) and its vectors made in the background. The new chats go into the sidebar.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from app.chat_handlers import ChatComponents, session_rows
from app.imports import BadExport, import_export
from graph.jobs import schedule_embedding
from graph.setup import ContextFactory, People

log = logging.getLogger("companion.app")

POLL_SECONDS = 0.25  # how often a page following a job looks at its progress
BAR_CELLS = 20
CHECKING = "Checking {name}"
IMPORTING = "Importing conversations"
CUTTING = "Cutting the new chats into episodes"
BUSY = "⏳ Your data is busy with another job: wait until it has finished."
IMPORT_HELP = (
    "Import your history from ChatGPT (its data export: the zip, or its "
    "`conversations.json`), Claude (`conversations.json`) or Open WebUI (a chat export, "
    "JSON). Up to {limit} per file; for a bigger export run `companion import PATH`. "
    "Importing the same file again adds nothing."
)


def megabytes(size: int) -> str:
    """An upload limit in words: "20 MB"."""
    return f"{size / 1024 / 1024:g} MB"


def bar(done: int, total: int) -> str:
    """Progress as a line of cells and a percentage."""
    part = done / total if total else 0.0
    filled = round(part * BAR_CELLS)
    return f"`{'▰' * filled}{'▱' * (BAR_CELLS - filled)}` {round(part * 100)}%"


@dataclass
class Job:
    """One job on a person's data, run as a task the server owns: the step it is at and
    how far, then how it ended (the report's lines, or one line saying why it failed)."""

    step: str
    done: int = 0
    total: int = 0
    report: list[str] = field(default_factory=list)
    error: str | None = None
    task: asyncio.Task[None] | None = None

    @property
    def finished(self) -> bool:
        return self.task is not None and self.task.done()

    def advance(self, step: str, done: int = 0, total: int = 0) -> None:
        self.step, self.done, self.total = step, done, total

    def shown(self) -> str:
        """The job as the tab shows it (Markdown)."""
        if self.error is not None:
            return f"❌ {self.error}"
        if self.finished:
            first, *rest = self.report or ["Done."]
            return "\n".join([f"✅ {first}", *(f"- {line}" for line in rest)])
        if not self.total:
            return f"⏳ {self.step}…"
        return f"⏳ {self.step}: {self.done:,} of {self.total:,}\n\n{bar(self.done, self.total)}"


async def follow(job: Job) -> AsyncIterator[str]:
    """What the tab shows of ``job``, each time it changes, until it has ended."""
    last = None
    while True:
        shown = job.shown()
        if shown != last:
            yield shown
            last = shown
        if job.finished:
            return
        await asyncio.sleep(POLL_SECONDS)


async def run_import(make_context: ContextFactory, path: Path, job: Job) -> None:
    """Import the export at ``path`` into the person's store, keeping ``job`` up to date;
    a bad file or a failure ends it with one line (nothing of a bad file goes in)."""
    ctx = await make_context()
    store = ctx.store
    try:
        report = await import_export(
            store, path, lambda done, total: job.advance(IMPORTING, done, total)
        )
        for cut, session_id in enumerate(report.sessions, 1):
            job.advance(CUTTING, cut, len(report.sessions))
            await store.refresh_segments(session_id, None, force=True, tz=ctx.settings.timezone)
    except BadExport as exc:
        log.info("refused to import %s: %s", path.name, exc)
        job.error = f"Cannot import {path.name}: {exc}"
        return
    except Exception as exc:  # a store failure or a bug: what went in stays, the rest is said
        log.exception("importing %s failed", path.name)
        job.error = (
            f"The import of {path.name} stopped ({type(exc).__name__}: {exc}). The chats "
            "imported before it stay; importing the file again adds the rest."
        )
        return
    job.report = report.lines()
    schedule_embedding(ctx)  # memory_search finds the imported words by meaning too


class DataHandlers:
    """The section's handlers, each on the logged-in person's store (``people.factory``)."""

    def __init__(self, people: People) -> None:
        self.people = people
        self.jobs: dict[int, Job] = {}  # the newest job of each person, by their factory

    def start(
        self,
        make_context: ContextFactory,
        step: str,
        work: Callable[[Job], Coroutine[Any, Any, None]],
    ) -> Job | None:
        """Start ``work`` as the person's job (None: a job of theirs is running)."""
        running = self.jobs.get(id(make_context))
        if running is not None and not running.finished:
            return None
        job = self.jobs[id(make_context)] = Job(step)
        job.task = asyncio.get_running_loop().create_task(work(job), name=f"data:{step}")
        return job

    async def sidebar(self, make_context: ContextFactory) -> list[dict[str, str]]:
        """The chats sidebar's rows now."""
        tz = (await make_context()).settings.timezone
        return session_rows(await make_context.store.list_sessions(), tz)

    async def on_import(
        self, upload: str | None, request: gr.Request
    ) -> AsyncIterator[tuple[Any, Any, Any]]:
        """An export uploaded: import it as a job and follow it (the status, the upload
        control, emptied at the end, and the sidebar's rows, once the chats are in)."""
        if not upload:
            return
        make_context = self.people.factory(request.username)
        path = Path(upload)
        job = self.start(
            make_context,
            CHECKING.format(name=path.name),
            lambda job: run_import(make_context, path, job),
        )
        if job is None:
            yield BUSY, None, gr.skip()
            return
        async for shown in follow(job):
            yield shown, gr.skip(), gr.skip()
        yield job.shown(), None, await self.sidebar(make_context)

    async def on_show(self, request: gr.Request) -> AsyncIterator[str]:
        """The tab chosen: the person's job as it is now, followed while it runs."""
        job = self.jobs.get(id(self.people.factory(request.username)))
        if job is None:
            yield ""
            return
        async for shown in follow(job):
            yield shown


def build(people: People, chat: ChatComponents, shown: list[Any], limit: int) -> list[Any]:
    """Lay out "Your data" inside the current Blocks and wire it to ``DataHandlers``;
    ``chat`` is the Chat tab's components (its sidebar shows the new chats), ``shown``
    the events that show the tab, ``limit`` the app's upload limit in bytes. Returns the
    events after which the tab's tables are to be read again."""
    handlers = DataHandlers(people)
    gr.Markdown("### Your data", elem_id="your-data")
    gr.Markdown(IMPORT_HELP.format(limit=megabytes(limit)), elem_id="import-help")
    upload = gr.File(
        label=f"Import a history (zip or .json, up to {megabytes(limit)})",
        file_types=[".zip", ".json"],
        file_count="single",
        type="filepath",
        elem_id="import-file",
    )
    status = gr.Markdown(elem_id="data-status")
    imported = upload.upload(
        handlers.on_import,
        upload,
        [status, upload, chat.listing],
        api_name="import_history",
        show_progress="hidden",  # the status line is the progress
    )
    gr.on(shown, handlers.on_show, None, status, api_visibility="private")
    return [imported]
