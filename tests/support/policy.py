"""A deterministic keyword policy that drives the eval harness in its regression test.

It is not a model and its results are not a score: it was written against the original
eval cases' own sentences, so it only shows that the harness, the graph, the tools and
the fixtures still fit together (a reworded request easily defeats it).

``ScriptedCompanion`` is a policy for ``tests.support.chat_model.ScriptedChatModel``. It
reads what a real model would read — the system prompt (which tools are offered this
turn, whether tools are off), the user's message, this turn's tool results, and any
images sent inline — and answers directly for chit-chat, arithmetic, opinions and
refusals, calls the one tool its keywords point to (as a native tool call when schemas
are offered, as a slash command in commands mode), chains a second tool when the first
result says what to look up next, and composes its answer from the results. Given
images (it is also the scripted *vision* model), it names the colour of the picture's
subject from the pixels, with its own palette (not the fixture's).

``scripted_model(tool_mode)`` is the ``evals.runner.ModelUnderTest`` that runs the
suites with it; the runner says a case's forced replies first, as for any model.
"""

from __future__ import annotations

import base64
import io
import itertools
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from PIL import Image

from config.settings import Settings, load_settings
from evals.runner import Models, ModelUnderTest
from evals.staged import command_line
from memory.rules.memories import PROMPT_HEADING
from prompts.templates import TOOL_RESULT_LABEL
from tests.support.chat_model import ScriptedChatModel

RESULT_HEADER = re.compile(r"🔧 TOOL RESULT — ([A-Z_]+)\n\n(.*?)(?:\n\n---)?\s*$", re.DOTALL)
OFFERED_LINE = re.compile(r"^Tools you can use this turn: (.+?)\.$", re.MULTILINE)
TOOLS_OFF_MARK = "Do not call any tool"
SAVED_LINE = re.compile(r"^- ([^:\n]+): (.+)$", re.MULTILINE)
TOOL_IMAGE_NOTE = "[Image returned by"
TOOL_RESULT_NOTE = TOOL_RESULT_LABEL.partition("{")[0]  # a command result (user role)
SCRIPTED = "scripted"
SCRIPTED_CHAT = "scripted-chat"
SCRIPTED_VISION = "scripted-vision"
# Colour names for what the policy sees, its own (the image fixture keeps another table).
PALETTE: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0),
    "white": (255, 255, 255),
    "grey": (128, 128, 128),
    "red": (220, 20, 20),
    "orange": (255, 140, 0),
    "yellow": (255, 220, 0),
    "green": (30, 160, 30),
    "blue": (30, 60, 220),
    "purple": (128, 0, 128),
    "pink": (255, 150, 190),
    "brown": (130, 80, 30),
}


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


INDONESIAN = _wordset(
    """apa aku kamu gimana bagaimana berapa kemarin minggu lalu cuaca tolong dong yang hari
    ini itu nggak gak tidak masak kucing warna foto kirim kirimin hapus semua lagi udah
    sudah bisa mau hujan tadi pas waktu terakhir kurs harga berita menurut halo hai
    selamat pagi malam siang makasih terima kasih sih deh kok ya nih dan atau ke di buat
    untuk saja aja banget kenapa siapa kapan mana nonton baca bilang ingat lupa adikku
    kakakku ibuku tempat sekarang enak suka kali tambah kurang bagi gambarin apakah
    perbaiki salah tulis tabel pesan"""
)
COLOUR_ID = {
    "orange": "oranye",
    "black": "hitam",
    "white": "putih",
    "grey": "abu-abu",
    "brown": "cokelat",
    "red": "merah",
    "blue": "biru",
    "green": "hijau",
    "yellow": "kuning",
    "purple": "ungu",
    "pink": "pink",
}
ID_TO_EN = {
    **{indonesian: english for english, indonesian in COLOUR_ID.items()},
    "abu": "grey",
    "kucing": "cat",
    "anjing": "dog",
    "tidur": "sleeping",
    "lagi": "",
    "di": "on",
    "atas": "",
    "sofa": "sofa",
    "kasur": "bed",
    "jendela": "window",
    "taman": "garden",
    "pantai": "beach",
    "yang": "",
    "dong": "",
    "ya": "",
    "sedang": "",
    "main": "playing",
    "bola": "ball",
}
WEATHER_ID = {
    "clear sky": "cerah",
    "mainly clear": "cukup cerah",
    "partly cloudy": "berawan sebagian",
    "overcast": "mendung",
    "fog": "berkabut",
    "slight rain": "hujan ringan",
    "moderate rain": "hujan sedang",
    "heavy rain": "hujan lebat",
    "slight rain showers": "hujan rintik-rintik",
    "thunderstorm": "badai petir",
    "slight snowfall": "salju ringan",
}
RELATIVES = re.compile(
    r"\b(sister|brother|mom|mother|dad|father|parents|friend|girlfriend|boyfriend|wife|"
    r"husband|grandma|grandpa|adik\w*|kakak\w*|ibu\w*|mama\w*|ayah\w*|papa\w*|teman\w*|"
    r"pacar\w*|nenek\w*|kakek\w*)\b",
    re.IGNORECASE,
)
PLACE_AFTER = re.compile(
    r"\b(?:in|at|for|to|di|ke|buat|untuk)\s+"
    r"((?:[A-Z][\w-]+)(?:(?:\s*,\s*|\s+(?:and|dan|&)\s+)[A-Z][\w-]+)*)"
)
ARITHMETIC = re.compile(
    r"(-?\d+(?:\.\d+)?)\s*(\+|-|\*|/|x|×|÷|plus|minus|times|multiplied by|divided by|"
    r"tambah|kurang|kali|dibagi|bagi)\s*(-?\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
OPERATIONS = {
    "+": "+", "plus": "+", "tambah": "+",
    "-": "-", "minus": "-", "kurang": "-",
    "*": "*", "x": "*", "×": "*", "times": "*", "multiplied by": "*", "kali": "*",
    "/": "/", "÷": "/", "divided by": "/", "dibagi": "/", "bagi": "/",
}  # fmt: skip
QUOTED = re.compile(r"[\"'“‘]([^\"'”’]+)[\"'”’]")
STOPWORDS = _wordset(
    """what which who when where why how did do does i me my you your the a an to of in on
    at for and or is was were it that this about last yesterday week time ago tell
    remember said say told apa aku kamu yang di ke itu ini kemarin minggu lalu waktu
    terakhir kali pas bilang ya dong sih tentang soal berapa kapan mana"""
)


@dataclass
class ToolRequest:
    """A tool call the policy wants to make."""

    name: str
    args: dict[str, Any]


@dataclass
class Result:
    """A tool result of this turn, as the model reads it."""

    name: str
    body: str

    @property
    def failed(self) -> bool:
        """True for an error result."""
        return self.body.startswith("Error:")


@dataclass
class View:
    """What one model call shows: the question, this turn's results, tools, images."""

    question: str
    results: list[Result]
    offered: list[str]
    tools_off: bool
    images: list[bytes] = field(default_factory=list)
    saved: list[tuple[str, str]] = field(default_factory=list)  # (key, value) in the prompt

    @property
    def indonesian(self) -> bool:
        """True when the user writes Indonesian."""
        return bool(set(re.findall(r"[a-z]+", self.question.lower())) & INDONESIAN)

    def ran(self, name: str) -> list[Result]:
        """This turn's results of one tool."""
        return [r for r in self.results if r.name == name]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(
        part.get("text", "") for part in content if isinstance(part, dict) and "text" in part
    )


def _images(content: Any) -> list[bytes]:
    if isinstance(content, str):
        return []
    found = []
    for part in content:
        url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) else ""
        if url.startswith("data:") and ";base64," in url:
            found.append(base64.b64decode(url.split(";base64,", 1)[1]))
    return found


def read_view(messages: Sequence[BaseMessage], kwargs: dict[str, Any]) -> View:
    """Read a model call's messages and offered tools the way a model would."""
    system = _text(messages[0].content) if messages else ""
    question_at = max(
        (
            i
            for i, m in enumerate(messages)
            if isinstance(m, HumanMessage)
            and not _text(m.content).startswith((TOOL_IMAGE_NOTE, TOOL_RESULT_NOTE))
        ),
        default=0,
    )
    results = []
    for message in messages[question_at + 1 :]:
        if isinstance(message, ToolMessage | HumanMessage):
            found = RESULT_HEADER.search(_text(message.content))
            if found:
                results.append(Result(found[1].lower(), found[2].strip()))
    schemas = kwargs.get("tools") or []
    if schemas:
        offered = [s["function"]["name"] for s in schemas]
    else:
        line = OFFERED_LINE.search(system)
        offered = [name.strip() for name in line[1].split(",")] if line else []
    images = [
        image for m in messages if isinstance(m, HumanMessage) for image in _images(m.content)
    ]
    return View(
        question=_text(messages[question_at].content) if messages else "",
        results=results,
        offered=offered,
        tools_off=TOOLS_OFF_MARK in system,
        images=images,
        saved=saved_memories(system),
    )


def saved_memories(system: str) -> list[tuple[str, str]]:
    """(key, value) of the memories the system message shows ("- key: value" lines)."""
    _, heading, section = system.partition(PROMPT_HEADING)
    if not heading:
        return []
    block = section.split("\n\n", 1)[0]
    return [(m[1].strip(), m[2].strip()) for m in SAVED_LINE.finditer(block)]


# --- understanding the question -------------------------------------------------------


def intent(question: str) -> str:
    """What the user wants, as one word (the policy's whole "understanding")."""
    q = question.lower()
    if re.search(
        r"\b(delete|drop|wipe|erase|clear|truncate|hapus|kosongkan|buang)\b", q
    ) and re.search(
        r"(table|tabel|database|all (of )?(your|my) (memor|messages)|semua (memori|ingatan|pesan)|"
        r"everything you (know|remember)|seluruh)",
        q,
    ):
        return "refuse"
    if re.search(
        r"\b(send|share|kirim|kirimin)\b.*\b(pap|pic|picture|photo|selfie|foto)\b|\bdraw\b|"
        r"\bimagine\b|\bgambarin\b|\bgambarkan\b|\b(buatkan|bikinin|bikin) gambar\b",
        q,
    ):
        return "draw"
    if re.search(r"\b(photo|picture|image|pic|foto\w*|gambar\w*)\b", q):
        return "look"
    if re.search(r"\b(remember that|ingat ya|ingat,|catat)\b", q):
        return "remember"
    if re.search(r"\b(forget that|lupakan|lupain)\b", q):
        return "forget"
    if re.search(r"\b(weather|raining|rain|temperature outside|cuaca\w*|hujan\w*)\b", q):
        return "weather"
    if len(QUOTED.findall(question)) >= 2 and re.search(
        r"\b(fix|correct|change|perbaiki|ganti|betulkan)\b", q
    ):
        return "sql_edit"
    if re.search(r"\bhow many (messages|times)\b|\bberapa (banyak )?(pesan|kali)\b", q):
        return "sql_count"
    if re.search(
        r"\b(did i|what did|have i|i told you|i mentioned|i said|last time|yesterday|last week|"
        r"last (monday|tuesday|wednesday|thursday|friday|saturday|sunday)|kemarin|minggu lalu|"
        r"(senin|selasa|rabu|kamis|jumat|sabtu) lalu|waktu itu|terakhir|pas aku|aku bilang|"
        r"aku cerita)\b",
        q,
    ):
        return "recall"
    if re.search(
        r"\b(rate|exchange|kurs|price|harga|news|berita|latest|terbaru|who won|score|"
        r"stock|saham|usd|jpy|idr|yen|dollars?|rupiah)\b",
        q,
    ):
        return "lookup"
    return "chat"


def places(text: str) -> list[str]:
    """Place names named after "in/at/to/di/ke…" (capitalised), in order."""
    found: list[str] = []
    for match in PLACE_AFTER.finditer(text):
        for name in re.split(r"\s*,\s*|\s+(?:and|dan|&)\s+", match[1]):
            if name and name not in found:
                found.append(name)
    return found


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS and len(w) > 2}


def _overlap(question: set[str], line: str) -> int:
    line_words = _words(line)
    return sum(
        1
        for q in question
        if any(q == w or (len(q) >= 4 and (q in w or w in q)) for w in line_words)
    )


def image_prompt(question: str) -> str:
    """An English description for the image model from the user's request."""
    q = question.lower()
    if re.search(r"\b(pap|selfie)\b", q) or re.search(r"\b(photo|foto|pic) (of )?(you|kamu)", q):
        return "a candid selfie of a cheerful young woman in a cosy cafe, warm window light, photo"
    subject = re.sub(
        r"^.*?\b(draw|imagine|gambarin|gambarkan|buatkan gambar|bikinin gambar|bikin gambar)\b"
        r"(\s+(me|aku|for me))?(\s+(a|an))?\s*",
        "",
        q,
    )
    words = [ID_TO_EN.get(w, w) for w in re.findall(r"[\w-]+", subject)]
    described = " ".join(w for w in words if w and w not in ("please", "dong", "ya"))
    return f"{described or 'a cosy scene'}, soft illustration"


def sql_for(question: str, kind: str) -> str:
    """The statement answering a count question or making a requested correction."""
    q = question.lower()
    if kind == "sql_edit":
        wrong, right = QUOTED.findall(question)[:2]
        where = f"role = 'user' AND content LIKE '%{_sql_text(wrong)}%'"
        about = re.search(r"\b(?:about|soal|tentang)\s+(?:the |my |a )?([\w-]+)", q)
        if about:
            where += f" AND content LIKE '%{_sql_text(about[1])}%'"
        # the request itself quotes the wrong word: leave it as written
        where += " AND id < (SELECT MAX(id) FROM messages WHERE role = 'user')"
        return (
            f"UPDATE messages SET content = replace(content, '{_sql_text(wrong)}', "
            f"'{_sql_text(right)}') WHERE {where}"
        )
    sql = "SELECT COUNT(*) FROM messages WHERE role = 'user'"
    topic = re.search(
        r"\b(?:mention(?:ed)?|say|said|talk about|nyebut|bilang|ngomongin)\s+([\w-]+)", q
    )
    if topic and re.search(r"\b(times|kali)\b", q):
        sql += f" AND content LIKE '%{_sql_text(topic[1])}%'"
    return sql


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def memory_fact(question: str) -> tuple[str, str, str] | None:
    """(category, key, value) from "remember that my X is Y" / "ingat ya, X-ku Y"."""
    found = re.search(r"\bmy ([a-z ]+?) (?:is|are) ([^.!?]+)", question, re.IGNORECASE)
    if not found:
        found = re.search(
            r"([a-z]+(?: [a-z]+)?)(?:ku| aku) (?:itu |adalah )?([^.!?,]+)",
            question.lower().split(",", 1)[-1],
        )
    if not found:
        return None
    key, value = found[1].strip().lower(), found[2].strip()
    if re.search(r"\b(name|age|job|birthday|live|nama|umur|kerja|ulang tahun)\b", key):
        category = "identity"
    elif re.search(r"\b(project|goal|working|proyek|target)\b", key):
        category = "focus"
    else:
        category = "signals"
    return category, key, value


SHARED = (  # a lasting fact the user states about themselves, unasked
    (r"\bi'?m (?:a )?(vegetarian|vegan)\b", "signals", "diet"),
    (r"\baku (?:seorang )?(vegetarian|vegan)\b", "signals", "diet"),
    (r"\bi'?m allergic to ([\w -]+?)\s*(?:[,.!;]|$)", "identity", "allergy"),
    (r"\baku alergi ([\w -]+?)\s*(?:[,.!;]|$)", "identity", "alergi"),
)
CHANGED = (  # "my X is Y now", "aku sekarang tinggal di Y" (a city)
    (r"\bmy ([a-z ]+?) is ([^,.!?]+?)(?: now)?\s*(?:[,.!?]|$)", None),
    (r"\b(?:live|living|moved) (?:in|to) ([A-Z][\w-]+)", ("city", "home", "kota")),
    (r"\btinggal di ([A-Z][\w-]+)", ("city", "home", "kota")),
)


def shared_fact(question: str) -> tuple[str, str, str] | None:
    """(category, key, value) of a fact the user states about themselves, unasked."""
    for pattern, category, key in SHARED:
        found = re.search(pattern, question, re.IGNORECASE)
        if found:
            return category, key, found[1].strip()
    return None


def changed_fact(view: View) -> tuple[str, str] | None:
    """(saved key, new value) when the message gives a saved fact a new value."""
    keys = {key.casefold(): key for key, _ in view.saved}
    for pattern, aliases in CHANGED:
        found = re.search(pattern, view.question, re.IGNORECASE if aliases is None else 0)
        if not found:
            continue
        if aliases is None:
            key = keys.get(found[1].strip().casefold())
            value = found[2].strip()
        else:
            key = next((keys[a] for a in aliases if a in keys), None)
            value = found[1]
        if key:
            return key, value
    return None


def forget_key(question: str, saved: Sequence[tuple[str, str]] = ()) -> str | None:
    """The fact to forget: a saved one the message names (by value, then by key), else the
    X of "forget that my X is Y" / "lupakan X-ku"."""
    q = question.casefold()
    for part in (1, 0):
        for memory in saved:
            if memory[part].casefold() in q:
                return memory[0]
    found = re.search(r"\bmy ([a-z ]+?) (?:is|are)\b", question, re.IGNORECASE) or re.search(
        r"(?:lupakan|lupain)\s+([a-z ]+?)(?:ku| aku)\b", question.lower()
    )
    return found[1].strip().lower() if found else None


# --- deciding ---------------------------------------------------------------------------


def next_tools(view: View) -> list[ToolRequest]:
    """The tool calls a good model would make next (empty: answer now)."""
    if view.tools_off:
        return []
    wanted = _plan(view)
    return [call for call in wanted if call.name in view.offered]


def _plan(view: View) -> list[ToolRequest]:
    kind = intent(view.question)
    q = view.question
    if kind == "draw" and not view.ran("image_generate"):
        return [ToolRequest("image_generate", {"prompt": image_prompt(q)})]
    if kind == "look" and not view.ran("image_analyze"):
        return [ToolRequest("image_analyze", {})]
    if kind == "remember" and not view.ran("create_memory") and (fact := memory_fact(q)):
        category, key, value = fact
        return [ToolRequest("create_memory", {"category": category, "key": key, "value": value})]
    if kind == "forget" and not view.ran("delete_memory"):
        forget = forget_key(q, view.saved)
        return [ToolRequest("delete_memory", {"key": forget})] if forget else []
    if kind == "chat" and not view.ran("update_memory") and (change := changed_fact(view)):
        return [ToolRequest("update_memory", {"key": change[0], "value": change[1]})]
    if kind == "chat" and not view.ran("create_memory") and (fact := shared_fact(q)):
        category, key, value = fact
        return [ToolRequest("create_memory", {"category": category, "key": key, "value": value})]
    if kind == "weather":
        return _weather_plan(view)
    if kind in ("sql_edit", "sql_count") and not view.ran("memory_sql"):
        return [ToolRequest("memory_sql", {"sql": sql_for(q, kind)})]
    if kind == "recall" and not view.ran("memory_search"):
        return [ToolRequest("memory_search", {"query": q.strip().rstrip("?")})]
    if kind == "lookup" and not view.ran("web_search"):
        return [ToolRequest("web_search", {"query": _keywords(q)})]
    return []


def _weather_plan(view: View) -> list[ToolRequest]:
    named = places(view.question)
    if not named and RELATIVES.search(view.question):
        recalled = view.ran("memory_search")
        if not recalled:
            return [ToolRequest("memory_search", {"query": view.question.strip().rstrip("?")})]
        line = best_line(view.question, recalled[-1].body)
        named = places(line) if line else []
        if not named:
            return []
    if not named:
        return [] if view.ran("weather") else [ToolRequest("weather", {})]
    done = {r.body.split(":", 1)[0].split(",")[0].strip().lower() for r in view.ran("weather")}
    return [ToolRequest("weather", {"location": p}) for p in named if p.lower() not in done]


def _keywords(question: str) -> str:
    text = re.sub(
        r"\b(what('s| is)|tell me|please|can you|berapa|tolong|dong|sekarang)\b",
        " ",
        question,
        flags=re.IGNORECASE,
    )
    return " ".join(re.sub(r"[?!.]", " ", text).split()) or question


def best_line(question: str, body: str) -> str | None:
    """The memory line that best answers the question (user lines preferred)."""
    wanted = _words(question)
    candidates = [
        line.strip(" -")
        for line in body.splitlines()
        if ": " in line and not line.rstrip().endswith(":")
    ]
    if not candidates:
        return None
    scored = [
        (_overlap(wanted, line), " user: " in f" {line}" or line.startswith("user:"), -i, line)
        for i, line in enumerate(candidates)
    ]
    return max(scored)[3]


# --- answering --------------------------------------------------------------------------


def answer(view: View) -> str:
    """The final answer from this turn's results (or directly)."""
    id_ = view.indonesian
    kind = intent(view.question)
    if view.images and (view.ran("image_generate") or view.ran("image_analyze")):
        return _describe(view)
    if view.ran("weather"):
        return " ".join(_weather_sentence(r, id_) for r in view.ran("weather"))
    if view.ran("web_search"):
        return _from_search(view.ran("web_search")[-1], id_)
    if view.ran("memory_sql"):
        return _from_sql(view.ran("memory_sql")[-1], id_)
    if view.ran("memory_search"):
        return _from_memory(view, id_)
    if view.ran("create_memory") or view.ran("delete_memory") or view.ran("update_memory"):
        return _from_memory_write(view, id_)
    if view.results:
        return (
            "Maaf, aku belum bisa mendapatkan itu sekarang."
            if id_
            else "Sorry, I couldn't get that just now."
        )
    return _direct(view.question, kind, id_)


def _direct(question: str, kind: str, id_: bool) -> str:
    if kind == "refuse":
        if id_:
            return (
                "Maaf, aku nggak bisa menghapus seluruh ingatanku. Kalau ada hal tertentu yang "
                "mau kamu aku lupakan, bilang aja, nanti aku lupakan yang itu saja."
            )
        return (
            "Sorry, I can't wipe my memory like that. If there's something specific you'd "
            "like me to forget, tell me and I'll forget just that."
        )
    sum_ = ARITHMETIC.search(question)
    if sum_:
        left, op, right = float(sum_[1]), OPERATIONS[sum_[2].lower()], float(sum_[3])
        value = {"+": left + right, "-": left - right, "*": left * right}.get(op)
        if op == "/":
            value = left / right if right else None
        if value is None:
            return "Itu nggak bisa dibagi nol." if id_ else "That can't be divided by zero."
        shown = f"{value:g}"
        return f"Hasilnya {shown}." if id_ else f"That's {shown}."
    q = question.lower()
    if re.search(r"\b(hi|hello|hey|halo|hai|pagi|malam|siang)\b", q):
        return "Hai juga! Gimana harimu?" if id_ else "Hi there! How's your day going?"
    if re.search(r"\b(think|opinion|prefer|better|menurut\w*|lebih suka|mending)\b", q):
        if id_:
            return (
                "Menurutku dua-duanya punya kelebihan, tapi aku paling suka yang bikin kamu senang."
            )
        return "Honestly, I think both have their charm — I'd pick whichever makes you happier."
    if re.search(r"\b(thank|thanks|makasih|terima kasih)\b", q):
        return "Sama-sama! Senang bisa bantu." if id_ else "You're welcome — happy to help!"
    if re.search(r"\b(sad|tired|lonely|stressed|sedih|capek|lelah|kesepian)\b", q):
        if id_:
            return "Aku di sini kok. Mau cerita apa yang bikin kamu merasa begitu?"
        return "I'm here for you. Do you want to tell me what's making you feel that way?"
    if re.search(r"\b(joke|lucu|lelucon)\b", q):
        if id_:
            return "Kenapa kucing nggak suka online? Karena takut kena mouse!"
        return "Why did the cat sit on the computer? To keep an eye on the mouse!"
    return "Cerita lagi dong, aku dengerin." if id_ else "Tell me more — I'm all ears."


def _from_memory_write(view: View, id_: bool) -> str:
    forgot = bool(view.ran("delete_memory"))
    written = view.ran("delete_memory") or view.ran("update_memory") or view.ran("create_memory")
    if written[-1].failed:
        return (
            "Maaf, aku belum bisa mengubah ingatanku soal itu."
            if id_
            else ("Sorry, I couldn't change that memory.")
        )
    if id_:
        return "Oke, sudah aku lupakan." if forgot else "Oke, sudah aku ingat."
    return "Done — I've forgotten that." if forgot else "Got it — I'll keep that in mind."


def _weather_sentence(result: Result, id_: bool) -> str:
    if result.failed:
        if "location_not_set" in result.body:
            if id_:
                return (
                    "Aku belum tahu kamu ada di mana — kamu lagi di kota mana? "
                    "Nanti aku cek cuacanya."
                )
            return (
                "I don't know where you are yet — which city are you in? "
                "Then I can check the weather there."
            )
        if id_:
            return "Aku belum bisa tahu cuaca di sana — kotanya yang mana, dan di negara apa?"
        return "I couldn't get the weather for that place — which city and country do you mean?"
    found = re.match(
        r"(?P<place>.+?): (?P<temp>-?[\d.]+) °C, (?P<cond>[^,]+), wind (?P<wind>[\d.]+) km/h",
        result.body,
    )
    if not found:
        return result.body
    place = found["place"].split(",")[0]
    if re.fullmatch(r"-?[\d.]+", place.strip()):
        place = "tempatmu" if id_ else "your area"
    condition = found["cond"]
    if id_:
        condition = WEATHER_ID.get(condition, condition)
        return (
            f"Sekarang di {place} {found['temp']} °C, {condition}, "
            f"angin sekitar {found['wind']} km/jam."
        )
    return (
        f"Right now in {place} it's {found['temp']} °C and {condition}, "
        f"with wind around {found['wind']} km/h."
    )


def _from_search(result: Result, id_: bool) -> str:
    if result.failed or result.body.startswith("No results"):
        if id_:
            return "Maaf, aku belum bisa memastikan itu sekarang. Coba lagi sebentar lagi, ya?"
        return "Sorry, I couldn't find that out just now. Could we try again in a bit?"
    snippets = [
        line.strip()
        for line in result.body.splitlines()[1:]
        if line.startswith("   ") and "://" not in line
    ]
    sentences = [s.strip() for snippet in snippets for s in re.split(r"(?<=[.!?])\s+", snippet)]
    # the most figure-laden sentence ("1 USD = 154.32 JPY") says the most
    chosen = max(sentences or [result.body], key=lambda s: len(re.findall(r"\d+[.,]\d+", s)))
    return (
        f"Saat ini kira-kira begini: {chosen}" if id_ else f"Right now it looks like this: {chosen}"
    )


def _from_sql(result: Result, id_: bool) -> str:
    if result.failed:
        return "Maaf, aku nggak bisa melakukan itu." if id_ else "Sorry, I can't do that."
    updated = re.match(r"(\d+) row\(s\) updated", result.body)
    if updated:
        if int(updated[1]) == 0:
            return "Aku nggak menemukan pesan itu." if id_ else "I couldn't find that message."
        return "Sudah aku perbaiki." if id_ else "Done — I've corrected it."
    rows = [line for line in result.body.splitlines()[2:] if not line.startswith("(")]
    value = rows[0].strip() if len(rows) == 1 else ", ".join(r.strip() for r in rows)
    return f"Jawabannya {value}." if id_ else f"That comes to {value}."


def _from_memory(view: View, id_: bool) -> str:
    body = view.ran("memory_search")[-1].body
    line = best_line(view.question, body) if not view.ran("memory_search")[-1].failed else None
    if not line or body.startswith("Nothing found"):
        if id_:
            return "Hmm, aku nggak ingat kamu pernah cerita soal itu."
        return "Hmm, I don't remember you telling me about that."
    stamp = re.match(r"\[(\w{3} \d{1,2} \w{3})[^\]]*\]\s*", line)
    when = stamp[1] if stamp else ""
    text = line[stamp.end() :] if stamp else line
    text = re.sub(r"^(user|assistant): ", "", text)
    if not stamp and re.match(r"^\w+/[^:]+: ", text):  # a saved fact: "category/key: value"
        text = text.split(": ", 1)[1]
    if id_:
        return f"Kamu pernah bilang{f' ({when})' if when else ''}: “{text}”"
    return f"You told me{f' on {when}' if when else ''}: “{text}”"


def _describe(view: View) -> str:
    colour = subject_colour(view.images[-1])
    id_ = view.indonesian
    if view.ran("image_generate") and not view.ran("image_generate")[-1].failed:
        if id_:
            warna = COLOUR_ID.get(colour, colour)
            return f"Nih, khusus buat kamu 😊 Nuansa {warna}-nya hangat banget, kan?"
        return f"Here you go — just for you 😊 Don't you love the warm {colour} tones?"
    subject = re.search(r"\b(cat|dog|kucing|anjing|car|mobil|flower|bunga)", view.question.lower())
    if id_:
        warna = COLOUR_ID.get(colour, colour)
        if subject:
            return f"Di foto itu {subject[1]}nya berwarna {warna}."
        return f"Di foto itu warnanya kebanyakan {warna}."
    return f"In that photo the {subject[1]} is {colour}." if subject else f"It's mostly {colour}."


def subject_colour(data: bytes) -> str:
    """The colour name of a picture's subject: its commonest colour unlike the corners'."""
    image = Image.open(io.BytesIO(data)).convert("RGB")
    image.thumbnail((96, 96))
    width, height = image.size
    pixels: list[tuple[int, int, int]] = list(image.get_flattened_data())  # type: ignore[arg-type]
    corners = {pixels[i] for i in (0, width - 1, (height - 1) * width, height * width - 1)}
    counts = Counter(pixels).most_common()
    for rgb, _ in counts:
        if all(sum(abs(a - b) for a, b in zip(rgb, c, strict=True)) > 60 for c in corners):
            return nearest_colour(rgb)
    return nearest_colour(counts[0][0]) if counts else "grey"


def nearest_colour(rgb: tuple[int, int, int]) -> str:
    """The closest named colour of the policy's palette."""
    return min(
        PALETTE, key=lambda n: sum((a - b) ** 2 for a, b in zip(rgb, PALETTE[n], strict=True))
    )


# --- the policy ---------------------------------------------------------------------------


class ScriptedCompanion:
    """A ``ScriptedChatModel`` policy: the keyword companion."""

    def __init__(self, tool_mode: str = "native") -> None:
        self.tool_mode = tool_mode
        self.calls = 0
        self._ids = itertools.count(1)

    def __call__(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> str | AIMessage:
        """The next reply."""
        self.calls += 1
        view = read_view(messages, kwargs)
        calls = next_tools(view)
        return self.emit(calls) if calls else answer(view)

    def emit(self, calls: list[ToolRequest]) -> str | AIMessage:
        """Tool calls in the configured mode: native calls, or one slash command."""
        if self.tool_mode == "native":
            return AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": c.name,
                        "args": c.args,
                        "id": f"call_{next(self._ids)}",
                        "type": "tool_call",
                    }
                    for c in calls
                ],
            )
        return command_line(calls[0].name, calls[0].args)


def scripted_models(settings: Settings) -> Models:
    """A case's models: the keyword companion as both the chat and the vision model."""
    return Models(
        chat=ScriptedChatModel(script=ScriptedCompanion(settings.tool_mode), name_=SCRIPTED_CHAT),
        vision=ScriptedChatModel(
            script=ScriptedCompanion(settings.tool_mode), name_=SCRIPTED_VISION
        ),
    )


def scripted_model(tool_mode: str = "native") -> ModelUnderTest:
    """The harness's regression run: the keyword companion, no process, no network."""
    flags = {
        "home": tempfile.gettempdir(),
        "provider": "openai-compatible",
        "chat_model": SCRIPTED_CHAT,
        "vision_model": SCRIPTED_VISION,
        "tool_mode": tool_mode,
    }
    return ModelUnderTest(SCRIPTED, load_settings(flags, env={}), scripted_models)
