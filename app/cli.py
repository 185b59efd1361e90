"""The ``companion`` command: serve the app, chat in the terminal, manage the people of a
home (or of the shared Postgres database), make that database's schema, run evals, print
the graph.

Heavy imports (gradio, langchain, deepeval) happen inside the sub-commands, so
``companion --help`` stays instant.

A known failure is one line on stderr and an exit code, never a traceback (that goes to
the log file; ``--log-level debug`` shows it on stderr too): 2 when what the command was
given is wrong (an unknown flag, a bad setting from a flag, the environment or Settings,
no chat model chosen, a refused name or password), 1 when it ran and something it needs
failed (the provider, a database that is down or not migrated, a check of ``doctor`` or
``db migrate``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from config.settings import PROVIDERS, TOOL_MODES, ConfigError

if TYPE_CHECKING:
    from graph.events import ConfirmationAsked, Decision
    from memory import Accounts, AsyncStore

BANNER_LOCAL = (
    "the small bundled model: it chats, does sums and plays the persona, but can't search the "
    "web, check the weather, remember you or draw — choose a capable model in Settings (run "
    "`companion`), which offers a model server running here (Ollama, LM Studio, llama.cpp)"
)
USAGE, FAILED = 2, 1  # the exit codes of a known failure (the module's docstring)

log = logging.getLogger("companion.cli")


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
NO_PSYCOPG = (
    "a Postgres database needs psycopg, which is not installed: "
    "install Companion with its postgres extra (companion[postgres])"
)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        dest="log_level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=argparse.SUPPRESS,
        help="what reaches stderr (default WARNING; the log file always gets INFO)",
    )
    # SUPPRESS: a sub-command's unset option must not overwrite the same option given
    # before the sub-command (``companion --home H chat``).
    hide = argparse.SUPPRESS
    parser.add_argument("--home", default=hide, help="folder for companion.db and media/")
    parser.add_argument("--provider", default=hide, choices=PROVIDERS)
    parser.add_argument("--base-url", dest="base_url", default=hide, help="OpenAI-compatible URL")
    parser.add_argument("--model", dest="chat_model", default=hide, help="chat model name")
    parser.add_argument("--vision-model", dest="vision_model", default=hide, help="vision model")
    parser.add_argument("--tool-mode", dest="tool_mode", default=hide, choices=TOOL_MODES)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    parser = argparse.ArgumentParser(
        prog="companion",
        description="A tool-driven chat companion. With no sub-command, serve the web app.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    _common(parser)
    sub = parser.add_subparsers(dest="command")
    _chat_parser(sub)
    _eval_parser(sub)
    sub.add_parser("graph", help="print the compiled graph as Mermaid text")
    doctor = sub.add_parser("doctor", help="check the set-up and say how to fix what fails")
    _common(doctor)
    _people_parsers(sub)
    undo_sql = sub.add_parser(
        "undo-sql", help="undo the last memory_sql edit (run it again to go further back)"
    )
    _common(undo_sql)
    _person_option(undo_sql)
    memory = sub.add_parser("memory", help="recall's vector index")
    memory_sub = memory.add_subparsers(dest="memory_command", required=True)
    reindex = memory_sub.add_parser(
        "reindex",
        help="embed every message that has no vector of the embedding model yet "
        "(a changed model re-embeds all; Ctrl-C stops, run it again to resume)",
    )
    _common(reindex)
    _person_option(reindex)
    imports = sub.add_parser(
        "import",
        help="bring conversations from ChatGPT's or Claude's export (the zip or its "
        "conversations.json), Open WebUI's chat export or Companion's own export (its "
        "memories too); importing again adds nothing",
    )
    imports.add_argument("path", metavar="PATH", help="the export file")
    _common(imports)
    _person_option(imports)
    export = sub.add_parser(
        "export",
        help="write all of a person's data to a new zip: chats (JSON and Markdown), memories, "
        "segments, images and settings without secrets; `companion import` reads it back",
    )
    export.add_argument("path", metavar="PATH", help="the zip to write (a new file)")
    _common(export)
    _person_option(export)
    forget = sub.add_parser(
        "forget",
        help="delete all the data of this home's one person (no accounts): chats, memories, "
        "segments, images and settings; asks first",
    )
    forget.add_argument("--all", action="store_true", required=True, help="everything")
    _yes_option(forget)
    _common(forget)
    return parser


def _chat_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``companion chat``'s options."""
    chat = sub.add_parser("chat", help="chat in the terminal (or answer one message with -m)")
    chat.add_argument("-m", "--message", help="answer this one message and exit")
    chat.add_argument("--session", help="session id (default: a new session)")
    _person_option(chat)
    chat.add_argument(
        "--style",
        metavar="NOTE",
        help='a style note for the next message ("answer in bullet points"); it goes after '
        "the persona's identity block and never replaces it",
    )
    chat.add_argument(
        "--amend",
        action="store_true",
        help="keep the --style note for the rest of this session (go on with --session; "
        '--style "" --amend removes a kept note)',
    )
    chat.add_argument(
        "--checkpoints",
        action="store_true",
        help="record LangGraph checkpoints in HOME/checkpoints.db (debugging)",
    )
    _common(chat)


def _eval_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``companion eval``'s options."""
    evaluate = sub.add_parser("eval", help="run the scenario suites and write reports")
    evaluate.add_argument("--suite", action="append", help="suite name (repeatable; default all)")
    evaluate.add_argument(
        "--model",
        dest="eval_model",
        help="'local' (the bundled model) or a model name on the configured endpoint "
        "(default: the configured model, as `companion chat` would use it)",
    )
    evaluate.add_argument("--repeat", type=int, default=1, help="runs per case (pass^k)")
    evaluate.add_argument("--out", default="eval-reports", help="report folder")
    evaluate.add_argument("--judge", action="store_true", help="also run LLM-judged checks")
    evaluate.add_argument("--base-url", dest="base_url")
    evaluate.add_argument("--tool-mode", dest="tool_mode", choices=["native", "commands"])
    evaluate.add_argument("--limit", type=int, help="run only the first N cases")
    evaluate.add_argument(
        "--cases", metavar="ID,ID", help="run only these cases (ids as in the suite files)"
    )
    evaluate.add_argument(
        "--summary-model",
        dest="summary_model",
        metavar="NAME",
        help="summarise the cases' seeded histories with this model on the configured "
        "endpoint (default: extractively, never with the model under test)",
    )
    evaluate.add_argument(
        "--database-url",
        dest="database_url",
        help="run each case as a new person of this migrated Postgres database "
        "(postgresql://ROLE@HOST:PORT/DB, no password: PGPASSWORD gives it; the rows stay, "
        "so name a throwaway one); default: a SQLite file per case",
    )
    evaluate.add_argument(
        "--datasets", metavar="FOLDER", help="read the suites from FOLDER (default: evals/datasets)"
    )
    actions = evaluate.add_subparsers(dest="eval_command")
    export = actions.add_parser(
        "export-feedback",
        help="turn the answers rated 👍/👎 in the chat into eval cases (the feedback suite)",
    )
    export.add_argument(
        "--out",
        dest="feedback_out",
        metavar="FILE",
        help="where the cases go (default: evals/datasets/feedback.jsonl)",
    )
    _person_option(export)
    _common(export)


def _people_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``companion user`` (add, list, passwd) and ``companion db migrate``."""
    user = sub.add_parser(
        "user", help="add, list and delete the people of this home, set passwords"
    )
    user_sub = user.add_subparsers(dest="user_command", required=True)
    add = user_sub.add_parser(
        "add", help="add a person (the first one owns the existing conversations)"
    )
    add.add_argument("name", metavar="NAME")
    listing = user_sub.add_parser("list", help="the people and their folders")
    passwd = user_sub.add_parser("passwd", help="set a person's password")
    passwd.add_argument("name", metavar="NAME")
    delete = user_sub.add_parser(
        "delete",
        help="delete a person and all their data: chats, memories, segments, images, "
        "settings and login; asks first",
    )
    delete.add_argument("name", metavar="NAME")
    _yes_option(delete)
    for leaf in (add, listing, passwd, delete):
        leaf.add_argument("--home", default=argparse.SUPPRESS, help="the home of the people")
        _database_flag(leaf)

    db = sub.add_parser("db", help="the shared Postgres database of a Companion with accounts")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    migrate = db_sub.add_parser(
        "migrate",
        help="make or update the schema, memory_sql's role and the users table, and grant "
        "the app's role (the user of COMPANION_DATABASE_URL) what it needs",
        description="Runs as an admin role: COMPANION_DATABASE_ADMIN_URL (the whole URL, "
        "password included), or --admin-url with a URL without a password and the "
        "password in PGPASSWORD or ~/.pgpass — a command line shows in `ps`, so a URL "
        "with a password is refused there. Safe to run again.",
    )
    migrate.add_argument(
        "--admin-url",
        dest="admin_url",
        default=argparse.SUPPRESS,
        help="postgresql://ADMIN@HOST:PORT/DB, no password (default COMPANION_DATABASE_ADMIN_URL)",
    )
    _database_flag(migrate)


def _person_option(parser: argparse.ArgumentParser) -> None:
    """Whose data a command touches: ``--user`` (needed once accounts are on); with
    ``_common``'s ``--home``, and the database from COMPANION_DATABASE_URL, every command
    that reads or writes a person's data finds it the same way (``_person_factory``)."""
    parser.add_argument(
        "--user",
        metavar="NAME",
        help="this person's own data: their conversations and memories "
        "(needed once accounts are on)",
    )


def _yes_option(parser: argparse.ArgumentParser) -> None:
    """``--yes``: a delete without asking (scripts); without it the person types to confirm."""
    parser.add_argument(
        "--yes", action="store_true", help="do not ask (for scripts): without it, type to confirm"
    )


def _database_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        dest="database_url",
        default=argparse.SUPPRESS,
        help="the shared Postgres database, postgresql://ROLE@HOST:PORT/DB with no password "
        "(PGPASSWORD gives it; default COMPANION_DATABASE_URL; unset: SQLite in the home)",
    )


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("home", "provider", "base_url", "chat_model", "vision_model", "tool_mode")
    return {k: getattr(args, k, None) for k in keys if getattr(args, k, None) is not None}


def _person_factory(args: argparse.Namespace) -> Any:
    """The ``ContextFactory`` of the --user's own data (``companion chat``, ``undo-sql``),
    on either backend; None (said why) when there is no such person, or accounts are on
    and no --user was given."""
    from graph.setup import People

    people = People(_flags(args))
    if args.user is None:
        if not people.accounts_on:
            return people.default  # one person, no login: the home is theirs
        names = ", ".join(person.name for person in people.accounts.people())
        print(
            f"companion: this home has accounts ({names}): choose one of them with --user NAME",
            file=sys.stderr,
        )
        return None
    if not people.accounts_on or people.accounts.get(args.user) is None:
        hint = f"add one with `companion user add {args.user}`"
        print(f"companion: no user {args.user} ({hint})", file=sys.stderr)
        return None
    return people.factory(args.user)


async def _chat(args: argparse.Namespace, factory: Any) -> int:
    from config.settings import require_chat_model
    from graph.builder import checkpointed_graph
    from graph.setup import warm_local_model

    ctx = await factory()  # a bad value from a flag, the environment or the profile: main
    require_chat_model(ctx.settings)
    await warm_local_model(ctx)  # the bundled model loads while the person types
    if args.checkpoints:
        async with checkpointed_graph(ctx.settings.home / "checkpoints.db") as graph:
            return await _chat_loop(args, ctx, graph)
    return await _chat_loop(args, ctx, None)


async def _ask_on_terminal(asked: ConfirmationAsked) -> Decision:
    """``Context.confirm`` at a terminal: the question, exactly what would be sent or
    saved, and y/N (anything but y or yes declines)."""
    ending = "Allow?" if asked.kind == "outbound" else "Save?"
    print(f"companion> {asked.question}\n    {asked.sent}", file=sys.stderr)
    try:
        answer = await asyncio.to_thread(input, f"{ending} [y/N] ")
    except EOFError:
        return "declined"
    return "allowed" if answer.strip().lower() in ("y", "yes") else "declined"


async def _chat_loop(args: argparse.Namespace, ctx: Any, graph: Any) -> int:
    """A terminal conversation, or one message with ``-m``. A call that needs the
    person's yes (the lethal trifecta, a memory change after outside content) is asked
    as y/N when a person is at the terminal; with ``-m`` or piped input nobody is asked,
    and it does not run (the question and that it was declined go to stderr)."""
    import dataclasses

    from graph.events import (
        Answer,
        ConfirmationAsked,
        ConfirmationDecided,
        ToolEnd,
        ToolStart,
        TurnError,
    )
    from graph.jobs import catch_up_once
    from graph.runner import stream_turn

    if ctx.settings.is_local:
        print(f"[{BANNER_LOCAL}]", file=sys.stderr)
    else:
        print(f"[model: {ctx.settings.chat_model}]", file=sys.stderr)
    session_id = args.session or (await ctx.store.create_session()).id
    note = args.style
    if args.amend:
        if await ctx.store.get_session(session_id) is None:
            print(f"companion: no session {session_id!r} to keep the note on", file=sys.stderr)
            return 2
        await ctx.store.set_style_note(session_id, note)
        note = None  # kept on the session: build_context reads it from there every turn
    messages = [args.message] if args.message is not None else None
    if messages is None:  # a conversation, not a one-shot: summarise what was left open
        catch_up_once(ctx)
    asking = messages is None and sys.stdin.isatty()
    ctx = dataclasses.replace(ctx, confirm=_ask_on_terminal if asking else None)
    while True:
        if messages is not None:
            if not messages:
                return 0
            text = messages.pop(0)
        else:
            try:
                text = input("you> ")
            except (EOFError, KeyboardInterrupt):
                print(file=sys.stderr)
                return 0
            if not text.strip():
                continue
        answer = ""
        failed = False
        turn = dataclasses.replace(ctx, style_note=note) if note else ctx
        note = None  # a one-turn note serves the next message only
        async for event in stream_turn(turn, session_id, text, graph=graph):
            match event:
                case ToolStart(name=name, args=arguments):
                    print(f"[tool] {name} {arguments} …", file=sys.stderr)
                case ToolEnd(name=name, ok=ok, duration_ms=ms):
                    status = "ok" if ok else "error"
                    print(f"[tool] {name} {status} ({ms:.0f} ms)", file=sys.stderr)
                case ConfirmationAsked(question=question, sent=sent) if not asking:
                    print(f"[confirm] {question} {sent!r}: nobody to ask", file=sys.stderr)
                case ConfirmationDecided(decision=decision):
                    print(f"[confirm] {decision}", file=sys.stderr)
                case TurnError():
                    failed = True
                case Answer():
                    answer = event.text
        print(answer if messages is not None else f"companion> {answer}")
        if failed and messages is not None:
            return 1


def _configure_logging(args: argparse.Namespace) -> None:
    """stderr at --log-level (WARNING), and the rotating file under the home at INFO;
    what the process writes from now on is its owner's alone (``keep_files_private``)."""
    import os

    from app.logs import configure_logging, keep_files_private
    from config.settings import Settings
    from graph.setup import resolve_home

    home = resolve_home(_flags(args), os.environ)
    keep_files_private(home, os.environ)
    configure_logging(Settings(home=home).log_file, getattr(args, "log_level", "WARNING"))


def _doctor(args: argparse.Namespace) -> int:
    from app.doctor import doctor
    from config.settings import database_url, load_settings
    from graph.setup import ContextFactory, startup_settings

    flags = _flags(args)
    try:
        settings = asyncio.run(startup_settings(ContextFactory(flags)))
    except Exception:  # the database check below says what is wrong with it
        settings = load_settings(flags)
    return doctor(settings, database_url(flags))


def _read_password() -> str | None:
    """A new password: typed twice, hidden, at a terminal; else one line of stdin (scripts).
    None when the two typed ones differ."""
    import getpass

    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    password = getpass.getpass("Password: ")
    if getpass.getpass("Again: ") != password:
        return None
    return password


def _database_flags(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("database_url", "admin_url")
    return {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}


def _user(args: argparse.Namespace) -> int:
    """``companion user``: the people of the shared Postgres database when one is
    configured, else those of the home's accounts.db."""
    import os

    from config.settings import database_url
    from graph.setup import resolve_home
    from memory import open_accounts

    root = resolve_home(_flags(args), os.environ)
    url = database_url(_database_flags(args), os.environ)
    try:
        if args.user_command == "delete":
            return _user_delete(args)
        return _user_command(args, open_accounts(root, url), postgres=url is not None)
    except ImportError:
        print(f"companion: {NO_PSYCOPG}", file=sys.stderr)
        return 2


def _confirmed(args: argparse.Namespace, what: str, answer: str) -> bool:
    """The person's yes to deleting ``what``: ``--yes``, or ``answer`` typed at a
    terminal; without a terminal and without --yes, no (said why)."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        print("companion: nobody at a terminal to confirm: add --yes", file=sys.stderr)
        return False
    print(f"This deletes {what}. It cannot be undone.", file=sys.stderr)
    try:
        typed = input(f"Type {answer} to go on: ")
    except EOFError:
        typed = ""
    if typed.strip() != answer:
        print("companion: not confirmed; nothing was deleted", file=sys.stderr)
        return False
    return True


async def _delete(store: AsyncStore, accounts: Accounts | None, name: str | None) -> int:
    """Delete the person's data (``app.deleting``) and say what went."""
    from app.deleting import delete_person
    from memory import release_connections

    try:
        deleted = await delete_person(store, accounts=accounts, name=name)
    finally:
        await release_connections()
    print(deleted.line())
    return 0


def _forget(args: argparse.Namespace) -> int:
    """``companion forget --all``: everything of the home's one person (exit 2 with
    accounts: each person is deleted by name)."""
    from graph.setup import People

    people = People(_flags(args))
    if people.accounts.people():
        print(
            "companion: this home has accounts: delete a person with `companion user delete NAME`",
            file=sys.stderr,
        )
        return USAGE
    what = f"every chat, memory, segment, image and setting in {people.root}"
    if not _confirmed(args, what, "yes"):
        return USAGE
    return asyncio.run(_delete(people.default.store, None, None))


def _user_delete(args: argparse.Namespace) -> int:
    """``companion user delete NAME``: the person's data, folder and login."""
    from graph.setup import People

    people = People({**_flags(args), **_database_flags(args)})
    person = people.accounts.get(args.name)
    if person is None:
        print(f"companion: no user {args.name}", file=sys.stderr)
        return USAGE
    what = f"{person.name} and all their chats, memories, segments, images and settings"
    if not _confirmed(args, what, person.name):
        return USAGE
    store = people.factory(person.name).store
    return asyncio.run(_delete(store, people.accounts, person.name))


def _user_command(args: argparse.Namespace, accounts: Accounts, *, postgres: bool) -> int:
    """add, list or passwd on ``accounts`` (``postgres``: the shared database's)."""
    from memory import AccountError

    root = accounts.root
    if args.user_command == "list":
        people = accounts.people()
        if not people:
            where = "in the shared database" if postgres else "one person, no login"
            print(f"No users: {where}. Add one with `companion user add NAME`.", file=sys.stderr)
        for person in people:
            print(f"{person.name}\t{person.home(root)}")
        return 0
    if args.user_command == "passwd" and accounts.get(args.name) is None:
        print(f"companion: no user {args.name}", file=sys.stderr)
        return 2
    password = _read_password()
    if password is None:
        print("companion: the two passwords differ; nothing changed", file=sys.stderr)
        return 2
    try:
        if args.user_command == "passwd":
            accounts.set_password(args.name, password)
            print(f"Set the password of {args.name}.")
            return 0
        person = accounts.add(args.name, password)
    except AccountError as exc:
        print(f"companion: {exc}", file=sys.stderr)
        return 2
    # The first person owns the home's own data (graph.setup.People): on SQLite its
    # database file, on Postgres the rows from before accounts and the home's images.
    if accounts.is_first(person):
        where = "the shared database" if postgres else str(root)
        print(
            f"Added {person.name}. {person.name} owns the conversations already in {where}, "
            "and from now on the app asks everyone to log in "
            "(and `companion chat` needs --user)."
        )
    elif postgres:
        print(
            f"Added {person.name}. Their conversations live in the shared database, "
            f"their images in {person.home(root) / 'media'}."
        )
    else:
        print(f"Added {person.name}. Their conversations live in {person.home(root)}.")
    return 0


def _db_migrate(args: argparse.Namespace) -> int:
    """``companion db migrate``: the store's schema, memory_sql's role and the users
    table, as the admin, granted to the role of COMPANION_DATABASE_URL; then checks that
    every privilege memory_sql relies on holds (exit 1 naming each one that does not)
    and notes, on stderr, what every role may do that only a superuser could revoke."""
    import os

    from config.settings import database_admin_url, database_url, database_user

    flags = _database_flags(args)
    admin_url = database_admin_url(flags, os.environ)
    url = database_url(flags, os.environ)
    if admin_url is None:
        raise ConfigError(
            "set COMPANION_DATABASE_ADMIN_URL (or --admin-url, its password in "
            "PGPASSWORD) to the admin role that owns the schema"
        )
    if url is None:
        raise ConfigError(
            "set COMPANION_DATABASE_URL (or --database-url): its user is the app's "
            "role, which the schema is granted to"
        )
    app_role = database_user(url)
    try:
        from memory import StoreError, migrate

        report = asyncio.run(migrate(admin_url, url, app_role))
    except ImportError:
        print(f"companion: {NO_PSYCOPG}", file=sys.stderr)
        return 2
    except StoreError as exc:
        return _failed(exc, FAILED, "the migration failed: ")
    for note in report.notes:
        print(f"companion: note: {note}", file=sys.stderr)
    if report.problems:
        print(
            "companion: the migration ran, but memory_sql's isolation does not hold:",
            *(f"  - {problem}" for problem in report.problems),
            "Fix these as a superuser (or the roles' owner) and run `companion db migrate` "
            "again; memory_sql must not be used until it passes.",
            sep="\n",
            file=sys.stderr,
        )
        return 1
    print(
        f"Schema at version {report.version}, accounts at version {report.accounts_version}; "
        f"granted to {app_role} (memory_sql runs as {report.sql_role})."
    )
    return 0


def _for_person(args: argparse.Namespace, run: Callable[[Any], Coroutine[Any, Any, int]]) -> int:
    """``run`` on the --user's ``ContextFactory`` (``_person_factory``); exit 2, said
    why, when there is no such person."""
    factory = _person_factory(args)
    if factory is None:
        return 2
    return asyncio.run(run(factory))


async def _undo_sql(store: AsyncStore) -> int:
    """``companion undo-sql``: undo the newest memory_sql edit of the --user's data (or
    the home's one person), on either backend."""
    from memory import EditConflict, release_connections

    try:
        batch = await store.undo_last_sql_edit()
    except EditConflict as exc:
        print(f"companion: not undone: {exc}", file=sys.stderr)
        return 1
    finally:
        await release_connections()
    if batch is None:
        print("Nothing to undo: no memory_sql edit is left in the journal.")
        return 0
    rows = ", ".join(edit.label for edit in batch.edits)
    print(f"Undid the memory_sql edit of {batch.created_at} UTC; restored {rows}.")
    return 0


def _progress_bar(done: int, total: int, doing: str = "embedding") -> None:
    """One line on stderr, rewritten in place: ``[#####·····] 512/1,024 (50%)``."""
    share = done / total if total else 1.0
    bar = "#" * int(share * 30)
    print(
        f"\r{doing} [{bar:·<30}] {done:,}/{total:,} ({share:.0%})",
        end="" if done < total else "\n",
        file=sys.stderr,
        flush=True,
    )


async def _reindex(factory: Any) -> int:
    """``companion memory reindex``: the --user's messages get vectors of the configured
    embedding model, with a progress bar; Ctrl-C keeps what is done."""
    from graph.jobs import reindex
    from memory import release_connections
    from providers import EmbeddingUnavailable

    ctx = await factory()
    try:
        if ctx.embedder is None:
            print("companion: embeddings are off (COMPANION_EMBEDDING_MODEL=off)", file=sys.stderr)
            return 1
        done, total = await reindex(ctx.store, ctx.embedder, _progress_bar)
    except EmbeddingUnavailable as exc:
        print(f"\ncompanion: the embedder failed: {exc}; run again to resume", file=sys.stderr)
        return 1
    finally:
        await release_connections()
    print(f"{done:,} of {total:,} messages have vectors of {ctx.embedder.model}.")
    return 0


async def _import(path: str, factory: Any) -> int:
    """``companion import PATH``: the export's chats into the --user's store, with a
    progress bar and a report; then their segments are cut (extractive summaries) and,
    with an embedder, their vectors made, so memory_search finds them. Exit 2, one line,
    for a file that is not an export (nothing is added)."""
    from pathlib import Path

    from app.imports import BadExport, import_export
    from graph.jobs import reindex
    from memory import release_connections
    from providers import EmbeddingUnavailable

    ctx = await factory()
    try:
        report = await import_export(
            ctx.store, Path(path), lambda done, total: _progress_bar(done, total, "importing")
        )
        for session_id in report.sessions:
            await ctx.store.refresh_segments(session_id, None, force=True, tz=ctx.settings.timezone)
        print("\n".join(report.lines()))
        if ctx.embedder is not None and report.sessions:
            await reindex(ctx.store, ctx.embedder, _progress_bar)
    except BadExport as exc:
        print(f"companion: cannot import {path}: {exc}", file=sys.stderr)
        return USAGE
    except EmbeddingUnavailable as exc:  # the chats are in; recall stays lexical till then
        print(
            f"\ncompanion: the embedder failed: {exc}; run `companion memory reindex`",
            file=sys.stderr,
        )
    finally:
        await release_connections()
    return 0


async def _export(path: str, factory: Any) -> int:
    """``companion export PATH``: the --user's data into a new zip, with a progress bar
    and a report. Exit 2, one line, for a path that exists (or has no folder), 1 for a
    disk error (nothing is left half-written)."""
    from pathlib import Path

    from app.exports import ExportError, ExportRefused, export_person
    from memory import release_connections

    store = factory.store
    try:
        report = await export_person(
            store,
            store.media_dir,
            await store.profile(),
            Path(path),
            lambda done, total: _progress_bar(done, total, "exporting"),
        )
    except ExportRefused as exc:
        print(f"companion: cannot export: {exc}", file=sys.stderr)
        return USAGE
    except ExportError as exc:
        return _failed(exc, FAILED, "the export failed: ")
    finally:
        await release_connections()
    print(report.line())
    return 0


def _memory(args: argparse.Namespace) -> int:
    """``companion memory reindex``; Ctrl-C stops it with what is done kept (exit 130)."""
    try:
        return _for_person(args, _reindex)
    except KeyboardInterrupt:
        print("\ninterrupted: what is embedded is kept; run it again to resume", file=sys.stderr)
        return 130


def _failed(exc: Exception, code: int, said: str = "") -> int:
    """A known failure: ``said`` and the exception's message as one line on stderr, its
    traceback in the log file (``FILE_ONLY``: not on stderr a second time); ``code``."""
    from app.logs import FILE_ONLY, one_line

    line = f"{said}{one_line(exc)}"
    log.error("%s", line, exc_info=exc, extra=FILE_ONLY)
    print(f"companion: {line}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``companion`` console script."""
    args = build_parser().parse_args(argv)
    if args.command == "graph":
        from graph.builder import mermaid

        print(mermaid())
        return 0
    from memory import StoreError

    _configure_logging(args)
    try:
        return _command(args)
    except ConfigError as exc:  # a bad flag, variable or setting
        return _failed(exc, USAGE)
    except StoreError as exc:  # the database is down, not migrated, or refuses writes
        return _failed(exc, FAILED)


def _command(args: argparse.Namespace) -> int:
    """Run the sub-command ``args`` names (the app with none)."""
    if args.command == "doctor":
        return _doctor(args)
    if args.command == "undo-sql":
        return _for_person(args, lambda factory: _undo_sql(factory.store))
    if args.command == "user":
        return _user(args)
    if args.command == "memory":
        return _memory(args)
    if args.command == "db":
        return _db_migrate(args)
    if args.command == "import":
        return _for_person(args, lambda factory: _import(args.path, factory))
    if args.command == "forget":
        return _forget(args)
    if args.command == "export":
        return _for_person(args, lambda factory: _export(args.path, factory))
    if args.command == "chat":
        if args.amend and args.style is None:
            print("companion: --amend keeps a --style note: give one with --style", file=sys.stderr)
            return 2
        return _for_person(args, lambda factory: _chat(args, factory))
    if args.command == "eval" and args.eval_command == "export-feedback":
        from evals.feedback import export_from_cli

        return _for_person(args, lambda factory: export_from_cli(args.feedback_out, factory))
    if args.command == "eval":
        from evals.runner import run_from_cli

        return run_from_cli(args)
    from app.ui import serve

    # The password comes from COMPANION_PASSWORD only: a command line shows in `ps`.
    return serve(host=args.host, port=args.port, flags=_flags(args))


if __name__ == "__main__":
    raise SystemExit(main())
