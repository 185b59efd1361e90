"""``PostgresServer``: a throwaway PostgreSQL server for the tests, started with pg_ctl.

Its binaries are PyPI's ``pgserver`` wheel's (PostgreSQL 16 with pgvector; installed by
``scripts/bootstrap test`` on x86-64 Linux), else PATH's or Debian's ``initdb``/``pg_ctl``.
It runs on a free loopback port, with its data and unix socket in a temp folder, and is
set up as the README says: a database ``companion`` owned by ``companion_owner``, a role
that may create roles but is no superuser (``owner_url``: what ``companion db migrate``
runs as), and the app's login role ``companion`` (no superuser, no BYPASSRLS: row-level
security applies to it). ``admin_url`` is the superuser's, for tests that look past
every guard. Every role logs in without a password (``trust``). As root, initdb and
pg_ctl run as the ``postgres`` user (initdb refuses root). No binaries is an error, not
a skip: CI installs them.

The superuser creates pgvector's extension in the database (as a managed service's
admin enables it), so migrate finds it; ``vector=False`` leaves it out, a database
where the owner may not create it (pgvector is not a trusted extension) and recall is
lexical. pgvector missing is an error too.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

import psycopg
from psycopg import sql

APP_ROLE = "companion"
OWNER = "companion_owner"  # the database's owner: CREATEROLE, no superuser
DATABASE = "companion"
SUPERUSER = "postgres"
SEARCH_ROOT = Path("/usr/lib/postgresql")


class PostgresNotFound(RuntimeError):
    """No initdb/pg_ctl on PATH nor under /usr/lib/postgresql/*/bin, or no pgvector there."""


def find_binaries() -> Path:
    """The folder holding initdb and pg_ctl: pgserver's (with pgvector) when installed,
    else PATH's, else the newest Debian version."""
    wheel = importlib.util.find_spec("pgserver")
    if wheel is not None and wheel.origin is not None:
        bundled = Path(wheel.origin).parent / "pginstall" / "bin"
        if (bundled / "initdb").exists():
            return bundled
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent
    versions = sorted(
        (folder for folder in SEARCH_ROOT.glob("*/bin") if (folder / "initdb").exists()),
        key=lambda folder: _version(folder.parent.name),
    )
    if not versions:
        raise PostgresNotFound(
            "PostgreSQL's initdb/pg_ctl were not found on PATH nor under "
            f"{SEARCH_ROOT}/*/bin: install postgresql (apt-get install postgresql)"
        )
    return versions[-1]


def reachable_by_postgres(folder: Path) -> Path:
    """``folder`` (a ``bin``) if the ``postgres`` user can run its initdb, else a copy in
    the temp folder, made once and shared by the test workers, of the package holding it
    (pgserver: ``pgserver/pginstall/{bin,lib,share}``) and of the wheel's libraries beside
    it (``pgserver.libs``, which the binaries find by a path relative to themselves). A
    checkout under a folder only root may enter (``mktemp -d`` makes it 0700) holds the
    bundled binaries where postgres cannot reach them."""
    probe = ["runuser", "-u", SUPERUSER, "--", "test", "-x", str(folder / "initdb")]
    if subprocess.run(probe, capture_output=True).returncode == 0:
        return folder
    package = folder.parent.parent  # site-packages/pgserver
    parts = [package, package.with_name(f"{package.name}.libs")]
    key = hashlib.sha256(str(package.resolve()).encode()).hexdigest()[:12]
    shared = Path(tempfile.gettempdir()) / f"companion-pginstall-{key}"
    inside = shared / folder.relative_to(package.parent)
    if not (inside / "initdb").exists():
        copying = Path(tempfile.mkdtemp(prefix="companion-pginstall-", dir=shared.parent))
        for part in parts:
            if part.exists():
                shutil.copytree(part, copying / "copy" / part.name, symlinks=True)
        (copying / "copy").chmod(0o755)
        try:
            (copying / "copy").rename(shared)  # atomic: another worker may have won
        except OSError:
            shutil.rmtree(copying / "copy", ignore_errors=True)
        copying.rmdir()
    return inside


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """A PostgreSQL server in a temp folder: ``admin_url`` (superuser), ``owner_url`` (the
    database's owner, no superuser), ``url`` (the app role); with pgvector's extension in
    the database unless ``vector=False``."""

    def __init__(self, *, vector: bool = True) -> None:
        self.vector = vector
        self.as_postgres = os.geteuid() == 0
        self.bin = find_binaries()
        if self.as_postgres:
            self.bin = reachable_by_postgres(self.bin)
        self.folder = Path(tempfile.mkdtemp(prefix="companion-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.port = free_port()
        self.admin_url = self.url_as(SUPERUSER)
        self.owner_url = self.url_as(OWNER)
        self.url = self.url_as(APP_ROLE)
        self._running = False

    def url_as(self, role: str) -> str:
        """The database's URL for ``role`` (every role logs in without a password)."""
        return f"postgresql://{role}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.as_postgres:
            command = ["runuser", "-u", SUPERUSER, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{' '.join(command)} failed ({done.returncode}):\n"
                f"{done.stdout}\n{done.stderr}\n{log}"
            )

    def start(self) -> PostgresServer:
        """initdb, start on the free port, create the app role and database."""
        try:
            if self.as_postgres:
                user = pwd.getpwnam(SUPERUSER)
                os.chown(self.folder, user.pw_uid, user.pw_gid)
            self._run(
                "initdb", "-D", str(self.data), "-A", "trust", "-U", SUPERUSER,
                "--encoding", "UTF8", "--locale", "C",
            )  # fmt: skip
            options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
            self._run(
                "pg_ctl", "start", "-w", "-D", str(self.data), "-l", str(self.log), "-o", options
            )
            self._running = True
            self._create_app_database()
        except BaseException:
            self.stop()
            raise
        return self

    def _create_app_database(self) -> None:
        maintenance = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"
        with psycopg.connect(maintenance, autocommit=True) as conn:
            conn.execute(
                sql.SQL(
                    "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS"
                ).format(sql.Identifier(APP_ROLE))
            )
            conn.execute(
                sql.SQL(
                    "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB CREATEROLE NOBYPASSRLS"
                ).format(sql.Identifier(OWNER))
            )
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(DATABASE), sql.Identifier(OWNER)
                )
            )
        if self.vector:
            self._create_vector_extension()

    def _create_vector_extension(self) -> None:
        try:
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION vector")
        except psycopg.errors.FeatureNotSupported as error:  # no vector.control
            raise PostgresNotFound(
                f"pgvector is not installed in {self.bin.parent}: "
                "`scripts/bootstrap test` installs pgserver (PostgreSQL with pgvector)"
            ) from error

    def stop(self) -> None:
        """Stop the server at once (nothing to keep) and remove its folder."""
        if self._running:
            self._running = False
            self._run("pg_ctl", "stop", "-m", "immediate", "-D", str(self.data))
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
