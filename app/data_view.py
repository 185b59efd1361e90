"""The Memories tab's "Your data": bring a history from another app, take all of it
away, or delete it all.

An import runs as a job the server owns (``Job``: an asyncio task per person, one at a
time), never inside the browser's request: the page follows its progress while the
person chats on in the Chat tab, and a page that closes leaves it running (the tab shows
it again when it is chosen). The file is one Gradio upload, capped by the app's
``max_file_size`` (said beside the control; Gradio's own refusal names it too); the
import itself is ``app.imports.import_export`` (checked whole first, then a transaction
per chat), then each new chat's episodes are cut (extractive, as ``companion import``
does) and its vectors made in the background. The new chats go into the sidebar.

"Export my data" is a job too: ``app.exports.export_person`` writes the zip into the
person's media folder (``EXPORTS``, the newest one only), which the app serves to them
alone, and a download button offers it.

"Delete all my data" asks for a typed word first, stops the person's job and running
turns, then calls ``app.deleting.delete_person`` (with accounts, their login goes too and
the page logs out); the sidebar, the chat and the tab's tables are left empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from app.chat_handlers import ChatComponents, session_rows
from app.deleting import delete_person
from app.exports import ExportReport, export_person
from app.imports import BadExport, import_export
from graph.jobs import schedule_embedding
from graph.setup import ContextFactory, People
from memory import AccountError, AsyncStore, StoreError

log = logging.getLogger("companion.app")

POLL_SECONDS = 0.25  # how often a page following a job looks at its progress
STOP_SECONDS = 5.0  # how long a deletion waits for the person's running turns to stop
BAR_CELLS = 20
CHECKING = "Checking {name}"
IMPORTING = "Importing conversations"
CUTTING = "Cutting the new chats into episodes"
PREPARING = "Preparing your export"
EXPORTING = "Exporting chats"
DOWNLOAD = "⬇ Download the zip"
EXPORTS = "exports"  # in the person's media folder: their newest export, served to them only
BUSY = "⏳ Your data is busy with another job: wait until it has finished."
IMPORT_HELP = (
    "Import your history from ChatGPT (its data export: the zip, or its "
    "`conversations.json`), Claude (`conversations.json`) or Open WebUI (a chat export, "
    "JSON). Up to {limit} per file; for a bigger export run `companion import PATH`. "
    "Importing the same file again adds nothing."
)
CONFIRM_WORD = "delete"
DELETE_WARNING = (
    f'Type "{CONFIRM_WORD}" (or your login name) to delete all your data: chats, memories, '
    "episodes, images and settings (and, with accounts, your login). It cannot be undone."
)
NOT_CONFIRMED = f'Not deleted: type "{CONFIRM_WORD}" (or your login name) to confirm.'
NOT_DELETED = "Not deleted."
DELETE_STOPPED = "Stopped: all your data was deleted."
# After a deletion with accounts, the page goes to the login (the login is gone too).
LOG_OUT = "(gone) => { if (gone) window.location.assign('logout'); }"


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
    file: Path | None = None  # what the job made for the person to download
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


def exported(report: ExportReport) -> str:
    """What went into the export, for the tab (the zip's server path is no one's business)."""
    return (
        f"Exported {report.chats:,} chats with {report.messages:,} messages, "
        f"{report.memories:,} memories, {report.segments:,} episodes and {report.images:,} "
        "images: the zip is ready to download."
    )


def fresh_folder(folder: Path) -> None:
    """Make ``folder`` and empty it of earlier exports: only the newest one is kept."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.zip"):
        old.unlink()


async def run_export(make_context: ContextFactory, job: Job) -> None:
    """Write everything of the person into a zip in their media folder (``EXPORTS``),
    keeping ``job`` up to date; a failure ends it with one line (no zip is left)."""
    store = make_context.store
    folder = store.media_dir / EXPORTS
    out = folder / f"companion-export-{store.clock():%Y-%m-%d-%H%M%S}.zip"
    try:
        await asyncio.to_thread(fresh_folder, folder)
        report = await export_person(
            store,
            store.media_dir,
            await store.profile(),
            out,
            lambda done, total: job.advance(EXPORTING, done, total),
        )
    except Exception as exc:  # a disk or store failure, or a bug: said, and logged
        log.exception("exporting a person's data failed")
        job.error = f"The export failed ({type(exc).__name__}: {exc})."
        return
    job.report, job.file = [exported(report)], out


def download(job: Job | None) -> Any:
    """The download button: the job's zip, or hidden while there is none."""
    if job is None or job.file is None or not job.finished:
        return gr.update(visible=False)
    return gr.update(label=DOWNLOAD, value=str(job.file), visible=True)


def confirmed(typed: str | None, username: str | None) -> bool:
    """Did the person type the confirming word (or their login name)?"""
    return (typed or "").strip().lower() in {CONFIRM_WORD, (username or "").lower()} - {""}


async def stop_turns(store: AsyncStore) -> None:
    """Ask every running turn of the person to stop (the way another process would) and
    wait, at most ``STOP_SECONDS``, until each has stored what it wrote."""
    for turn in await store.running_turns():
        await store.request_stop(turn.session_id)
    with contextlib.suppress(TimeoutError):  # a dead process's turn never ends: go on
        async with asyncio.timeout(STOP_SECONDS):
            while await store.running_turns():
                await asyncio.sleep(POLL_SECONDS / 5)


def asking(shown: bool) -> tuple[Any, str]:
    """The deletion's confirmation row shown (or hidden), its box emptied."""
    return gr.update(visible=shown), ""


def keep_data() -> tuple[Any, str, str]:
    """Keep my data: the confirmation goes, nothing is deleted."""
    return *asking(False), NOT_DELETED


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

    async def stop_job(self, make_context: ContextFactory) -> None:
        """Cancel the person's running job, if any (its status says why)."""
        job = self.jobs.pop(id(make_context), None)
        if job is not None and job.task is not None and not job.finished:
            job.error = DELETE_STOPPED
            job.task.cancel()
            await asyncio.gather(job.task, return_exceptions=True)

    async def on_delete_all(self, typed: str, request: gr.Request) -> tuple[Any, ...]:
        """Delete all my data, once confirmed: the status, the confirmation row and box,
        whether the page logs out (accounts on), and the chat's sidebar, session and
        messages, now empty. A failure says so; deleting again finishes the job."""
        if not confirmed(typed, request.username):
            return NOT_CONFIRMED, *(gr.skip(),) * 6
        make_context = self.people.factory(request.username)
        store, accounts_on = make_context.store, self.people.accounts_on
        try:
            await self.stop_job(make_context)
            await stop_turns(store)
            deleted = await delete_person(
                store,
                accounts=self.people.accounts if accounts_on else None,
                name=request.username if accounts_on else None,
            )
        except (StoreError, AccountError, OSError) as exc:
            log.exception("deleting a person's data failed")
            failed = f"❌ Not everything was deleted ({type(exc).__name__}: {exc}). Try again."
            return failed, *(gr.skip(),) * 6
        if accounts_on and request.username:
            self.people.forget(request.username)
        return f"🗑️ {deleted.line()}", *asking(False), accounts_on, [], None, []

    async def on_export(self, request: gr.Request) -> AsyncIterator[tuple[str, Any]]:
        """Export my data: write the zip as a job and follow it (the status, then the
        download button with the zip)."""
        make_context = self.people.factory(request.username)
        job = self.start(make_context, PREPARING, lambda job: run_export(make_context, job))
        if job is None:
            yield BUSY, gr.skip()
            return
        async for shown in follow(job):
            yield shown, download(None)
        yield job.shown(), download(job)

    async def on_show(self, request: gr.Request) -> AsyncIterator[tuple[str, Any]]:
        """The tab chosen: the person's job as it is now, followed while it runs (and an
        export's download button)."""
        job = self.jobs.get(id(self.people.factory(request.username)))
        if job is None:
            yield "", download(None)
            return
        async for shown in follow(job):
            yield shown, download(job)


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
    with gr.Row():
        export = gr.Button("Export my data", scale=0, min_width=220, elem_id="export-data")
        zipped = gr.DownloadButton(visible=False, scale=0, min_width=220, elem_id="export-zip")
    status = gr.Markdown(elem_id="data-status")
    imported = upload.upload(
        handlers.on_import,
        upload,
        [status, upload, chat.listing],
        api_name="import_history",
        show_progress="hidden",  # the status line is the progress
    )
    export.click(
        handlers.on_export,
        None,
        [status, zipped],
        api_name="export_my_data",
        show_progress="hidden",
    )
    gr.on(
        shown,
        handlers.on_show,
        None,
        [status, zipped],
        api_visibility="private",
        show_progress="hidden",
    )
    return [imported, deleting(handlers, chat, status)]


def deleting(handlers: DataHandlers, chat: ChatComponents, status: gr.Markdown) -> Any:
    """Lay out and wire "Delete all my data…" and its confirmation; the deletion's event."""
    with gr.Row():
        ask = gr.Button(
            "Delete all my data…", variant="stop", scale=0, min_width=220, elem_id="delete-all"
        )
    with gr.Row(visible=False, equal_height=True, elem_id="delete-all-confirm") as row:
        typed = gr.Textbox(label=DELETE_WARNING, max_lines=1, scale=3, elem_id="delete-all-word")
        yes = gr.Button("Delete everything", variant="stop", scale=1, elem_id="delete-all-yes")
        no = gr.Button("Keep my data", scale=1, elem_id="delete-all-no")
    gone = gr.Checkbox(False, visible=False, elem_id="data-gone")
    ask.click(lambda: asking(True), None, [row, typed], api_visibility="private")
    no.click(keep_data, None, [row, typed, status], api_visibility="private")
    deleted = gr.on(
        [yes.click, typed.submit],
        handlers.on_delete_all,
        typed,
        [status, row, typed, gone, chat.listing, chat.session, chat.chatbot],
        api_name="delete_all_my_data",
    )
    deleted.then(None, gone, None, js=LOG_OUT)
    return deleted
