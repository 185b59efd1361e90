"""What the Chat tab shows: stored messages and live turn events as ``gr.ChatMessage`` lists.

Pure functions over ``memory.Message`` and the turn events of ``graph.events``, so the
same turn looks the same while it streams (``TurnView``) and after a reload
(``history_messages``): a user message is one bubble; each tool step is its own
collapsible message titled for people (``step_title``), with its duration, arguments and
raw result; web sources are links under the answer (``sources_markdown``); a question
waiting for the person's yes has Allow and Deny (``confirmation_bubble``). Above the
chat, the persona that answers (``persona_chip``). Every text shown is made inert first
(``neutralise_markdown``). Only the app (and its tests) import this module: gradio stays
out of the CLI's import path. The rules: docs/app.md.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from gradio import ChatMessage

from app.graph_view import duration_text, plain
from config.settings import Settings
from graph.events import (
    Answer,
    ConfirmationAsked,
    ConfirmationDecided,
    ModelDone,
    TextDelta,
    ToolEnd,
    ToolStart,
    TurnError,
    TurnEvent,
    TurnStopped,
    UserStored,
)
from graph.state import TraceEvent
from memory import Message, parse_time
from memory.rules.temporal import zone_of
from tools.mcp.names import split_name
from tools.weather import LOCATION_NOT_SET

ERROR_MARK = "⚠️"
NOTICE_MARK = "ℹ️"
GENERATED_IMAGE_TOOL = "image_generate"
SEARCH_TOOL = "web_search"
SQL_TOOL = "memory_sql"
WEATHER_TOOL = "weather"
SUMMARY_KEYS = ("location", "query", "prompt", "reference", "key", "sql", "text")
MAX_SUMMARY_CHARS = 48
MAX_RESULT_CHARS = 4000
MAX_SOURCES = 8
MAX_SOURCE_TITLE_CHARS = 90
RUNNING = "running…"
STOPPED_NOTE = "*⏹ Stopped.*"
INTERRUPTED_NOTE = (
    "*⚠️ Interrupted: Companion was stopped before this answer was finished. "
    "Press ↻ under it to try again.*"
)
STEP_STOPPED = "stopped"
EDITED_IDENTITY = "your edited voice"
ATTACHED_KINDS = {"text": "text", "pdf": "PDF"}  # an attachment's kind, as its chip says it
# The persona's avatar: its initial in a circle of the theme's accent colour (inline
# styles: the chip is one gr.HTML, and a font may lack the circled letters Ⓐ–Ⓩ).
AVATAR_STYLE = (
    "display:inline-flex;align-items:center;justify-content:center;width:1.8em;"
    "height:1.8em;margin-right:0.4em;border-radius:50%;background:var(--color-accent);"
    "color:white;font-weight:600"
)
NEEDS_LOCATION = "Weather: needs your location → [set it in Settings](#set-location)"
SQL_CHANGED = "Changed something in our history"
SOURCES_HEADING = "**Sources**"
QUESTION_MARK = "🔐"
QUESTION_ENDINGS = {"outbound": " — allow?", "memory": "?"}
QUESTION_WHY = {
    "outbound": "Asked because this chat holds your private data and content from outside "
    "(a web page or an image) that could be asking Companion to send it somewhere.",
    "memory": "Asked because content from outside (a web page or an image) is in this chat: "
    "memory changes wait for your yes.",
}
ANSWER_WORDS = {
    "allowed": "✓ Allowed",
    "declined": "✗ Declined",
    "timed_out": "⏱ Not answered in time: not done",
    "unasked": "Not done: nobody could be asked",
    "stopped": "⏹ Stopped: not done",
}
ALLOW, DENY = "allow", "deny"  # an option's value: "<choice>:<question id>"
# Characters a Markdown link destination cannot hold as they are (percent-encoded).
URL_SAFE = ":/?#[]@!$&'*+,;=%~"


@dataclass(frozen=True)
class StepWords:
    """How a tool's step reads while it runs, once it is done, and after it failed."""

    running: str
    done: str
    failed: str


STEP_WORDS: dict[str, StepWords] = {
    "web_search": StepWords("Searching the web", "Searched the web", "Couldn't search the web"),
    "weather": StepWords("Checking the weather", "Weather", "Couldn't get the weather"),
    "memory_search": StepWords(
        "Looking through our past chats",
        "Looked through our past chats",
        "Couldn't look through our past chats",
    ),
    "memory_sql": StepWords(
        "Looking something up in our history",
        "Looked something up in our history",
        "Couldn't look that up in our history",
    ),
    "create_memory": StepWords("Saving to memory", "Saved to memory", "Couldn't save to memory"),
    "update_memory": StepWords("Updating a memory", "Updated a memory", "Couldn't update a memory"),
    "delete_memory": StepWords("Forgetting", "Forgot", "Couldn't forget"),
    "image_generate": StepWords("Drawing an image", "Drew an image", "Couldn't draw an image"),
    "image_analyze": StepWords(
        "Looking at the image", "Looked at the image", "Couldn't look at the image"
    ),
}

FENCE_LINE = re.compile(r"^( {0,3})(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*\r?$", re.MULTILINE)
IMAGE_START = re.compile(r"(?<!\\)((?:\\\\)*)!\[(\])?")  # "![" not escaped; "![]" too
TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
NOT_A_TAG = "<\u200b"  # looks like "<", in prose and in code, but starts no tag
HARMLESS_TAG = re.compile(
    r"</?(?:b|i|em|strong|u|s|del|sub|sup|kbd|mark|code|br|details|summary)\s{0,4}/?>",
    re.IGNORECASE,
)
BACKTICKS = re.compile(r"`+")


def _fenced_blocks(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each fenced code block; an unclosed fence runs to the end.

    Only fences at the start of a line count. An indented one may sit in a list item,
    where a less indented line ends the block before its closing fence: from the first
    indented fence on, nothing more is taken for code (so nothing escapes neutralising).
    """
    pos = 0
    while (opener := FENCE_LINE.search(text, pos)) is not None:
        indent, fence, info = opener.groups()
        pos = opener.end()
        if fence[0] == "`" and "`" in info:  # not a fence: an inline code span
            continue
        if indent:
            return
        end = len(text)
        while (closer := FENCE_CLOSE.search(text, pos)) is not None:
            pos = closer.end()
            if closer.group(1)[0] == fence[0] and len(closer.group(1)) >= len(fence):
                end = closer.end()
                break
        yield opener.start(), end
        pos = end


def _inert(prose: str) -> str:
    def as_link(found: re.Match[str]) -> str:
        return f"{found.group(1)}[image]" if found.group(2) else f"{found.group(1)}["

    def as_text(found: re.Match[str]) -> str:
        return "<" if HARMLESS_TAG.match(linked, found.start()) else NOT_A_TAG

    linked = IMAGE_START.sub(as_link, prose)
    return TAG_START.sub(as_text, linked)


def neutralise_markdown(text: str) -> str:
    """Markdown that loads nothing by itself: images become links, raw HTML shows as text.

    Text in fenced code blocks is kept as is (its copy button copies the real code); a few
    attribute-less formatting tags (``<b>``, ``<br>``…) stay HTML.
    """
    parts: list[str] = []
    pos = 0
    for start, end in _fenced_blocks(text):
        parts += [_inert(text[pos:start]), text[start:end]]
        pos = end
    parts.append(_inert(text[pos:]))
    return "".join(parts)


def code(text: str) -> str:
    """``text`` shown verbatim: an inline code span, or a fenced block if it has line breaks.

    The fence is longer than any run of backticks inside, so nothing in ``text`` can
    close it early and have the rest read as Markdown.
    """
    longest = max((len(run) for run in BACKTICKS.findall(text)), default=0)
    if "\n" in text or "\r" in text:
        fence = "`" * max(3, longest + 1)
        return f"{fence}\n{text}\n{fence}"
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _short(text: str, limit: int = MAX_SUMMARY_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else f"{line[: limit - 1]}…"


def _summary(args: Mapping[str, Any]) -> str:
    """The argument that says what a call is about ("Tokyo", "USD to JPY"), or ""."""
    for key in SUMMARY_KEYS:
        if isinstance(args.get(key), str) and args[key].strip():
            return _short(args[key])
    if "lat" in args and "lon" in args:
        return f"{args['lat']}, {args['lon']}"
    for value in args.values():
        if isinstance(value, str) and value.strip():
            return _short(value)
    return ""


def _failed(result: Mapping[str, Any] | None) -> bool:
    return isinstance(result, Mapping) and "error" in result


def _arg(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key)
    return _short(value) if isinstance(value, str) and value.strip() else ""


def _subject(name: str, args: Mapping[str, Any]) -> str:
    """What the call was about, written to follow the step's words ("" if nothing)."""
    match name:
        case "web_search" | "memory_search":
            query = _arg(args, "query")
            return f" for “{query}”" if query else ""
        case "weather":
            if place := _arg(args, "location"):
                return f" in {place}"
            if "lat" in args and "lon" in args:
                return f" at {args['lat']}, {args['lon']}"
            return " where you are"
        case "create_memory" | "update_memory":
            key, value = _arg(args, "key"), _arg(args, "value")
            shown = f"{key} — {value}" if key and value else key or value
            return f": {shown}" if shown else ""
        case "delete_memory":
            key = _arg(args, "key")
            return f": {key}" if key else ""
        case "image_generate":
            prompt = _arg(args, "prompt")
            return f": {prompt}" if prompt else ""
        case "memory_sql" | "image_analyze":
            return ""
    summary = _summary(args)
    return f" · {summary}" if summary else ""


def _mcp_words(name: str) -> StepWords | None:
    """An MCP tool's step words ("Asking notes — search notes"), None for another tool."""
    parts = split_name(name)
    if parts is None:
        return None
    server, tool = parts
    shown = f"{server} — {tool.replace('_', ' ')}"
    return StepWords(f"Asking {shown}", f"Asked {shown}", f"Couldn't ask {shown}")


def step_title(name: str, args: Mapping[str, Any], result: Mapping[str, Any] | None = None) -> str:
    """A tool step's title, written for people: "Searching the web for “USD to JPY”" while
    it runs, "Searched the web for “USD to JPY”" once done, "Couldn't search the web…"
    after a failure. Weather with no location set says where to set one."""
    if name == WEATHER_TOOL and result is not None and result.get("error") == LOCATION_NOT_SET:
        return NEEDS_LOCATION
    if name == SQL_TOOL and result is not None and "updated" in result:
        return SQL_CHANGED
    words = STEP_WORDS.get(name) or _mcp_words(name)
    if words is None:  # a tool with no words of its own (a test tool): its name is all we have
        shown = name.replace("_", " ")
        words = StepWords(f"Using {shown}", f"Used {shown}", f"{shown} failed")
    lead = words.running if result is None else words.failed if _failed(result) else words.done
    return neutralise_markdown(f"{lead}{_subject(name, args or {})}")


def _json_block(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    if len(text) > MAX_RESULT_CHARS:
        text = f"{text[:MAX_RESULT_CHARS]}\n… ({len(text) - MAX_RESULT_CHARS} more characters)"
    return f"```json\n{text}\n```"


def tool_body(
    args: Mapping[str, Any], command: str | None, result: Mapping[str, Any] | None
) -> str:
    """The inside of a tool step: what was asked (command or arguments) and the raw output."""
    asked = code(command) if command else f"arguments: {code(json.dumps(args, ensure_ascii=False))}"
    if result is None:
        return f"{asked}\n\n{RUNNING}"
    return f"{asked}\n\n{_json_block(result)}"


def tool_step(
    name: str,
    args: Mapping[str, Any],
    command: str | None,
    result: Mapping[str, Any] | None = None,
    duration_ms: float | None = None,
) -> ChatMessage:
    """A collapsible tool step: pending without a result, done (with duration) with one."""
    metadata: dict[str, Any] = {"title": step_title(name, args, result)}
    if result is None:
        metadata["status"] = "pending"
    else:
        # Shown beside the title as it is: gradio's own "duration" would mix "40.0ms"/"2.1s".
        metadata["status"] = "done"
        metadata["log"] = duration_text(duration_ms or 0.0)
    return ChatMessage(
        role="assistant",
        content=tool_body(args, command, result),
        metadata=metadata,  # type: ignore[arg-type]
    )


def local_time(stamp: str, tz: str) -> str:
    """A stored (UTC) timestamp on the person's clock, e.g. "2026-11-25 18:30"."""
    return f"{parse_time(stamp).astimezone(zone_of(tz)):%Y-%m-%d %H:%M}"


def _image(path: str) -> Any:
    """A file part of a message (gradio's FileDataDict needs only the path)."""
    return {"path": path}


def attachment_chip(meta: Mapping[str, Any]) -> str | None:
    """The chip on a user message that came with a text, Markdown or PDF file: its name
    and kind ("📎 notes.pdf · PDF, 3 pages"), never its text; None without one."""
    attached = meta.get("attachment")
    if not isinstance(attached, Mapping) or attached.get("kind") not in ATTACHED_KINDS:
        return None
    kind = ATTACHED_KINDS[str(attached["kind"])]
    pages = int(attached.get("pages") or 0)
    extent = f", {pages} page{'' if pages == 1 else 's'}" if pages else ""
    name = plain(str(attached.get("name") or "file"))
    return f"📎 **{name}** · {kind}{extent}"


def user_bubble(
    text: str, image_path: str | None = None, meta: Mapping[str, Any] | None = None
) -> ChatMessage:
    """The user's message: the attached image or file's chip, then the text, one bubble."""
    text = neutralise_markdown(text)
    chip = attachment_chip(meta or {})
    parts: list[Any] = [_image(image_path)] if image_path else [chip] if chip else []
    if not parts:
        return ChatMessage(role="user", content=text)
    return ChatMessage(role="user", content=[*parts, text] if text else parts)


def search_sources(name: str | None, result: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """The {title, url} results of a web_search call with an http(s) URL, else []."""
    if name != SEARCH_TOOL or not isinstance(result, Mapping) or _failed(result):
        return []
    found = result.get("results")
    sources = []
    for item in found if isinstance(found, list) else []:
        url = item.get("url") if isinstance(item, Mapping) else None
        if not isinstance(url, str):
            continue
        try:
            parts = urlsplit(url.strip())
        except ValueError:
            continue
        if parts.scheme.lower() in ("http", "https") and parts.hostname:
            title = item.get("title")
            sources.append({"title": str(title or parts.hostname), "url": url.strip()})
    return sources


def sources_markdown(sources: Iterable[Mapping[str, str]]) -> str:
    """The turn's sources as a list of plain Markdown links (each URL once), or "".

    Titles come from web pages: every punctuation mark is escaped, so a title is text
    and never a link, image or tag of its own; URLs are percent-encoded where a Markdown
    link destination would end early.
    """
    lines: list[str] = []
    seen: set[str] = set()
    for source in sources:
        url = source["url"]
        if url in seen:
            continue
        seen.add(url)
        title = plain(_short(source["title"], MAX_SOURCE_TITLE_CHARS))
        host = plain(urlsplit(url).hostname or "")
        lines.append(f"- [{title}]({quote(url, safe=URL_SAFE)}) · {host}")
        if len(lines) == MAX_SOURCES:
            break
    return "\n".join([SOURCES_HEADING, *lines]) if lines else ""


def answer_bubble(
    text: str,
    images: Iterable[str] = (),
    *,
    error: bool = False,
    sources: Iterable[Mapping[str, str]] = (),
    ending: str = "",
) -> ChatMessage:
    """An assistant bubble: generated images first, then the text (marked on an error),
    then the sources of the turn's web searches, then ``ending`` (``STOPPED_NOTE``,
    ``INTERRUPTED_NOTE``: Companion's words, not the model's)."""
    text = neutralise_markdown(text)
    shown = f"{ERROR_MARK} {text}" if error and text else text
    listed = "" if error else sources_markdown(sources)
    shown = "\n\n".join(part for part in (shown, listed, ending) if part)
    parts: list[Any] = [_image(path) for path in images]
    if not parts:
        return ChatMessage(role="assistant", content=shown)
    return ChatMessage(role="assistant", content=[*parts, shown] if shown else parts)


def persona_chip(settings: Settings) -> str:
    """The chat's header, as HTML: the persona that answers (its initial in a circle and
    its name), and whether the person's edited identity block speaks in its place."""
    name = settings.persona.strip().capitalize() or "?"
    edited = f" · {EDITED_IDENTITY}" if settings.identity else ""
    return (
        f'<div class="persona-chip"><span style="{AVATAR_STYLE}">{html.escape(name[0])}</span>'
        f"<strong>{html.escape(name)}</strong>{edited}</div>"
    )


def notice_bubble(text: str) -> ChatMessage:
    """A notice from Companion itself, not the model's words (e.g. no vision model is set)."""
    return ChatMessage(role="assistant", content=f"{NOTICE_MARK} {neutralise_markdown(text)}")


def generated_image(name: str | None, result: Mapping[str, Any] | None) -> str | None:
    """The path of an image made by image_generate, or None."""
    if name != GENERATED_IMAGE_TOOL or not isinstance(result, Mapping) or _failed(result):
        return None
    path = result.get("image_path")
    return str(path) if path else None


def ending_of(meta: Mapping[str, Any]) -> str:
    """What Companion adds under an answer that was stopped or interrupted ("" if none)."""
    if meta.get("stopped"):
        return STOPPED_NOTE
    if meta.get("interrupted"):
        return INTERRUPTED_NOTE
    return ""


def confirmation_bubble(
    kind: str, question: str, sent: str, answer: str | None = None, asked_id: str = ""
) -> ChatMessage:
    """A question for the person: the words, exactly what would be sent or saved (as
    code: nothing in it renders), why it is asked; then the answer it got, or (with no
    ``answer`` yet) Allow and Deny buttons naming question ``asked_id``."""
    ending = QUESTION_ENDINGS.get(kind, "?")
    lines = [
        f"{QUESTION_MARK} {neutralise_markdown(question)} {code(sent)}{ending}",
        f"*{QUESTION_WHY.get(kind, '')}*",
    ]
    if answer is not None:
        lines.append(f"**{ANSWER_WORDS.get(answer, answer)}**")
        return ChatMessage(role="assistant", content="\n\n".join(lines))
    options = [
        {"value": f"{ALLOW}:{asked_id}", "label": "✓ Allow"},
        {"value": f"{DENY}:{asked_id}", "label": "✗ Deny"},
    ]
    return ChatMessage(role="assistant", content="\n\n".join(lines), options=options)  # type: ignore[arg-type]


def chosen_option(value: Any) -> tuple[str, bool] | None:
    """(question id, allowed) from a clicked Allow/Deny option's value, or None."""
    choice, _, asked_id = str(value or "").partition(":")
    if choice not in (ALLOW, DENY) or not asked_id:
        return None
    return asked_id, choice == ALLOW


def _stored_question(meta: Mapping[str, Any]) -> ChatMessage | None:
    asked = meta.get("confirmation")
    if not isinstance(asked, Mapping):
        return None
    return confirmation_bubble(
        str(asked.get("kind")),
        str(asked.get("question")),
        str(asked.get("sent")),
        str(asked.get("decision")),
    )


def history_messages(messages: Iterable[Message]) -> list[ChatMessage]:
    """A session's stored messages as chat messages, in order."""
    return [bubble for bubble, _ in history_entries(messages)]


def history_entries(messages: Iterable[Message]) -> list[tuple[ChatMessage, int | None]]:
    """``history_messages`` with the id of the stored user message each bubble shows
    (None for every other bubble): an edit in the chat names its message by position."""
    out: list[tuple[ChatMessage, int | None]] = []
    images: list[str] = []  # generated this turn, waiting for the answer bubble
    sources: list[dict[str, str]] = []  # found by this turn's searches, for the same bubble
    for message in messages:
        if message.role == "user":
            if images:
                out.append((answer_bubble("", images, sources=sources), None))
                images = []
            sources = []
            bubble = user_bubble(message.content, message.image_path, message.meta)
            out.append((bubble, message.id))
        elif message.is_tool:
            if message.meta.get("duplicate"):
                continue
            meta = message.meta
            question = _stored_question(meta)
            if question is not None:
                out.append((question, None))
            result = meta.get("result") if isinstance(meta.get("result"), dict) else {}
            step = tool_step(
                message.tool_name or "tool",
                meta.get("arguments") or {},
                meta.get("command"),
                result,
                meta.get("duration_ms"),
            )
            out.append((step, None))
            image = generated_image(message.tool_name, result)
            if image:
                images.append(image)
            sources += search_sources(message.tool_name, result)
        elif message.role == "assistant":
            if message.meta.get("intermediate"):
                out.append((answer_bubble(message.content), None))
            else:
                bubble = answer_bubble(
                    message.content,
                    images,
                    error=bool(message.meta.get("error")),
                    sources=sources,
                    ending=ending_of(message.meta),
                )
                out.append((bubble, None))
                images, sources = [], []
    if images:
        out.append((answer_bubble("", images, sources=sources), None))
    return out


class TurnView:
    """The chat as a turn streams: history, then this turn's messages built from events."""

    def __init__(self, history: list[ChatMessage]) -> None:
        self.messages: list[ChatMessage] = list(history)
        self._streaming: int | None = None  # bubble of the model call now writing
        self._written = ""  # what that model call wrote so far, before neutralising
        self._last_call: int | None = None  # bubble of the last finished model call
        self._steps: dict[str, int] = {}  # tool call id -> index of its step
        self._images: list[str] = []
        self._sources: list[dict[str, str]] = []
        self.error: str | None = None
        self.stopped = False
        self.answer: str | None = None
        self.user_message_id: int | None = None  # set once the user's message is stored
        self.trace: list[TraceEvent] = []  # the turn's path, once it has answered
        self.asking: ConfirmationAsked | None = None  # the question waiting for the person

    def chat(self, *after: ChatMessage) -> list[ChatMessage]:
        """What the chat shows: the turn so far, then ``after`` (notices, queued messages),
        then the question waiting for the person, if any (last: only the last message
        shows its buttons)."""
        asking = self.asking
        waiting = [] if asking is None else [self._question(asking)]
        return [*self.messages, *after, *waiting]

    def apply(self, event: TurnEvent) -> None:
        """Fold one turn event into the view."""
        match event:
            case UserStored():
                self._user(event)
            case TextDelta():
                self._text(event)
            case ModelDone():
                self._model_done()
            case ConfirmationAsked():
                self.asking = event
            case ConfirmationDecided():
                self._answered(event.decision)
            case ToolStart():
                self._tool_start(event)
            case ToolEnd():
                self._tool_end(event)
            case TurnError():
                self.error = event.detail
            case TurnStopped():
                self._stop()
            case Answer():
                self._answer(event)

    def _user(self, event: UserStored) -> None:
        message = event.message
        self.user_message_id = message.id
        self.messages.append(user_bubble(message.content, message.image_path, message.meta))

    def _text(self, event: TextDelta) -> None:
        if self._streaming is None:
            self._streaming = len(self.messages)
            self._written = ""
            self.messages.append(ChatMessage(role="assistant", content=""))
        # The whole text again: an image's "![" may arrive split over two deltas.
        self._written += event.text
        self.messages[self._streaming].content = neutralise_markdown(self._written)

    def _model_done(self) -> None:
        self._last_call, self._streaming = self._streaming, None
        if self._last_call is not None:
            self.messages[self._last_call].content = neutralise_markdown(self._written.strip())

    @staticmethod
    def _question(asked: ConfirmationAsked, answer: str | None = None) -> ChatMessage:
        return confirmation_bubble(asked.kind, asked.question, asked.sent, answer, asked.id)

    def _answered(self, answer: str) -> None:
        """The waiting question got its answer (or the turn ended): it takes its place."""
        if self.asking is not None:
            self.messages.append(self._question(self.asking, answer))
            self.asking = None

    def _tool_start(self, event: ToolStart) -> None:
        self._last_call = None
        self._steps[event.call_id] = len(self.messages)
        self.messages.append(tool_step(event.name, event.args, event.command))

    def _tool_end(self, event: ToolEnd) -> None:
        step = tool_step(event.name, event.args, event.command, event.result, event.duration_ms)
        index = self._steps.get(event.call_id)
        if index is None:
            self.messages.append(step)
        else:
            self.messages[index] = step
        image = generated_image(event.name, event.result)
        if image:
            self._images.append(image)
        self._sources += search_sources(event.name, event.result)

    def _stop(self) -> None:
        """The turn was stopped: a step still running never finishes, a question waiting
        is not answered."""
        self.stopped = True
        self._answered("stopped")
        for index in self._steps.values():
            step = self.messages[index]
            metadata = dict(step.metadata or {})
            if metadata.get("status") == "pending":
                metadata.update(status="done", log=STEP_STOPPED)
                self.messages[index] = ChatMessage(
                    role="assistant",
                    content=str(step.content),
                    metadata=metadata,  # type: ignore[arg-type]
                )

    def _answer(self, event: Answer) -> None:
        self._answered("stopped")  # a turn that failed while it waited asks no more
        self.answer = event.text
        self.trace = event.trace
        if self.stopped and self._streaming is not None:
            self._last_call, self._streaming = self._streaming, None
        bubble = answer_bubble(
            self.answer,
            self._images,
            error=self.error is not None,
            sources=self._sources,
            ending=STOPPED_NOTE if self.stopped else "",
        )
        if self._last_call is None:
            self.messages.append(bubble)
        else:
            self.messages[self._last_call] = bubble
        self._images, self._sources = [], []


def bubble_text(bubble: ChatMessage) -> str:
    """A bubble's text: its content, or the text parts of a content with files."""
    content = bubble.content
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part for part in content if isinstance(part, str))
    return ""
