"""Recall quality on SQLite and on Postgres, in English and Indonesian, through the evals.

Runs the eval cases that recall — the whole memory suite, and every original case of any
suite that expects memory_search — through the real graph with the scripted keyword
policy of ``tests.support.policy``, once with a SQLite file per case run and once with
every case run a new person of a throwaway Postgres server (``PostgresServer``, migrated
with ``memory.postgres.schema.migrate`` and ``memory.postgres.sql_guard.prepare``). It prints, per
language (EN / ID) and per backend:

- the memory suite's cases, how many passed and the pass rate (every check of the case);
- retrieval, independent of any model: for each case that expects memory_search, the
  facts it must recall (the answer's expected phrases found in the seeded history or
  memories) and whether memory_search's result holds them (hit rate), and where (MRR over
  the result's entries — facts, segments, excerpts, messages, in the order the model
  reads them: 1 when the first entry holds the first fact, 0 when none does);
- Postgres / SQLite for each.

The scripted policy is not a model: it was written against these cases' sentences, asks
memory_search with the user's question as it stands, and answers from the best line of
the result. So the pass rates show that the harness and both stores fit together, and
the retrieval figures compare the two stores' full-text search on the same queries; none
of it is a model's score.

Those cases are easy (every figure is 1.00 on both stores), so a second part measures the
stores' search alone, with no model and no policy: a fixed bilingual history (``HISTORY``:
74 English and Indonesian messages in 16 sessions over four weeks, with inflected and
derived forms, links, e-mail addresses and near-miss distractors) is written into a new
SQLite file and a new Postgres person alike, and each probe (``PROBES``: 26 EN, 27 ID,
each naming the messages a good recall finds) goes through ``AsyncStore.recall`` at a
fixed now. It prints hit@1, hit@5 and MRR over the recalled raw messages and, after
cutting every session into extractive segments (``refresh_segments``; here one per
session), over the recalled segments (at most 3 per recall, so hit@5 is hit@3 there),
then Postgres / SQLite, the probes whose ranks differ and those neither store finds.

What it showed (Nov 2026): Postgres trails SQLite on English (message MRR 0.82 vs 0.88)
and barely on Indonesian (0.86 vs 0.89). The gaps are two: ts_rank has no inverse document
frequency, so a line matching only a rare word ("arisan", "bumbunya") falls behind short
lines matching only a common prefix ("masak*", "rendang*"): rank 5 on Postgres, 1 on
SQLite; and 'simple' keeps accents, so "cafe" never finds "Café" on Postgres. Links,
e-mail addresses and file names are found alike since migration 4. Both stores share the
misses of the stemmer, which is English only: "masak" does not reach "memasak", "baca"
not "membaca", "swim" not "swam"; and its "-s" strip turns "kamus" into the pronoun
"kamu*" and "dinas" into the name "Dina*", whose lines then outrank the ones wanted.

A third part (``--histories``) asks of long generated histories (``bench.histories``: one
person's 20+ chats and 500+ turns in English, one in Indonesian, 40+ questions per
category, each annotated with its evidence turns), stored through the store with the
user's name as a saved fact, segments cut as the app cuts them, and every turn embedded
once per store by the bundled embedder (``--embedding-model off``: lexical only; its
vectors are kept in ``bench.vector_cache``'s folder, so each text is embedded once). Each
question goes to the real memory_search through the tool registry, once per retriever
(its recall forced to lexical, dense or hybrid), and to the store's recall for 20 turns.
It prints, per backend, language and category (and the questions an assistant's turn
answers): evidence shown in the text the model reads, beside textbook Okapi BM25
(``bench.bm25``) over the same turns at the same number of turns shown; the mean turns
shown; recall@5/10/20 and MRR of the store's ranking and of BM25's. On a Postgres
without pgvector it says "dense: n/a (no pgvector)".

    python -m bench.recall_quality
    python -m bench.recall_quality --tool-mode commands
    python -m bench.recall_quality --search-only --backend sqlite
    python -m bench.recall_quality --histories [--size small|full|long] [--backend sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, cast

import numpy

from bench import quiet_environment

quiet_environment()

from bench.bm25 import Okapi  # noqa: E402
from bench.histories import CATEGORIES, SIZES, History, Question, generate  # noqa: E402
from bench.histories import LANGUAGES as GENERATED  # noqa: E402
from bench.vector_cache import CACHE, CachedEmbedder  # noqa: E402
from config.settings import Settings  # noqa: E402
from evals.cases import Case, load_cases  # noqa: E402
from evals.results import CaseRun, EvalRun  # noqa: E402
from evals.runner import arun_suites  # noqa: E402
from memory import AsyncStore, Recollection  # noqa: E402
from memory.postgres.schema import migrate, prepare  # noqa: E402
from memory.postgres.store import PgStore  # noqa: E402
from memory.sqlite.async_store import AsyncSqliteStore  # noqa: E402
from memory.sqlite.store import SqliteStore  # noqa: E402
from providers.embeddings import Embedder, EmbeddingUnavailable, open_embedder  # noqa: E402
from tests.support.policy import scripted_model  # noqa: E402
from tests.support.postgres import APP_ROLE, PostgresServer  # noqa: E402
from tools.base import ToolContext  # noqa: E402
from tools.registry import default_registry  # noqa: E402

MEMORY_SUITE = "memory"
RECALL_TOOL = "memory_search"
LANGUAGES = {"en": "EN", "id": "ID"}
BACKENDS = ("sqlite", "postgres")
LABEL = (
    "Scripted keyword policy (tests/support/policy.py), not a model: pass rates prove the "
    "harness and the stores; retrieval compares the stores' search on the same queries."
)


@dataclass(frozen=True)
class Retrieval:
    """Whether one case's memory_search result held the facts it must recall, and where."""

    case: Case
    hit: bool
    rank: int | None  # 1-based entry of the result first holding the first fact


@dataclass(frozen=True)
class Row:
    """One language on one backend."""

    cases: int
    passed: int
    recall_cases: int
    hits: int
    mrr: float

    @property
    def pass_rate(self) -> float:
        return self.passed / self.cases if self.cases else 0.0

    @property
    def hit_rate(self) -> float:
        return self.hits / self.recall_cases if self.recall_cases else 0.0


def recall_suites() -> list[str]:
    """The suites holding the memory suite or a case that expects memory_search."""
    cases = load_cases(known_tools=default_registry().names)
    return sorted(
        {case.suite for case in cases if case.suite == MEMORY_SUITE or expects_recall(case)}
    )


def expects_recall(case: Case) -> bool:
    """True for a case whose good answer needs memory_search."""
    return any(tool.name == RECALL_TOOL for tool in case.expect.tools)


def facts(case: Case) -> list[list[str]]:
    """The expected answer phrases the seeded world holds (each a group of alternatives,
    keeping the alternatives found): what memory_search must bring back."""
    world = " ".join(
        [m.text for m in case.history] + [f"{m.key} {m.value}" for m in case.memories]
    ).casefold()
    found = []
    for wanted in case.expect.answer_contains:
        options = [wanted] if isinstance(wanted, str) else wanted
        present = [option for option in options if option.casefold() in world]
        if present:
            found.append(present)
    return found


def items(result: str) -> list[str]:
    """The entries of a memory_search result, in order: each ``- `` line with the
    indented lines under it (an excerpt's messages); headings and the label left out."""
    entries: list[str] = []
    for line in result.splitlines():
        if line.startswith("- "):
            entries.append(line)
        elif line.startswith(" ") and entries:
            entries[-1] += "\n" + line
    return entries


def retrieval(run: CaseRun) -> Retrieval:
    """Whether the turn's memory_search results held every fact, and the rank of the
    first entry holding the first fact."""
    wanted = facts(run.case)
    results = [c.result for c in run.observation.calls if c.name == RECALL_TOOL and c.ok]
    text = "\n".join(results).casefold()
    hit = bool(results) and all(any(o.casefold() in text for o in group) for group in wanted)
    first = [o.casefold() for o in wanted[0]] if wanted else []
    entries = [entry for result in results for entry in items(result.casefold())]
    rank = next(
        (n for n, entry in enumerate(entries, start=1) if any(o in entry for o in first)), None
    )
    return Retrieval(run.case, hit, rank)


def row(runs: Iterable[CaseRun], language: str) -> Row:
    """The figures of one language of one run."""
    mine = [r for r in runs if r.case.language == language]
    suite = [r for r in mine if r.case.suite == MEMORY_SUITE]
    found = [retrieval(r) for r in mine if expects_recall(r.case) and facts(r.case)]
    return Row(
        cases=len(suite),
        passed=sum(r.passed for r in suite),
        recall_cases=len(found),
        hits=sum(f.hit for f in found),
        mrr=sum(1 / f.rank for f in found if f.hit and f.rank) / len(found) if found else 0.0,
    )


async def measure(tool_mode: str, suites: Sequence[str]) -> dict[str, EvalRun]:
    """The original cases of ``suites`` on SQLite, then on a fresh, migrated Postgres."""
    model = scripted_model(tool_mode)
    runs = {"sqlite": await arun_suites(suites, model=model, paraphrases=False, progress=False)}
    with PostgresServer() as server:
        await migrate(server.admin_url, APP_ROLE)
        await prepare(server.admin_url, app_role=APP_ROLE)
        runs["postgres"] = await arun_suites(
            suites, model=model, paraphrases=False, progress=False, database_url=server.url
        )
    return runs


def _ratio(postgres: float, sqlite: float) -> str:
    return f"{postgres / sqlite:.2f}" if sqlite else "n/a"


def report(runs: dict[str, EvalRun], tool_mode: str) -> None:
    """Print the Markdown tables."""
    print(f"# Recall quality, SQLite vs Postgres ({tool_mode} tool mode)\n")
    print(f"{LABEL}\n")
    print(
        "| language | backend | memory cases | passed | pass rate | recall cases | "
        "hits | hit rate | MRR |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = {
        (language, backend): row(runs[backend].runs, language)
        for language in LANGUAGES
        for backend in BACKENDS
    }
    for (language, backend), r in rows.items():
        print(
            f"| {LANGUAGES[language]} | {backend} | {r.cases} | {r.passed} | "
            f"{r.pass_rate:.0%} | {r.recall_cases} | {r.hits} | {r.hit_rate:.0%} | "
            f"{r.mrr:.2f} |"
        )
    print("\n| language | pass rate PG/SQLite | hit rate PG/SQLite | MRR PG/SQLite |")
    print("|---|---:|---:|---:|")
    for language, name in LANGUAGES.items():
        pg, lite = rows[(language, "postgres")], rows[(language, "sqlite")]
        print(
            f"| {name} | {_ratio(pg.pass_rate, lite.pass_rate)} | "
            f"{_ratio(pg.hit_rate, lite.hit_rate)} | {_ratio(pg.mrr, lite.mrr)} |"
        )
    differing = [
        (sqlite_run.case.id, sqlite_run.passed, pg_run.passed, sqlite_run.reasons + pg_run.reasons)
        for sqlite_run, pg_run in zip(runs["sqlite"].runs, runs["postgres"].runs, strict=True)
        if sqlite_run.passed != pg_run.passed or retrieval(sqlite_run).hit != retrieval(pg_run).hit
    ]
    if differing:
        print("\nCases whose outcome differs between the backends:")
        for case_id, on_sqlite, on_postgres, reasons in differing:
            print(f"- {case_id}: SQLite {on_sqlite}, Postgres {on_postgres}: {reasons}")
    failed = {
        backend: [r.case.id for r in run.runs if not r.passed] for backend, run in runs.items()
    }
    print(f"\nFailed runs (any suite run): {failed}")


# Part 2: the stores' search on a fixed bilingual history ------------------------------

SearchStore = AsyncSqliteStore | PgStore
NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)  # Wed 25 Nov 2026, as the tests' clock
SEARCH_LABEL = (
    "The stores' full-text search on a fixed history (AsyncStore.recall, no model, no "
    "facts): the rank of the first expected message among the recalled messages, and of "
    "the first segment (extractive segments, at most 3 per recall) holding one."
)


@dataclass(frozen=True)
class Chat:
    """One seeded session: its title, when it started, and its lines a minute apart, each
    (key, role, text); keys name the lines the probes expect."""

    title: str
    start: datetime
    lines: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class Probe:
    """A question to the store and the lines a good recall brings back (any one counts)."""

    language: str
    query: str
    expected: tuple[str, ...]
    tests: str  # what makes it hard


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 10 if day > 25 else 11, day, hour, minute, tzinfo=UTC)


HISTORY = (
    Chat(
        "Weekend cooking",
        _at(31, 10),
        (
            (
                "cook-1",
                "user",
                "I cooked a big pot of chicken adobo for the family, it took almost three hours.",
            ),
            (
                "cook-2",
                "assistant",
                "Adobo sounds great! Did you use cane vinegar or regular white vinegar?",
            ),
            ("cook-3", "user", "Cane vinegar, and I added bay leaves and a lot of crushed garlic."),
            ("cook-4", "assistant", "Nice. Adobo keeps well, so there are leftovers for lunch."),
            (
                "cook-5",
                "user",
                "My sister says the recipes from her cooking class are easier than mine.",
            ),
            (
                "cook-6",
                "assistant",
                "Maybe swap recipes with her and try one of her dishes next weekend.",
            ),
        ),
    ),
    Chat(
        "Swimming lessons",
        _at(1, 16),
        (
            (
                "swim-1",
                "user",
                "My daughter started swimming lessons at the community pool on Sundays.",
            ),
            ("swim-2", "assistant", "How is she finding it so far?"),
            (
                "swim-3",
                "user",
                "She swam a whole length without the board today! The coach is called Ms. Patel.",
            ),
        ),
    ),
    Chat(
        "Liburan ke Bali",
        _at(2, 9),
        (
            (
                "bali-1",
                "user",
                "Minggu depan kami bepergian ke Bali naik pesawat pagi, lima hari di Ubud.",
            ),
            ("bali-2", "assistant", "Asyik! Sudah pesan penginapan di Ubud?"),
            (
                "bali-3",
                "user",
                "Sudah, vila kecil dekat sawah. Anak-anak mau belajar berenang di kolamnya.",
            ),
            ("bali-4", "assistant", "Jangan lupa bawa pelampung untuk anak-anak."),
            (
                "bali-5",
                "user",
                "Tiketnya dikirim dari tiket@garudaindonesia.co.id, kode booking GX7Q2.",
            ),
        ),
    ),
    Chat(
        "Resep rendang",
        _at(7, 16),
        (
            (
                "masak-1",
                "user",
                "Hari ini aku memasak rendang daging sapi untuk arisan, lima jam di atas kompor.",
            ),
            (
                "masak-2",
                "assistant",
                "Wah, rendang yang dimasak lama memang paling enak. Pakai santan segar?",
            ),
            (
                "masak-3",
                "user",
                "Iya santan segar, dan bumbunya aku ulek sendiri: cabai, bawang, jahe, lengkuas.",
            ),
            ("masak-4", "user", "Resepnya dari blog ibu Sari: masakansari.com/rendang-padang-asli"),
            ("masak-5", "assistant", "Simpan resepnya biar gampang dicari lagi."),
        ),
    ),
    Chat(
        "Books",
        _at(8, 20),
        (
            (
                "book-1",
                "user",
                "I finished reading The Remains of the Day, such a quiet sad novel.",
            ),
            ("book-2", "assistant", "Ishiguro is great at that. What did you think of Stevens?"),
            (
                "book-3",
                "user",
                "He breaks my heart. Next I want something lighter, maybe a mystery.",
            ),
            (
                "book-4",
                "assistant",
                "Try The Thursday Murder Club by Richard Osman: cosy and funny.",
            ),
            (
                "book-5",
                "user",
                "I also bought two cookbooks at the market: Filipino stews and baking bread.",
            ),
        ),
    ),
    Chat(
        "Trip planning",
        _at(9, 12),
        (
            (
                "trip-1",
                "user",
                "We're traveling to Kyoto in March; I booked the flights on Japan Airlines.",
            ),
            ("trip-2", "assistant", "Lovely. Cherry blossom season should start late March."),
            ("trip-3", "user", "My passport expires in April, so I need to renew it before we go."),
            (
                "trip-4",
                "user",
                "The ryokan confirmation came from bookings@kyoto-ryokan.jp, reference KY-4471.",
            ),
        ),
    ),
    Chat(
        "Olahraga",
        _at(12, 6, 30),
        (
            ("olah-1", "user", "Pagi ini aku berenang dua puluh putaran di kolam renang kantor."),
            ("olah-2", "assistant", "Mantap! Gaya apa yang paling sering kamu pakai?"),
            (
                "olah-3",
                "user",
                "Gaya bebas. Pelatih renangku namanya Pak Joko, nomornya 0812-3456-7890.",
            ),
            ("olah-4", "user", "Bahuku agak pegal setelah latihan, mungkin terlalu semangat."),
            ("olah-5", "assistant", "Istirahat dulu, semoga bahu kamu cepat pulih."),
        ),
    ),
    Chat(
        "Running plans",
        _at(14, 7),
        (
            ("run-1", "user", "Went running along the river this morning, 8 km in 45 minutes."),
            ("run-2", "assistant", "Solid pace! Are you training for the city half marathon?"),
            (
                "run-3",
                "user",
                "Yes, the race is on 13 December. My knees hurt after long runs though.",
            ),
            ("run-4", "assistant", "Ice after runs, and add some strength work for the knees."),
            (
                "run-5",
                "user",
                "My physio is Dr. Hana Wijaya, her email is "
                "hana.wijaya@physiofit.co.id if I need to reschedule.",
            ),
        ),
    ),
    Chat(
        "Bacaan",
        _at(15, 21),
        (
            ("baca-1", "user", "Aku lagi membaca novel Laskar Pelangi, sudah bab sepuluh."),
            ("baca-2", "assistant", "Karya Andrea Hirata ya. Bagian mana yang paling berkesan?"),
            (
                "baca-3",
                "user",
                "Waktu Lintang bersepeda jauh ke sekolah. Bacaan yang bikin terharu.",
            ),
            ("baca-4", "user", "Aku juga pinjam buku-buku masakan dari perpustakaan kota."),
        ),
    ),
    Chat(
        "Work links",
        _at(17, 14),
        (
            (
                "work-1",
                "user",
                "Here is the design doc for the billing migration: "
                "https://docs.example.com/billing-migration-v2",
            ),
            ("work-2", "assistant", "Got it. Should I summarise the rollout section?"),
            (
                "work-3",
                "user",
                "Later. The deadline moved to 4 December, and Marco is the reviewer.",
            ),
            (
                "work-4",
                "user",
                "Also save the dashboard: grafana.internal/d/latency-p99 shows "
                "the checkout latency.",
            ),
            ("work-5", "assistant", "Noted: the p99 checkout latency dashboard is on Grafana."),
            ("work-6", "user", "The numbers are in q4_budget_final.xlsx on the shared drive."),
        ),
    ),
    Chat(
        "Kantor",
        _at(18, 10),
        (
            (
                "kantor-1",
                "user",
                "Rapat anggaran dipindah ke Jumat, notulennya ada di "
                "drive.kantor.id/rapat/anggaran-2027.",
            ),
            ("kantor-2", "assistant", "Baik, aku catat: rapat anggaran hari Jumat."),
            (
                "kantor-3",
                "user",
                "Teman kantorku, Rina, baru pulang dari Kamboja dan bawa oleh-oleh kopi.",
            ),
            ("kantor-4", "user", "Kirim laporan ke budi.santoso@kantor.id sebelum jam lima."),
            ("kantor-5", "user", "Dina dari keuangan minta salinan laporan itu juga."),
        ),
    ),
    Chat(
        "Masak malam",
        _at(19, 19, 30),
        (
            ("soto-1", "user", "Malam ini masak soto ayam buat makan malam keluarga."),
            ("soto-2", "assistant", "Soto ayam cocok buat cuaca hujan. Pakai koya?"),
            ("soto-3", "user", "Pakai koya dan sambal, anak-anak nambah dua kali."),
            ("soto-4", "user", "Masakan minggu depan mau coba gulai kambing."),
        ),
    ),
    Chat(
        "Dinner party",
        _at(20, 19),
        (
            (
                "party-1",
                "user",
                "We hosted a dinner party tonight; my friend Leo did all the "
                "cooking and I just washed the dishes.",
            ),
            ("party-2", "assistant", "Sounds like a fair deal! What did Leo make?"),
            (
                "party-3",
                "user",
                "Lamb kebabs and a yogurt sauce. I want to learn to make that sauce.",
            ),
            (
                "party-4",
                "assistant",
                "It's easy: yogurt, grated cucumber, garlic, mint, salt and lemon.",
            ),
        ),
    ),
    Chat(
        "Perjalanan dinas",
        _at(21, 8),
        (
            ("dinas-1", "user", "Bulan depan aku pergi dinas ke Surabaya tiga hari."),
            ("dinas-2", "assistant", "Perlu aku ingatkan untuk pesan hotel?"),
            ("dinas-3", "user", "Iya, dan ingatkan bawa charger laptop, terakhir ketinggalan."),
        ),
    ),
    Chat(
        "Makan siang",
        _at(24, 12),
        (
            (
                "siang-1",
                "user",
                "Tadi siang makan di warung padang dekat stasiun, rendangnya alot.",
            ),
            ("siang-2", "assistant", "Sayang sekali. Rendang buatanmu sendiri pasti lebih empuk."),
            (
                "siang-3",
                "user",
                "Sore ini aku pergi ke toko buku, beli kamus bahasa Jepang "
                "untuk persiapan ke Kyoto.",
            ),
            ("siang-4", "assistant", "Bagus, kamus itu akan berguna di perjalanan."),
        ),
    ),
    Chat(
        "Evening",
        _at(24, 18),
        (
            (
                "eve-1",
                "user",
                "Bought new running shoes today, the Asics Novablast, they feel bouncy.",
            ),
            (
                "eve-2",
                "assistant",
                "Great choice for long runs. Break them in on shorter ones first.",
            ),
            ("eve-3", "user", "And I baked banana bread with the overripe bananas."),
            ("eve-4", "assistant", "Perfect use for them. Did you add walnuts?"),
            ("eve-5", "user", "No, chocolate chips; the kids ate half of it already."),
            ("eve-6", "user", "Before the shoe shop I had coffee with Ana at Café Kopitiam."),
        ),
    ),
)

PROBES = (
    Probe("en", "What did I cook for the family?", ("cook-1",), "cooked; cooking distractors"),
    Probe("en", "when was I cooking adobo", ("cook-1",), "cooking -> cooked"),
    Probe("en", "what vinegar did I use in the adobo", ("cook-3",), "distractor repeats words"),
    Probe("en", "what recipe does my sister have", ("cook-5",), "plural recipes"),
    Probe("en", "which cookbook did I buy", ("book-5",), "plural cookbooks"),
    Probe("en", "what novel did I read", ("book-1",), "read -> reading"),
    Probe("en", "What did Leo cook?", ("party-3",), "words only in distractors"),
    Probe("en", "what kebab sauce did Leo make", ("party-3", "party-4"), "plural kebabs"),
    Probe("en", "how far did I run along the river", ("run-1",), "run -> running"),
    Probe("en", "my knee hurts after a long run", ("run-3",), "plural knees, runs"),
    Probe("en", "physiofit", ("run-5",), "word inside an email"),
    Probe("en", "the billing migration doc", ("work-1",), "words inside a link"),
    Probe("en", "where is the latency dashboard", ("work-4", "work-5"), "link"),
    Probe("en", "what was the deadline we discussed last week", ("work-3",), "last week"),
    Probe("en", "what did I eat last week", ("party-3",), "time only: window fallback"),
    Probe("en", "where is q4_budget_final", ("work-6",), "file name with underscores"),
    Probe("en", "KY-4471", ("trip-4",), "a booking code"),
    Probe("en", "swimming lessons for my daughter", ("swim-1",), "easy"),
    Probe("en", "did she swim a whole length", ("swim-3",), "swim -> swam (irregular)"),
    Probe("en", "when are we travelling to Kyoto", ("trip-1",), "travelling vs traveling"),
    Probe("en", "passport renewal", ("trip-3",), "renewal -> renew"),
    Probe("en", "ryokan booking reference", ("trip-4",), "bookings@ in an email"),
    Probe("en", "what did I bake yesterday", ("eve-3",), "bake -> baked, yesterday"),
    Probe("en", "the shoes I bought yesterday", ("eve-1",), "yesterday"),
    Probe("en", "which cafe did I go to", ("eve-6",), "cafe vs Café (accent)"),
    Probe("en", "what dessert did I make for the kids", ("eve-3", "eve-5"), "distractor: make"),
    Probe("id", "aku masak apa untuk arisan?", ("masak-1",), "masak vs memasak"),
    Probe("id", "kapan aku memasak rendang", ("masak-1",), "rendang in many lines"),
    Probe("id", "masakan apa yang aku buat minggu lalu", ("soto-1",), "minggu lalu; masakan"),
    Probe("id", "resep rendang dari blog siapa", ("masak-4",), "resep -> resepnya; link"),
    Probe("id", "masakansari", ("masak-4",), "word inside a link"),
    Probe("id", "bumbu rendang apa saja", ("masak-3",), "bumbu -> bumbunya"),
    Probe("id", "kapan kami bepergian ke Bali", ("bali-1",), "easy"),
    Probe("id", "aku pergi ke mana kemarin", ("siang-3",), "kemarin; pergi"),
    Probe("id", "berapa putaran aku berenang", ("olah-1",), "easy"),
    Probe("id", "siapa pelatih renang aku", ("olah-3",), "renang -> renangku"),
    Probe("id", "anak-anak mau belajar renang di mana", ("bali-3",), "renang vs berenang"),
    Probe("id", "novel apa yang sedang aku baca", ("baca-1",), "baca vs membaca"),
    Probe("id", "buku apa yang aku pinjam dari perpustakaan", ("baca-4",), "buku-buku"),
    Probe("id", "kamus apa yang aku beli", ("siang-3",), "kamus (stem: kamu)"),
    Probe("id", "email tiket pesawat ke Bali", ("bali-5",), "tiket@ in an email"),
    Probe("id", "garudaindonesia", ("bali-5",), "word inside an email"),
    Probe("id", "notulen rapat anggaran", ("kantor-1",), "notulen -> notulennya"),
    Probe("id", "alamat email budi", ("kantor-4",), "name inside an email"),
    Probe("id", "oleh-oleh dari Kamboja", ("kantor-3",), "hyphenated"),
    Probe("id", "kapan mau masak gulai kambing", ("soto-4",), "kambing (stem: kamb)"),
    Probe("id", "rendang di warung padang kemarin", ("siang-1",), "kemarin; rendangnya"),
    Probe("id", "soto ayam pakai apa", ("soto-3",), "distractor repeats words"),
    Probe("id", "bahu aku pegal setelah apa", ("olah-4",), "bahu -> bahuku"),
    Probe("id", "dinas ke Surabaya berapa hari", ("dinas-1",), "easy"),
    Probe("id", "perjalanan dinas", ("dinas-1",), "dinas -> dina* (a name)"),
    Probe("id", "kamus", ("siang-3", "siang-4"), "kamus -> kamu* (a pronoun)"),
    Probe("id", "nomor 0812 punya siapa", ("olah-3",), "digits of a phone number"),
)


@dataclass(frozen=True)
class Ranks:
    """Where one probe's expected lines came in one backend's recall (1-based, None if not)."""

    message: int | None
    segment: int | None


@dataclass(frozen=True)
class SearchRow:
    """hit@1, hit@5 and MRR of one language on one backend, over messages and segments."""

    probes: int
    message: tuple[float, float, float]
    segment: tuple[float, float, float]


def line_keys() -> dict[str, str]:
    """Every seeded line's key and text (keys are unique)."""
    keys = {key: text for chat in HISTORY for key, _, text in chat.lines}
    if len(keys) != sum(len(chat.lines) for chat in HISTORY):
        raise ValueError("a line key is used twice in HISTORY")
    return keys


async def say(store: SearchStore, session_id: str, role: str, text: str, at: datetime) -> int:
    """Store a line said at ``at``; its id."""
    if isinstance(store, AsyncSqliteStore):
        said = await store.write(lambda s: s.add_message(session_id, role, text, created_at=at))
    else:
        said = await store.add_message(session_id, role, text, created_at=at)
    return said.id


async def seed(store: SearchStore) -> dict[int, str]:
    """Write HISTORY into ``store``; stored id -> line key."""
    keys: dict[int, str] = {}
    for chat in HISTORY:
        session = await store.create_session(chat.title)
        for minute, (key, role, text) in enumerate(chat.lines):
            at = chat.start + timedelta(minutes=minute)
            keys[await say(store, session.id, role, text, at)] = key
    return keys


async def probe_ranks(
    store: SearchStore, keys: dict[int, str], *, segments: bool
) -> dict[Probe, int | None]:
    """Each probe's rank among the recalled messages, or (``segments``) among the recalled
    segments (a segment holds a line when its id range covers it)."""
    ids = {key: message_id for message_id, key in keys.items()}
    ranks: dict[Probe, int | None] = {}
    for probe in PROBES:
        found = await store.recall(
            probe.query, now=NOW, tz="UTC", session_id=None, question_id=None
        )
        wanted = {ids[key] for key in probe.expected}
        if segments:
            held = [
                any(e.segment.start_message_id <= i <= e.segment.end_message_id for i in wanted)
                for e in found.segments
            ]
        else:
            held = [r.message.id in wanted for r in found.turns]
        ranks[probe] = next((n for n, ok in enumerate(held, start=1) if ok), None)
    return ranks


async def search_backend(store: SearchStore) -> dict[Probe, Ranks]:
    """Seed ``store``, run the probes over raw messages, then cut segments and run them again."""
    keys = await seed(store)
    on_messages = await probe_ranks(store, keys, segments=False)
    for session in await store.list_sessions():
        await store.refresh_segments(session.id, None, force=True, tz="UTC")
    on_segments = await probe_ranks(store, keys, segments=True)
    return {probe: Ranks(on_messages[probe], on_segments[probe]) for probe in PROBES}


async def measure_search(backends: Sequence[str] = BACKENDS) -> dict[str, dict[Probe, Ranks]]:
    """The probes on a fresh SQLite file and on a new person of a fresh Postgres."""
    results: dict[str, dict[Probe, Ranks]] = {}
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as home:
            lite = AsyncSqliteStore(SqliteStore.open_home(Path(home), clock=lambda: NOW))
            try:
                results["sqlite"] = await search_backend(lite)
            finally:
                await lite.close()
    if "postgres" not in backends:
        return results
    with PostgresServer() as server:
        await migrate(server.admin_url, APP_ROLE)
        pg = await PgStore.open(server.url, "recall-bench", clock=lambda: NOW)
        try:
            results["postgres"] = await search_backend(pg)
        finally:
            await pg.close()
    return results


def scores(ranks: Sequence[int | None]) -> tuple[float, float, float]:
    """hit@1, hit@5 and MRR of some ranks."""
    if not ranks:
        return 0.0, 0.0, 0.0
    return (
        sum(r == 1 for r in ranks) / len(ranks),
        sum(r is not None and r <= 5 for r in ranks) / len(ranks),
        sum(1 / r for r in ranks if r) / len(ranks),
    )


def search_row(ranks: dict[Probe, Ranks], language: str) -> SearchRow:
    """The figures of one language on one backend."""
    mine = [r for probe, r in ranks.items() if probe.language == language]
    return SearchRow(
        probes=len(mine),
        message=scores([r.message for r in mine]),
        segment=scores([r.segment for r in mine]),
    )


def _rank(rank: int | None) -> str:
    return str(rank) if rank else "-"


def report_search(results: dict[str, dict[Probe, Ranks]]) -> None:
    """Print the search tables and the probes on which the backends differ."""
    print("\n# Store search, SQLite FTS5/BM25 vs Postgres tsvector/ts_rank (no model)\n")
    print(f"{SEARCH_LABEL}\n")
    print(
        f"History: {sum(len(c.lines) for c in HISTORY)} messages in {len(HISTORY)} sessions; "
        f"probes: {sum(p.language == 'en' for p in PROBES)} EN, "
        f"{sum(p.language == 'id' for p in PROBES)} ID.\n"
    )
    print(
        "| language | backend | probes | msg hit@1 | msg hit@5 | msg MRR | "
        "segment hit@1 | segment hit@5 | segment MRR |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = {
        (language, backend): search_row(results[backend], language)
        for language in LANGUAGES
        for backend in results
    }
    for (language, backend), r in rows.items():
        figures = " | ".join(f"{x:.2f}" for x in (*r.message, *r.segment))
        print(f"| {LANGUAGES[language]} | {backend} | {r.probes} | {figures} |")
    if set(results) == set(BACKENDS):
        compare_search(results, rows)
    missed = [
        f"[{LANGUAGES[p.language]}] {p.query!r} ({p.tests})"
        for p in PROBES
        if all(ranks[p].message is None for ranks in results.values())
    ]
    print(f"\nProbes whose expected message no backend ({', '.join(results)}) recalled:")
    for line in missed:
        print(f"- {line}")


def compare_search(
    results: dict[str, dict[Probe, Ranks]], rows: dict[tuple[str, str], SearchRow]
) -> None:
    """Print Postgres / SQLite for each figure and the probes whose ranks differ."""
    print(
        "\n| language | msg hit@1 PG/SQLite | msg hit@5 PG/SQLite | msg MRR PG/SQLite | "
        "segment hit@1 PG/SQLite | segment hit@5 PG/SQLite | segment MRR PG/SQLite |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for language, name in LANGUAGES.items():
        pg, lite = rows[(language, "postgres")], rows[(language, "sqlite")]
        pairs = zip((*pg.message, *pg.segment), (*lite.message, *lite.segment), strict=True)
        print(f"| {name} | " + " | ".join(_ratio(p, s) for p, s in pairs) + " |")
    print(
        "\nProbes whose rank differs between the backends "
        "(message rank, segment rank; - = not found):"
    )
    for probe in PROBES:
        lite_r, pg_r = results["sqlite"][probe], results["postgres"][probe]
        if lite_r != pg_r:
            print(
                f"- [{LANGUAGES[probe.language]}] {probe.query!r} ({probe.tests}): SQLite "
                f"{_rank(lite_r.message)}, {_rank(lite_r.segment)}; Postgres "
                f"{_rank(pg_r.message)}, {_rank(pg_r.segment)}"
            )


# Part 3: generated long histories (bench.histories), the tool against BM25 ------------

Retriever = Literal["lexical", "dense", "hybrid"]
HISTORY_LABEL = (
    "Each question goes to the real memory_search (tools.registry) with the retriever "
    "forced; evidence shown = the share of its evidence turns whose text is in what the "
    "model reads (multi-hop: the fraction of its two turns shown, averaged); turns shown "
    "= distinct history turns in that text; BM25 = textbook Okapi BM25 over the same "
    "turns, its top n at the tool's n turns shown for the same question. R@k (fraction "
    "of evidence in the first k) and MRR (first evidence turn) rank the store's recall "
    "itself; the BM25 row ranks BM25's."
)
SLICES = (*CATEGORIES, "assistant's turn", "all")
RETRIEVERS: tuple[Retriever, ...] = ("lexical", "dense", "hybrid")
EMBED_BATCH = 64  # turns per embedder call
RANKED = 20  # turns asked of recall for R@k and MRR


@dataclass(frozen=True)
class Outcome:
    """One question asked of one retriever: what the model read and where evidence ranked."""

    question: Question
    said_by_assistant: bool  # an evidence turn is the assistant's
    shown: float  # share of evidence turns in the tool's text
    turns_shown: int
    bm25_shown: float  # share of evidence turns in BM25's first ``turns_shown``
    ranks: tuple[int | None, ...]  # each evidence turn's 1-based rank in the recall


@dataclass
class Moment:
    """A settable clock: the store stamps each chat with its own start."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


class Forced:
    """The store as memory_search sees it, every recall made with one retriever."""

    def __init__(self, store: SearchStore, retriever: Retriever) -> None:
        self.store, self.retriever = store, retriever

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def recall(self, query: str, **kwargs: Any) -> Recollection:
        return await self.store.recall(query, **(kwargs | {"mode": self.retriever}))


def normal(text: str) -> str:
    """Text as memory_search prints it: runs of whitespace made one space."""
    return " ".join(text.split())


async def write_history(store: SearchStore, history: History, clock: Moment) -> list[int]:
    """Store the history (each chat a session started at its time, the user's name a
    saved fact); each turn's message id."""
    await store.create_memory("identity", "name", history.name)
    ids: list[int] = []
    for number, chat in enumerate(history.chats):
        clock.now = chat.start
        session = await store.create_session(chat.title)
        for turn in history.turns:
            if turn.chat == number:
                ids.append(await say(store, session.id, turn.speaker, turn.text, turn.at))
    clock.now = history.now
    while await store.catch_up_segments(None, tz="UTC"):
        pass
    return ids


def recalled(found: Recollection) -> list[int]:
    """The message ids of the recalled turns, best first."""
    return [r.message.id for r in found.turns]


@dataclass
class Asking:
    """One stored history, ready for questions: its turns' message ids, BM25 over its turns,
    and the embedder with every question's vector (None: lexical only)."""

    store: SearchStore
    history: History
    ids: list[int]
    okapi: Okapi
    embedder: Embedder | None = None
    vectors: dict[str, numpy.ndarray] = field(default_factory=dict)

    def outcome(self, question: Question, order: list[int], shown: set[str]) -> Outcome:
        """What one question got: ``order`` the turns recalled, ``shown`` the texts read."""
        turns, evidence = self.history.turns, question.evidence
        best = self.okapi.rank(question.text)[: len(shown)]
        return Outcome(
            question=question,
            said_by_assistant=any(turns[i].speaker == "assistant" for i in evidence),
            shown=sum(normal(turns[i].text) in shown for i in evidence) / len(evidence),
            turns_shown=len(shown),
            bm25_shown=sum(i in best for i in evidence) / len(evidence),
            ranks=tuple(order.index(i) + 1 if i in order else None for i in evidence),
        )

    def bm25(self) -> list[Outcome]:
        """BM25's own ranks for every question (nothing is shown: a ranking only)."""
        return [self.outcome(q, self.okapi.rank(q.text), set()) for q in self.history.questions]

    async def ask(self, retriever: Retriever) -> list[Outcome]:
        """Every question through memory_search and the store's recall, ``retriever`` forced."""
        registry = default_registry()
        settings = Settings(home=Path(tempfile.gettempdir()), timezone="UTC")
        store = cast(AsyncStore, Forced(self.store, retriever))
        embedder = self.embedder if retriever != "lexical" else None
        ctx = ToolContext(settings, store, clock=lambda: self.history.now, embedder=embedder)
        texts = {normal(turn.text) for turn in self.history.turns}
        turn_of = {message_id: index for index, message_id in enumerate(self.ids)}
        outcomes = []
        for question in self.history.questions:
            result = await registry.execute(RECALL_TOOL, {"query": question.text}, ctx)
            read = registry.format_result(RECALL_TOOL, result)
            found = await store.recall(
                question.text,
                now=self.history.now,
                tz="UTC",
                session_id=None,
                question_id=None,
                vector=self.vectors.get(question.text) if embedder else None,
                vector_model=embedder.model if embedder else None,
                turns=RANKED,
            )
            order = [turn_of[i] for i in recalled(found) if i in turn_of]
            outcomes.append(self.outcome(question, order, {t for t in texts if t in read}))
        return outcomes


@dataclass(frozen=True)
class Run:
    """One history on one backend: outcomes by retriever (and "BM25"), and the embedding."""

    outcomes: dict[str, list[Outcome]]
    embedding: str  # how long embedding the turns took, or why dense recall is n/a


async def embed(store: SearchStore, embedder: Embedder) -> int:
    """Give every stored turn its vector (EMBED_BATCH at a time); how many have one."""
    model = embedder.model
    while rows := await store.unembedded(model, EMBED_BATCH):
        vectors = await asyncio.to_thread(embedder.passages, [text for _, text in rows])
        await store.add_vectors(model, [(i, v) for (i, _), v in zip(rows, vectors, strict=True)])
    embedded, _ = await store.vector_status(model)
    return embedded


async def bench_history(
    store: SearchStore, history: History, clock: Moment, embedder: Embedder | None
) -> Run:
    """Write ``history`` into a new store (``clock`` is its clock), embed its turns, and
    ask every question of each retriever (only lexical when dense recall cannot run)."""
    ids = await write_history(store, history, clock)
    asking = Asking(store, history, ids, Okapi([turn.text for turn in history.turns]))
    outcomes = {"BM25": asking.bm25()}
    note = "dense: n/a (embeddings off)"
    if embedder is not None:
        started = time.perf_counter()
        try:
            embedded = await embed(store, embedder)
            asking.vectors = {q.text: embedder.query(q.text) for q in history.questions}
        except EmbeddingUnavailable as error:
            embedded, note = 0, f"dense: n/a ({error})"
        else:
            seconds = time.perf_counter() - started
            missing = "no pgvector" if isinstance(store, PgStore) else "no vector index"
            note = (
                f"{embedded} turns and {len(history.questions)} questions embedded by "
                f"{embedder.model} in {seconds:.1f} s"
                if embedded
                else f"dense: n/a ({missing})"
            )
        asking.embedder = embedder if embedded else None
    for retriever in RETRIEVERS if asking.embedder else ("lexical",):
        outcomes[retriever] = await asking.ask(retriever)
    return Run(outcomes, note)


def in_slice(outcome: Outcome, name: str) -> bool:
    """True when the outcome's question belongs to the table's slice ``name``."""
    if name == "all":
        return True
    if name == "assistant's turn":
        return outcome.said_by_assistant
    return outcome.question.category == name


@dataclass(frozen=True)
class Figures:
    """One slice of one retriever's outcomes, averaged."""

    questions: int
    shown: float
    turns_shown: float
    bm25_shown: float
    recall: tuple[float, float, float]  # @5, @10, @20
    mrr: float


def figures(outcomes: Sequence[Outcome]) -> Figures:
    """The means of ``outcomes`` (all zero when there are none)."""
    n = len(outcomes) or 1

    def at(k: int) -> float:
        return (
            sum(sum(r is not None and r <= k for r in o.ranks) / len(o.ranks) for o in outcomes) / n
        )

    return Figures(
        questions=len(outcomes),
        shown=sum(o.shown for o in outcomes) / n,
        turns_shown=sum(o.turns_shown for o in outcomes) / n,
        bm25_shown=sum(o.bm25_shown for o in outcomes) / n,
        recall=(at(5), at(10), at(20)),
        mrr=sum(1 / min(r for r in o.ranks if r) if any(o.ranks) else 0.0 for o in outcomes) / n,
    )


async def measure_histories(
    size: str, backends: Sequence[str], embedder: Embedder | None
) -> dict[tuple[str, str], Run]:
    """Every language's history on each backend, by (backend, language)."""
    results: dict[tuple[str, str], Run] = {}
    histories = {language: generate(language, size=size) for language in GENERATED}
    if "sqlite" in backends:
        for language, history in histories.items():
            with tempfile.TemporaryDirectory() as home:
                clock = Moment(NOW)
                lite = AsyncSqliteStore(SqliteStore.open_home(Path(home), clock=clock))
                try:
                    results[("sqlite", language)] = await bench_history(
                        lite, history, clock, embedder
                    )
                finally:
                    await lite.close()
    if "postgres" in backends:
        with PostgresServer() as server:
            await migrate(server.admin_url, APP_ROLE)
            for language, history in histories.items():
                clock = Moment(NOW)
                pg = await PgStore.open(server.url, f"history-{language}", clock=clock)
                try:
                    results[("postgres", language)] = await bench_history(
                        pg, history, clock, embedder
                    )
                finally:
                    await pg.close()
    return results


def _pct(value: float) -> str:
    return f"{value:.0%}"


def shown_in(outcomes: Sequence[Outcome], name: str) -> float:
    """Evidence shown, in points, for the questions of slice ``name``."""
    return 100 * figures([o for o in outcomes if in_slice(o, name)]).shown


def report_goals(results: dict[tuple[str, str], dict[str, list[Outcome]]]) -> None:
    """Print issue 21's goals for each backend's hybrid recall against lexical: +5 points
    overall, +15 on paraphrases, never below in a category, Indonesian within 5 of English."""
    print("\nHybrid against lexical, in points of evidence shown (the issue's goals):\n")
    print("| backend | language | all (≥ +5) | paraphrase (≥ +15) | worst category (≥ 0) |")
    print("|---|---|---:|---:|---:|")
    hybrid: dict[tuple[str, str], float] = {}
    for (backend, language), by_retriever in results.items():
        if "hybrid" not in by_retriever:
            continue
        new, old = by_retriever["hybrid"], by_retriever["lexical"]
        gains = {name: shown_in(new, name) - shown_in(old, name) for name in SLICES}
        worst = min(CATEGORIES, key=lambda name: gains[name])
        hybrid[(backend, language)] = shown_in(new, "all")
        print(
            f"| {backend} | {LANGUAGES[language]} | {gains['all']:+.1f} | "
            f"{gains['paraphrase']:+.1f} | {gains[worst]:+.1f} ({worst}) |"
        )
    for backend in BACKENDS:
        if (backend, "en") in hybrid and (backend, "id") in hybrid:
            gap = hybrid[(backend, "id")] - hybrid[(backend, "en")]
            print(f"\n{backend}: hybrid's evidence shown, Indonesian − English: {gap:+.1f} points")


def report_histories(runs: dict[tuple[str, str], Run], size: str) -> None:
    """Print the summary table (evidence shown by category) and the detail table."""
    print(f"\n# Recall on generated histories (bench.histories, size {size})\n")
    print(f"{HISTORY_LABEL}\n")
    for (backend, language), run in runs.items():
        questions = len(run.outcomes["BM25"])
        print(f"- {backend} {LANGUAGES[language]}: {questions} questions; {run.embedding}")
    results = {where: run.outcomes for where, run in runs.items()}
    print("\nEvidence shown at the tool's budget (BM25 at the same number of turns in brackets):\n")
    print("| backend | language | retriever | " + " | ".join(SLICES) + " | turns shown |")
    print("|---|---|---|" + "---:|" * (len(SLICES) + 1))
    for (backend, language), by_retriever in results.items():
        for retriever, outcomes in by_retriever.items():
            if retriever == "BM25":
                continue
            cells = []
            for name in SLICES:
                f = figures([o for o in outcomes if in_slice(o, name)])
                cells.append(f"{_pct(f.shown)} ({_pct(f.bm25_shown)})")
            mean = figures(outcomes).turns_shown
            print(
                f"| {backend} | {LANGUAGES[language]} | {retriever} | "
                + " | ".join(cells)
                + f" | {mean:.1f} |"
            )
    report_goals(results)
    print("\nRanking (the store's recall; BM25's own ranking in its rows):\n")
    print(
        "| backend | language | slice | retriever | questions | shown | turns shown | "
        "BM25 same n | R@5 | R@10 | R@20 | MRR |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (backend, language), by_retriever in results.items():
        for name in SLICES:
            for retriever, outcomes in by_retriever.items():
                f = figures([o for o in outcomes if in_slice(o, name)])
                tool = retriever != "BM25"
                shown = (
                    (_pct(f.shown), f"{f.turns_shown:.1f}", _pct(f.bm25_shown))
                    if tool
                    else ("", "", "")
                )
                recall = " | ".join(_pct(r) for r in f.recall)
                print(
                    f"| {backend} | {LANGUAGES[language]} | {name} | {retriever} | {f.questions} | "
                    + " | ".join(shown)
                    + f" | {recall} | {f.mrr:.2f} |"
                )


def main(argv: list[str] | None = None) -> None:
    """Run both backends and print the tables: the evals, then the store search."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool-mode", choices=["native", "commands"], default="native")
    parser.add_argument(
        "--search-only", action="store_true", help="only the store search on the fixed history"
    )
    parser.add_argument(
        "--histories", action="store_true", help="only the generated histories (bench.histories)"
    )
    parser.add_argument("--size", choices=sorted(SIZES), default="full", help="with --histories")
    parser.add_argument(
        "--backend",
        choices=[*BACKENDS, "both"],
        default="both",
        help="for the store search and the histories (the evals run on both)",
    )
    parser.add_argument(
        "--embedding-model", default="local", help="with --histories: 'local' or 'off'"
    )
    parser.add_argument(
        "--no-vector-cache", action="store_true", help=f"embed every text again (not {CACHE})"
    )
    args = parser.parse_args(argv)
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    if args.histories:
        embedder = open_embedder(Settings(embedding_model=args.embedding_model))
        if embedder is not None and not args.no_vector_cache:
            embedder = CachedEmbedder(embedder)
        measured = measure_histories(args.size, backends, embedder)
        report_histories(asyncio.run(measured), args.size)
        return
    if not args.search_only:
        report(asyncio.run(measure(args.tool_mode, recall_suites())), args.tool_mode)
    report_search(asyncio.run(measure_search(backends)))


if __name__ == "__main__":
    main()
