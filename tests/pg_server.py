"""A throwaway PostgreSQL server on loopback, for tests, benchmarks and local trials.

Stdlib only (no Dagster, no database driver): it runs the server binaries of an installed
PostgreSQL (Debian's ``postgresql`` package puts them in ``/usr/lib/postgresql/<N>/bin``)::

    from tests.pg_server import postgres_server

    with postgres_server() as pg:
        pg.create_database("dagster")
        url = pg.url("dagster")              # postgresql://postgres:<password>@127.0.0.1:<port>/dagster
        storage = pg.dagster_storage("dagster")  # the ``storage:`` section of a dagster.yaml

Why it is built this way:

* The cluster lives in a fresh temporary directory, listens on 127.0.0.1 only (no Unix
  socket), on a free port, and password authentication is on (SCRAM), so a client that loses
  the password really fails to connect: tests of password hiding are not vacuous.
* ``initdb`` refuses to run as root. As root the server runs as an unprivileged account
  (``nobody`` by default, ``RL_PG_USER`` or ``run_as=`` to choose), which owns only the
  temporary directory; no account is created and no system file is touched.
* The server is started directly (not through ``pg_ctl``), in its own process group, so it is
  stopped by its PID whatever happens to the caller; ``durable=False`` (the default) turns
  fsync off: a test cluster trades crash safety for speed.
* Binaries: Debian's package is the supported source (CI installs it when missing: ~45 s on a
  loaded 2-core machine, 40 MB). A wheel that ships a server works too: point ``RL_PG_BIN`` at
  its ``bin`` directory (e.g. ``pgserver``'s ``pginstall/bin``: PostgreSQL 16, 2.5 s to
  install, last released 2024, not a dependency of this project).
"""

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = [
    "PostgresServer",
    "PostgresUnavailable",
    "find_postgres_bin",
    "postgres_server",
    "start_postgres",
]

#: Server programs a cluster needs; ``psql`` and ``pg_isready`` come from the client package.
_SERVER_PROGRAMS = ("initdb", "postgres")


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries were found (install Debian's ``postgresql`` package)."""


def _has_server(bindir: Path) -> bool:
    return all((bindir / name).is_file() for name in _SERVER_PROGRAMS)


def find_postgres_bin() -> Path | None:
    """The directory of the newest installed PostgreSQL server binaries, or None.

    Looked up in order: ``$RL_PG_BIN``, ``/usr/lib/postgresql/<newest>/bin`` (Debian, Ubuntu),
    then ``initdb`` on ``PATH``.
    """
    configured = os.environ.get("RL_PG_BIN")
    if configured:
        path = Path(configured)
        return path if _has_server(path) else None
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = sorted(
            (p for p in debian.iterdir() if p.name.isdigit() and _has_server(p / "bin")),
            key=lambda p: int(p.name),
        )
        if versions:
            return versions[-1] / "bin"
    initdb = shutil.which("initdb")
    if initdb and _has_server(Path(initdb).parent):
        return Path(initdb).parent
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """A running throwaway cluster. ``password`` belongs to the superuser ``user``."""

    bindir: Path
    base_dir: Path
    port: int
    password: str
    user: str = "postgres"
    host: str = "127.0.0.1"
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _own_base_dir: bool = field(default=False, repr=False)

    def __repr__(self) -> str:  # the password stays out of logs and test reports
        return (
            f"PostgresServer(host={self.host!r}, port={self.port}, base_dir={str(self.base_dir)!r})"
        )

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "postgres.log"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def url(self, database: str = "postgres", *, driver: str | None = None) -> str:
        """A SQLAlchemy / libpq URL with the password (``driver``: e.g. ``"psycopg2"``)."""
        scheme = f"postgresql+{driver}" if driver else "postgresql"
        return (
            f"{scheme}://{quote(self.user, safe='')}:{quote(self.password, safe='')}"
            f"@{self.host}:{self.port}/{quote(database, safe='')}"
        )

    def dagster_storage(self, database: str) -> dict[str, Any]:
        """The ``storage:`` section of a ``dagster.yaml`` for ``database`` on this server."""
        return {
            "postgres": {
                "postgres_db": {
                    "hostname": self.host,
                    "port": self.port,
                    "username": self.user,
                    "password": self.password,
                    "db_name": database,
                    # SQLAlchemy 2.1 maps plain ``postgresql://`` to psycopg 3; dagster-postgres
                    # installs psycopg2.
                    "scheme": "postgresql+psycopg2",
                }
            }
        }

    def psql(self, sql: str, database: str = "postgres", timeout: float = 60.0) -> str:
        """Run ``sql`` with ``psql`` (no Python driver needed); returns unaligned output."""
        result = subprocess.run(
            [
                str(self._client("psql")),
                "-h",
                self.host,
                "-p",
                str(self.port),
                "-U",
                self.user,
                "-d",
                database,
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ],
            env={**os.environ, "PGPASSWORD": self.password, "PGCONNECT_TIMEOUT": "10"},
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"psql failed ({result.returncode}): {result.stderr.decode(errors='replace')}"
            )
        return result.stdout.decode()

    def create_database(self, name: str) -> str:
        """Create an empty database (a fresh one per test keeps tests independent)."""
        if not name.replace("_", "").isalnum():
            raise ValueError(f"database name must be letters, digits and '_': {name!r}")
        self.psql(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _client(self, name: str) -> Path | str:
        local = self.bindir / name
        return local if local.is_file() else (shutil.which(name) or name)

    def is_ready(self) -> bool:
        result = subprocess.run(
            [str(self._client("pg_isready")), "-q", "-h", self.host, "-p", str(self.port)],
            capture_output=True,
            timeout=30,
            check=False,
        )
        return result.returncode == 0

    def stop(self, timeout: float = 30.0, *, remove: bool = True) -> None:
        """Stop by PID, SIGKILL of the group after ``timeout``; idempotent.

        A cluster about to be deleted gets an immediate shutdown (SIGQUIT: no final checkpoint
        to write, the data is thrown away); one that is kept, a fast shutdown (SIGINT).
        """
        discard = remove and self._own_base_dir
        proc = self.process
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGQUIT if discard else signal.SIGINT)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
            # Backends are children of the postmaster and exit with it; make sure.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            self.process = None
        if discard:
            shutil.rmtree(self.base_dir, ignore_errors=True)


def _account(run_as: str | None) -> pwd.struct_passwd | None:
    """The account the server runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    name = run_as or os.environ.get("RL_PG_USER") or "nobody"
    try:
        return pwd.getpwnam(name)
    except KeyError:
        raise PostgresUnavailable(
            f"running as root, and the account {name!r} that would run PostgreSQL does not "
            "exist (set RL_PG_USER to an unprivileged account)"
        ) from None


def _chown_tree(path: Path, account: pwd.struct_passwd | None) -> None:
    if account is None:
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, account.pw_uid, account.pw_gid)
        for name in (*dirs, *files):
            os.chown(os.path.join(root, name), account.pw_uid, account.pw_gid)


def start_postgres(
    base_dir: str | Path | None = None,
    *,
    port: int | None = None,
    password: str | None = None,
    run_as: str | None = None,
    durable: bool = False,
    ready_timeout: float = 60.0,
    settings: dict[str, str] | None = None,
) -> PostgresServer:
    """``initdb`` a new cluster in ``base_dir`` (default: a new temporary directory) and start it.

    Raises :class:`PostgresUnavailable` when no server binaries are installed, RuntimeError
    (with the server log's tail) when the server does not come up.
    """
    bindir = find_postgres_bin()
    if bindir is None:
        raise PostgresUnavailable(
            "PostgreSQL server binaries not found (looked in $RL_PG_BIN, "
            "/usr/lib/postgresql/*/bin and PATH); install them, e.g. "
            "`apt-get install -y postgresql`"
        )
    account = _account(run_as)
    own = base_dir is None
    # Directly under the system temp dir: the unprivileged account must be able to reach it.
    base = Path(tempfile.mkdtemp(prefix="rl-pg-")) if base_dir is None else Path(base_dir)
    base.mkdir(parents=True, exist_ok=True)
    secret = password or secrets.token_urlsafe(18)
    server = PostgresServer(bindir, base, port or _free_port(), secret, _own_base_dir=own)
    try:
        pwfile = base / "pwfile"
        pwfile.write_text(secret + "\n")
        pwfile.chmod(0o600)
        _chown_tree(base, account)
        user_kw: dict[str, Any] = {}
        if account is not None:
            user_kw = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        env.pop("PGDATA", None)
        init = subprocess.run(
            [
                str(bindir / "initdb"),
                "-D",
                str(server.data_dir),
                "-U",
                server.user,
                "--pwfile",
                str(pwfile),
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ],
            env=env,
            cwd=str(base),
            capture_output=True,
            timeout=120,
            check=False,
            **user_kw,
        )
        pwfile.unlink()
        if init.returncode != 0:
            raise RuntimeError(
                "initdb failed: " + (init.stdout + init.stderr).decode(errors="replace")[-2000:]
            )
        options = {
            "listen_addresses": server.host,
            "port": str(server.port),
            "unix_socket_directories": "",
            "max_connections": "200",
            "shared_buffers": "64MB",
            **(
                {}
                if durable
                else {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
            ),
            **(settings or {}),
        }
        args = [str(bindir / "postgres"), "-D", str(server.data_dir)]
        for key, value in options.items():
            args += ["-c", f"{key}={value}"]
        log = open(server.log_path, "ab")  # noqa: SIM115 - the child keeps its own copy
        try:
            server.process = subprocess.Popen(
                args,
                env=env,
                cwd=str(base),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **user_kw,
            )
        finally:
            log.close()
        deadline = time.monotonic() + ready_timeout
        while not server.is_ready():
            if server.process.poll() is not None or time.monotonic() > deadline:
                tail = server.log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"PostgreSQL did not start on port {server.port}:\n{tail}")
            time.sleep(0.1)
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def postgres_server(base_dir: str | Path | None = None, **kwargs: Any) -> Iterator[PostgresServer]:
    """:func:`start_postgres` as a context manager: the server is stopped (by PID) on exit."""
    server = start_postgres(base_dir, **kwargs)
    try:
        yield server
    finally:
        server.stop()
