"""The chats sidebar's list, as the HTML of one ``gr.HTML``: rows that are buttons, a row
menu (Rename, Pin, Delete), pinned chats first, and the results of a search across chats.

Everything here is pure: the rows a store's sessions make (``session_rows``), a
timestamp as the short relative time a row shows (``relative_time``), the list's and the
results' HTML (``list_html``, ``results_html``), and where a found message sits in the
chat (``bubble_at``). Titles and messages are the person's or a model's text: every one
is escaped here, and nothing of theirs reaches the page unescaped.

The page's side is ``LIST_JS`` (the component's ``js_on_load``): one click listener on
the list's root, which survives every re-render (Gradio morphs the new HTML into the old
nodes), turns a click on a row into the component's ``open_chat``, ``open_hit`` or
``row_action`` event with the chat's id. The list is never rebuilt by ``gr.render``,
whose re-renders dropped clicks and reset the Stop button (docs/app.md).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from app.chat_view import history_entries
from app.live_tabs import PAGES_KEPT, keep_newest
from memory import ChatHit, Message, Session, parse_time
from memory.rules.temporal import zone_of

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
PINNED = "Pinned"
RECENT = "Recent"
EMPTY = "No chats yet: what you send starts one."
NO_MATCH = "No chat mentions “{query}”."
ACTIONS = ("rename", "pin", "unpin", "delete")  # what a row's menu can ask for


def relative_time(stamp: str, now: datetime, tz: str) -> str:
    """A stored (UTC) time as a row shows it, on the person's clock: "now", "5 min",
    "2 h", then the weekday for the last week ("Tue"), the day this year ("12 Nov"),
    or the day and year ("12 Nov 2025")."""
    moment = parse_time(stamp)
    ago = now - moment
    if ago < timedelta(minutes=1):
        return "now"
    if ago < timedelta(hours=1):
        return f"{ago.seconds // 60} min"
    if ago < timedelta(days=1):
        return f"{ago.seconds // 3600} h"
    zone = zone_of(tz)
    day, today = moment.astimezone(zone).date(), now.astimezone(zone).date()
    if (today - day).days < 7:
        return WEEKDAYS[day.weekday()]
    month = MONTHS[day.month - 1]
    return f"{day.day} {month}" if day.year == today.year else f"{day.day} {month} {day.year}"


def exact_time(stamp: str, tz: str) -> str:
    """The full time on the person's clock, e.g. "2026-11-25 18:30" (a row's tooltip)."""
    return f"{parse_time(stamp).astimezone(zone_of(tz)):%Y-%m-%d %H:%M}"


def session_rows(sessions: Iterable[Session], tz: str, now: datetime) -> list[dict[str, Any]]:
    """The list's rows: pinned chats first, then the rest, each most recently active
    first (the order ``sessions`` come in), with the time of the last message."""
    rows = [
        {
            "id": s.id,
            "title": s.title,
            "when": relative_time(s.active_at or s.created_at, now, tz),
            "at": exact_time(s.active_at or s.created_at, tz),
            "pinned": s.pinned,
        }
        for s in sessions
    ]
    return sorted(rows, key=lambda row: not row["pinned"])  # stable: activity order kept


def _text(value: Any) -> str:
    """Outside text (a title, a message) made safe for HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def _row(row: Mapping[str, Any], current: str | None) -> str:
    """One chat: the button that opens it (title and time), its ⋯ button and its menu."""
    chat, title = _text(row["id"]), _text(row["title"])
    here = ' aria-current="true"' if row["id"] == current else ""
    pin = "unpin" if row.get("pinned") else "pin"
    items = "".join(
        f'<button type="button" class="chat-menu-item" data-action="{action}" '
        f'data-id="{chat}">{label}</button>'
        for action, label in (("rename", "Rename"), (pin, pin.capitalize()), ("delete", "Delete"))
    )
    return (
        f'<li class="chat-row" data-id="{chat}">'
        f'<button type="button" class="chat-open" data-action="open" data-id="{chat}"{here}>'
        f'<span class="chat-title">{title}</span>'
        f'<span class="chat-when" title="{_text(row.get("at", ""))}">{_text(row["when"])}</span>'
        "</button>"
        f'<button type="button" class="chat-more" data-action="menu" aria-expanded="false" '
        f'aria-label="Options for “{title}”">⋯</button>'
        f'<div class="chat-menu" hidden>{items}</div>'
        "</li>"
    )


def _group(heading: str | None, rows: Sequence[Mapping[str, Any]], current: str | None) -> str:
    if not rows:
        return ""
    shown = f'<h3 class="chat-group">{heading}</h3>' if heading else ""
    return f'{shown}<ul class="chat-rows">{"".join(_row(row, current) for row in rows)}</ul>'


def list_html(rows: Sequence[Mapping[str, Any]], current: str | None) -> str:
    """The list: pinned chats under "Pinned", then the others (under "Recent" when some
    are pinned); the chat in view marked ``aria-current``."""
    if not rows:
        return f'<nav class="chat-nav" aria-label="Chats"><p class="chat-empty">{EMPTY}</p></nav>'
    pinned = [row for row in rows if row.get("pinned")]
    others = [row for row in rows if not row.get("pinned")]
    groups = _group(PINNED, pinned, current) + _group(RECENT if pinned else None, others, current)
    return f'<nav class="chat-nav" aria-label="Chats">{groups}</nav>'


def hit_rows(hits: Iterable[ChatHit]) -> list[dict[str, Any]]:
    """Search results as the page keeps them (a State): chat, title, message, line."""
    return [
        {"id": h.session_id, "title": h.title, "message": h.message_id, "line": h.snippet}
        for h in hits
    ]


def _hit(hit: Mapping[str, Any], current: str | None) -> str:
    here = ' aria-current="true"' if hit["id"] == current else ""
    message, line = "", ""
    if hit.get("message") is not None:  # a message matched, not only the title
        message = f' data-message="{int(hit["message"])}"'
        line = f'<span class="chat-line">{_text(hit["line"])}</span>'
    return (
        f'<li class="chat-row"><button type="button" class="chat-hit" data-action="hit" '
        f'data-id="{_text(hit["id"])}"{message}{here}>'
        f'<span class="chat-title">{_text(hit["title"])}</span>{line}</button></li>'
    )


def results_html(query: str, hits: Sequence[Mapping[str, Any]], current: str | None) -> str:
    """A search's results: each chat's title and its matching line, or that none matched."""
    if not hits:
        said = NO_MATCH.format(query=_text(query.strip()))
        body = f'<p class="chat-empty" role="status">{said}</p>'
    else:
        body = f'<ul class="chat-rows">{"".join(_hit(hit, current) for hit in hits)}</ul>'
    return f'<nav class="chat-nav chat-results" aria-label="Search results">{body}</nav>'


def shown_html(
    rows: Sequence[Mapping[str, Any]], current: str | None, found: Mapping[str, Any] | None
) -> str:
    """What the list shows: a search's results while there is a query, else the chats."""
    if found:
        return results_html(str(found["query"]), found["hits"], current)
    return list_html(rows, current)


def bubble_at(messages: Sequence[Message], message_id: int | None) -> int:
    """Where the stored message ``message_id`` shows in the chat: its bubble's position
    among the chat's bubbles (``history_entries``), or -1 when it is not there."""
    upto = [m for m in messages if m.id <= (message_id or 0)]
    if message_id is None or not any(m.id == message_id for m in upto):
        return -1
    return len(history_entries(upto)) - 1


class OpenedChats:
    """The chat each page (Gradio's ``session_hash``) last asked the list to open, or
    None after "New chat". Following a chat opened from the list stops once the page has
    asked for another: under load, a click's follow can start after the next click
    has already cancelled the followers, and it would stream the old chat into the new."""

    def __init__(self, kept: int = PAGES_KEPT) -> None:
        self.kept = kept  # open pages whose last chosen chat is remembered
        self._chosen: dict[str, str | None] = {}

    def choose(self, page: str | None, chat: str | None) -> None:
        """Page ``page`` now asks for chat ``chat`` (None: a new, empty chat)."""
        if page is None:
            return
        keep_newest(self._chosen, page, chat, self.kept)

    def still(self, page: str | None, chat: str | None) -> bool:
        """True unless ``page`` has asked for another chat than ``chat`` since."""
        return page is None or page not in self._chosen or self._chosen[page] == chat


# The page's side (``js_on_load``): clicks become the component's events; ⋯ opens and
# closes its row's menu (Escape closes it and gives the focus back); a menu left open
# stays open across a re-render of the list.
LIST_JS = """
let openFor = null;
const more = (id) => [...element.querySelectorAll('.chat-more')]
  .find((button) => button.closest('.chat-row')?.dataset.id === id);
function show(id, focus) {
  openFor = id;
  element.querySelectorAll('.chat-row').forEach((row) => {
    const open = row.dataset.id === id;
    row.querySelector('.chat-menu')?.toggleAttribute('hidden', !open);
    row.querySelector('.chat-more')?.setAttribute('aria-expanded', String(open));
  });
  if (focus && id) more(id)?.closest('.chat-row').querySelector('.chat-menu-item')?.focus();
}
element.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-action]');
  if (!button) return;
  const { action, id, message } = button.dataset;
  if (action === 'menu') {
    const row = button.closest('.chat-row').dataset.id;
    show(openFor === row ? null : row, event.detail === 0);
    return;
  }
  show(null, false);
  if (action === 'open') trigger('open_chat', { id });
  else if (action === 'hit') trigger('open_hit', { id, message: message ? Number(message) : null });
  else trigger('row_action', { action, id });
});
element.addEventListener('keydown', (event) => {
  if (event.key !== 'Escape' || openFor === null) return;
  const back = more(openFor);
  show(null, false);
  back?.focus();
});
document.addEventListener('click', (event) => {
  if (openFor !== null && !element.contains(event.target)) show(null, false);
});
watch('value', () => { if (openFor !== null) show(more(openFor) ? openFor : null, false); });
"""

# After a search result opened its chat: the found message's bubble is brought into view
# and marked. The chat may still show the old chat for a moment, and it scrolls itself to
# the bottom when its value changes: the bubble is looked for, then shown again a little
# later, for a few seconds at most.
SHOW_FOUND = """(at) => {
  if (at === null || at === undefined || at < 0) return;
  const bubbles = () => document.querySelectorAll(
    '#chatbot [data-testid="user"], #chatbot [data-testid="bot"]');
  let tries = 0;
  const look = () => {
    const bubble = bubbles()[at];
    tries += 1;
    if (bubble) {
      document.querySelectorAll('#chatbot .chat-found')
        .forEach((old) => old.classList.remove('chat-found'));
      bubble.classList.add('chat-found');
      bubble.scrollIntoView({ block: 'center' });
    }
    if (tries < 12) setTimeout(look, 250);
  };
  setTimeout(look, 50);
}"""

# After a row's menu asked for Rename or Delete: the focus goes to the row that opened
# (the new title's box, or Keep), so the keyboard carries on there.
FOCUS_ROW = """() => setTimeout(() => {
  const fields = '#rename-box input, #rename-box textarea, #delete-no';
  const target = [...document.querySelectorAll(fields)]
    .find((element) => element.offsetParent !== null);
  target?.focus();
}, 100)"""

CSS = """
#chat-list .chat-nav { display: flex; flex-direction: column; gap: 2px; }
#chat-list .chat-group { font-size: 0.75em; font-weight: 600; text-transform: uppercase;
  letter-spacing: 0.05em; opacity: 0.7; margin: 10px 8px 2px; }
#chat-list .chat-rows { list-style: none; margin: 0; padding: 0; }
#chat-list .chat-row { position: relative; display: flex; align-items: center; margin: 0;
  padding: 0; border-radius: 8px; }
#chat-list .chat-row:hover, #chat-list .chat-row:focus-within {
  background: var(--background-fill-secondary); }
#chat-list button { font: inherit; color: inherit; background: none; border: 0;
  cursor: pointer; border-radius: 8px; }
#chat-list button:focus-visible { outline: 2px solid var(--color-accent); outline-offset: -2px; }
#chat-list .chat-open, #chat-list .chat-hit { flex: 1; min-width: 0; display: flex;
  gap: 8px; align-items: baseline; text-align: left; padding: 8px 4px 8px 10px;
  min-height: 40px; }
#chat-list .chat-hit { flex-direction: column; gap: 2px; align-items: stretch; }
#chat-list [aria-current="true"] { background: var(--background-fill-secondary);
  font-weight: 600; }
#chat-list .chat-title { flex: 1; min-width: 0; overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap; }
#chat-list .chat-when { flex: none; font-size: 0.8em; opacity: 0.7; white-space: nowrap;
  font-weight: normal; }
#chat-list .chat-line { font-size: 0.85em; opacity: 0.8; font-weight: normal;
  display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical;
  overflow: hidden; overflow-wrap: anywhere; }
#chat-list .chat-more { flex: none; width: 32px; min-height: 40px; font-size: 1.1em;
  opacity: 0.6; }
#chat-list .chat-more:hover, #chat-list .chat-more[aria-expanded="true"],
#chat-list .chat-more:focus-visible { opacity: 1; }
#chat-list .chat-menu { position: absolute; right: 4px; top: 100%; z-index: 20;
  display: flex; flex-direction: column; min-width: 120px; padding: 4px;
  background: var(--background-fill-primary); border: 1px solid var(--border-color-primary);
  border-radius: 8px; box-shadow: var(--shadow-drop-lg); }
#chat-list .chat-menu[hidden] { display: none; }
#chat-list .chat-menu-item { text-align: left; padding: 8px 12px; min-height: 36px; }
#chat-list .chat-menu-item:hover { background: var(--background-fill-secondary); }
#chat-list .chat-menu-item[data-action="delete"] { color: var(--error-text-color, #b91c1c); }
#chat-list .chat-empty { opacity: 0.7; padding: 8px 10px; margin: 0; }
#chatbot .chat-found { outline: 2px solid var(--color-accent); outline-offset: 2px;
  border-radius: 8px; }
@media (max-width: 767px) {
  #chat-list .chat-open, #chat-list .chat-hit, #chat-list .chat-more,
  #chat-list .chat-menu-item { min-height: 44px; }
  #chat-list .chat-more { width: 44px; }
}
"""
