"""Which database the tables go to: a URL (anything with ``://``, never a path) or a file path.
The URL usually holds a password: everything shown goes through :func:`redact_url`."""

import re

from sqlalchemy.engine import make_url

#: SQLAlchemy backends the store's portable SQL runs on (PostgreSQL and SQLite are tested).
SUPPORTED_BACKENDS = ("postgresql", "sqlite", "mysql", "mariadb", "mssql", "oracle")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


class TableStoreError(RuntimeError):
    """The tables' database could not be reached or refused a write. Never holds a password."""


class TableStoreConfigError(TableStoreError):
    """The setting cannot work; not a ``ValueError``, which pydantic would quote (password too)."""


def is_database_url(target: str) -> bool:
    return _SCHEME.match(target) is not None


def backend_of(target: str) -> str | None:
    """``postgresql`` for ``postgresql+psycopg2://…``; None for a path."""
    match = _SCHEME.match(target)
    return match.group(1).split("+", 1)[0].lower() if match else None


def redact_url(url: object) -> str:
    """``url`` with its password replaced by ``***`` (also for strings SQLAlchemy cannot parse)."""
    text = str(url)
    if not is_database_url(text):
        return text
    try:
        return make_url(url).render_as_string(hide_password=True)  # type: ignore[arg-type]
    except Exception:
        return re.sub(r"(//[^/:@]*):[^@/]*@", r"\1:***@", text)


def check_target(target: str, setting: str) -> None:
    """Refuse a target no store can use, naming ``setting``; a plain path always passes."""
    if not target.strip():
        raise TableStoreConfigError(f"{setting} is empty: give a database URL or a file path")
    backend = backend_of(target)
    if backend is None and "://" in target:  # e.g. "://host/db", "1db://…": neither URL nor path
        raise TableStoreConfigError(
            f"{setting} is not a database URL and, holding '://', not a file path either: "
            f"{redact_url(target)}"
        )
    if backend is None or backend in SUPPORTED_BACKENDS:
        return
    hint = " (write postgresql://)" if backend in ("postgres", "pg", "psql") else ""
    raise TableStoreConfigError(
        f"{setting} is a URL with the scheme {backend!r}, which the tables' store cannot use"
        f"{hint}: {redact_url(target)}. Give a SQLAlchemy URL of "
        f"{', '.join(SUPPORTED_BACKENDS)} or a file path."
    )
