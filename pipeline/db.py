"""Connections: DATABASE_URL when set, else the embedded server."""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self
from urllib.parse import unquote

import psycopg
from psycopg.abc import Params, Query
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import Row
from psycopg.types.json import set_json_loads

from pg_pipeline.errors import DatabaseUnavailable
from pg_pipeline.queries import Q, check_schema, configured_schema, queries_for
from pg_pipeline.redact import MASK, redact

if TYPE_CHECKING:  # imported where a pool is made: a command's one connection needs neither
    from psycopg_pool import ConnectionPool

log = logging.getLogger(__name__)

# -- outage or refusal ---------------------------------------------------------------------------
#
# Every loop that talks to Postgres asks one question of a database error: will the same
# statement work if I wait (an outage: retry with backoff, keep the jobs), or will it get the
# same answer however long I wait (a refusal: say so, and fail what asked for it)? psycopg's
# exception classes do not answer it (a lost connection and "index row size exceeds btree
# maximum" are both OperationalError; a read-only primary's 25006 is an InternalError), so the
# answer is read from the SQLSTATE, here and nowhere else.

#: SQLSTATE classes whose every error is a state of the server, not of the statement:
#: 08 connection exception, 53 insufficient resources (disk full, too many connections),
#: 57 operator intervention (shutdown, crash shutdown, "cannot connect now", a cancel),
#: 58 system error (I/O)
_OUTAGE_CLASSES = frozenset({"08", "53", "57", "58"})
#: single SQLSTATEs of other classes that pass by themselves
_OUTAGE_STATES = frozenset(
    {
        "25006",  # read_only_sql_transaction: a failover, or default_transaction_read_only
        "25P03",  # idle_in_transaction_session_timeout: the session was ended
        "25P04",  # transaction_timeout
        "40001",  # serialization_failure (also a hot standby's recovery conflict)
        "40003",  # statement_completion_unknown
        "40P01",  # deadlock_detected
        "55006",  # object_in_use
        "55P03",  # lock_not_available: a lock_timeout passed
        "72000",  # snapshot_too_old
    }
)
#: What says that this server takes no writes now (a demoted primary, a maintenance window):
#: a pooled connection that got it is closed, so that the next one is made afresh and, with
#: `target_session_attrs=read-write` in DATABASE_URL, lands on the new primary.
READ_ONLY = "25006"


def outage(exc: BaseException) -> bool:
    """Whether `exc` means the database cannot do it *now* (retry it, and keep the jobs) rather
    than that it refuses to (retrying gets the same answer: fail what asked for it).

    Without a SQLSTATE, only psycopg's connection errors are outages (a lost or refused
    connection, a pool that could not get one); its other errors (a NUL byte it cannot send)
    are refusals. With one, the classes and states above are outages; every other SQLSTATE
    is a refusal: class 54 (an index row or a jsonb value too large, stack depth exceeded),
    data and integrity errors, a raise in a trigger, a missing privilege.
    """
    if isinstance(exc, psycopg.InterfaceError):
        return True
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if not state:
        return isinstance(exc, psycopg.OperationalError)
    return state in _OUTAGE_STATES or state[:2] in _OUTAGE_CLASSES


def unavailable(exc: BaseException) -> bool:
    """An outage, or connect()'s own DatabaseUnavailable (the server could not be reached)."""
    return isinstance(exc, DatabaseUnavailable) or outage(exc)


CONNECT_TIMEOUT_S = 10  #: seconds a new connection may take before it counts as unreachable

#: `transaction`: DATABASE_URL goes through a pooler in transaction mode (PgBouncer's
#: `pool_mode = transaction`), so no server-side prepared statements and no LISTEN through it.
#: `none` (or `session`): it does not. Unset or `auto`: detect it on each new connection.
POOLER_ENV = "PIPELINE_DB_POOLER"
#: A direct (non-pooled) DSN for the listener alone, when DATABASE_URL goes through a pooler.
LISTEN_URL_ENV = "PIPELINE_LISTEN_URL"

PoolerMode = Literal["auto", "transaction", "none"]


def database_url() -> str:
    configured = os.environ.get("DATABASE_URL")
    if configured:
        return configured
    from pg_pipeline.embedded import embedded_url

    return embedded_url()


def describe(dsn: str) -> str:
    """Where a DSN points, safe to print: host (or socket dir), port and database, never the
    password, even when the DSN is malformed."""
    lenient = _lenient_parts(dsn)
    try:
        parts = {key: str(value) for key, value in conninfo_to_dict(dsn).items() if value}
    except Exception:  # malformed: libpq's own error quotes the DSN, password and all
        if lenient is None:
            return "an unparsable DATABASE_URL"
        parts = lenient
    else:
        if lenient is not None and lenient.get("_odd_userinfo"):
            parts = lenient  # libpq's reading would show part of the password as a host
    host = parts.get("host") or parts.get("hostaddr") or "localhost"
    port = parts.get("port") or "5432"
    dbname = parts.get("dbname") or parts.get("user") or ""
    return _hide_password(f"{host}:{port}/{dbname}", dsn)


def scrub(text: str, dsn: str | None) -> str:
    """`text` (an error message) without `dsn` itself, its password or any other credential."""
    if dsn:
        text = _hide_password(text.replace(dsn, "<connection string>"), dsn)
    return redact(text)


_URL_FORM = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://(?P<rest>.*)\Z", re.DOTALL)
_KEYWORD = re.compile(
    r"(?:^|\s)(host|hostaddr|port|dbname|password)\s*=\s*('(?:[^'\\]|\\.)*'?|\S*)"
)


def _lenient_parts(dsn: str) -> dict[str, str] | None:
    """host, port, dbname (and the password, to hide it) read from a DSN the way a person
    would, without failing on a malformed one."""
    url = _URL_FORM.match(dsn)
    if url is None:
        found = {key: value.strip("'") for key, value in _KEYWORD.findall(dsn)}
        return found or None
    # The password ends at the *last* `@`: libpq splits at the first `@` or `/`, so a raw `@`,
    # `/` or `?` in a password would otherwise put its tail in the host or database name.
    userinfo, at, hostpart = url["rest"].rpartition("@")
    user, _, password = userinfo.partition(":")
    hostport, _, query = hostpart.partition("?")
    hostport, _, dbname = hostport.partition("/")
    if hostport.startswith("["):  # an IPv6 address, perhaps without its closing bracket
        host, _, after = hostport[1:].partition("]")
        port = after[1:] if after.startswith(":") else ""
    else:
        host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
    parts = {"host": host, "port": port, "dbname": dbname, "user": user, "password": password}
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key in ("host", "hostaddr", "port", "dbname"):
            parts[key] = value
    parts = {key: unquote(value) for key, value in parts.items()}
    parts["_odd_userinfo"] = "yes" if at and set(userinfo) & set("@/?#[]") else ""
    return parts


def _hide_password(text: str, dsn: str) -> str:
    passwords = {(_lenient_parts(dsn) or {}).get("password", "")}
    with suppress(Exception):  # malformed: the lenient reading found what there is to find
        passwords.add(str(conninfo_to_dict(dsn).get("password") or ""))
    # A password of one or two characters matches text by chance; masking it would mangle
    # the message without protecting anything.
    for password in sorted((p for p in passwords if len(p) >= 3), key=len, reverse=True):
        text = text.replace(password, MASK)
    return redact(text)


def connect(
    dsn: str | None = None,
    *,
    autocommit: bool = True,
    schema: str | None = None,
    probe_pooler: bool = True,
) -> psycopg.Connection[Any]:
    """A connection for enqueueing in your own transactions (`with conn.transaction(): ...`).

    Autocommit by default, so a statement outside `conn.transaction()` commits on its own.
    `schema`: the installation it talks to, when not the one PIPELINE_SCHEMA (else `pipeline`)
    names; pg-pipeline's functions given this connection then use that schema's tables.
    `probe_pooler=False`: the caller reads pg_backend_pid() in a statement of its own and
    passes it to fit_to_pooler() before any other (a command's start-up check does), which
    spares the probe's round trip.
    """
    target = dsn or database_url()
    cursor = cursor_class(PoolerAwareCursor, check_schema(schema or configured_schema()))
    try:
        conninfo_to_dict(target)
    except Exception as exc:
        # `from None`: psycopg's message and traceback quote the DSN, password and all.
        raise DatabaseUnavailable(
            f"cannot connect to PostgreSQL at {describe(target)}: malformed connection string: "
            f"{scrub(_first_line(exc), target)}"
        ) from None
    if not probe_pooler:
        pooler_mode()  # a bad setting fails here, as it does when probing
    try:
        # Autocommit until the pooler probe has run, so that the probe opens no transaction.
        conn = psycopg.connect(
            target,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name="pg-pipeline",
            cursor_factory=cursor,
        )
        try:
            if probe_pooler:
                fit_to_pooler(conn)
            conn.autocommit = autocommit
        except BaseException:
            conn.close()
            raise
        return conn
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise DatabaseUnavailable(
            f"cannot connect to PostgreSQL at {describe(target)}: {scrub(reason, target)}"
        ) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def make_pool(
    dsn: str,
    *,
    max_size: int,
    name: str = "pg-pipeline",
    schema: str | None = None,
    prepare_at: int | None = None,
    direct_session: Callable[[psycopg.Connection[Any]], None] | None = None,
) -> ConnectionPool:
    """A pool of autocommit connections. Broken connections are dropped when returned, so after
    a server restart the first statement fails, the caller retries, and a fresh one is made; so
    are connections to a server that has stopped taking writes (PooledCursor). `schema` as in
    connect(). `prepare_at`: the run of a statement at which its connections prepare it (0: the
    first), where psycopg's default waits for the sixth; never through a transaction pooler.
    `direct_session`: run on each new connection that does not go through a transaction pooler,
    to set what its session holds (through one, a session's settings would reach the next
    client of the server connection it happened to get)."""
    from psycopg_pool import ConnectionPool

    pooler_mode()  # a bad setting fails here: in `configure` the pool would retry it forever
    cursor = cursor_class(PooledCursor, check_schema(schema or configured_schema()))
    return ConnectionPool(
        dsn,
        min_size=1,
        max_size=max_size,
        kwargs={
            "autocommit": True,
            "connect_timeout": CONNECT_TIMEOUT_S,
            "application_name": name,
            "cursor_factory": cursor,
        },
        configure=functools.partial(
            _configure, prepare_at=prepare_at, direct_session=direct_session
        ),
        timeout=CONNECT_TIMEOUT_S,
        reconnect_timeout=0,  # never give up reconnecting: the worker outlives outages
        name=name,
        open=True,
    )


def _configure(
    conn: psycopg.Connection[Any],
    *,
    prepare_at: int | None = None,
    direct_session: Callable[[psycopg.Connection[Any]], None] | None = None,
) -> None:
    from pydantic_core import from_json

    if prepare_at is not None:
        conn.prepare_threshold = prepare_at
    # After: through a transaction pooler, nothing is prepared, and the session holds nothing.
    if not fit_to_pooler(conn) and direct_session is not None:
        direct_session(conn)
    # Every claimed job's payload is parsed here: pydantic's parser (already installed for the
    # models) gives the same values as json.loads in a sixth of the time.
    set_json_loads(from_json, conn)


# -- connection poolers -------------------------------------------------------------------------


#: A session-mode pooler keeps prepared statements and LISTEN working: as good as direct.
_POOLER_MODES: dict[str, PoolerMode] = {
    "auto": "auto",
    "transaction": "transaction",
    "none": "none",
    "session": "none",
}


class PoolerError(DatabaseUnavailable):
    """The database answers, but not the way pg-pipeline was told to use it (a pooler's mode)."""


def pooler_mode() -> PoolerMode:
    """PIPELINE_DB_POOLER, read on every call so that a test or a process can change it."""
    raw = os.environ.get(POOLER_ENV, "").strip().lower() or "auto"
    try:
        return _POOLER_MODES[raw]
    except KeyError:
        raise PoolerError(
            f"{POOLER_ENV}={raw!r}: expected auto, transaction, session or none"
        ) from None


def set_lock_timeout(
    conn: psycopg.Connection[Any],
    seconds: float,
    *,
    planned_once: bool = False,
    session: bool = False,
) -> None:
    """For the rest of this transaction (or, with `session`, of the session: only where no
    transaction pooler stands between), a lock waited for longer than `seconds` fails the
    statement with LockNotAvailable (55P03) instead of holding it up for as long as it lasts.
    `planned_once`: and its statements keep a generic plan from their first run (sql/queries.sql
    says why), in the same round trip."""
    timeout = f"{max(1, round(seconds * 1000))}ms"
    params = {"timeout": timeout, "planned_once": planned_once, "local": not session}
    conn.execute(Q["lock_timeout"], params)


def through_pooler(conn: psycopg.Connection[Any], backend_pid: int | None = None) -> bool:
    """Whether autocommit `conn` reaches PostgreSQL through a connection pooler (one cheap
    round trip).

    PgBouncer passes the server's ParameterStatus through unchanged (server_version,
    application_name and the rest read the same as on a direct connection), and 6432 is only a
    habit, so neither tells. What does: a pooler hands each client a BackendKeyData of its own
    (PgBouncer a random cancel key), because it must route cancel requests itself, while a
    direct connection's key names the backend that serves it. So the pid libpq got at login
    differs from pg_backend_pid(). This cannot tell transaction from session mode: a
    session-mode pooler counts as transaction mode unless PIPELINE_DB_POOLER=session, which
    costs prepared statements and LISTEN, never correctness.

    `backend_pid`: what pg_backend_pid() said on `conn`, when the caller has read it already.
    """
    if backend_pid is None:
        row = conn.execute(Q["backend_pid"], prepare=False).fetchone()
        backend_pid = row[0] if row is not None else None
    return backend_pid is not None and backend_pid != conn.info.backend_pid


def fit_to_pooler(conn: psycopg.Connection[Any], backend_pid: int | None = None) -> bool:
    """Turn off psycopg's automatic prepared statements on a transaction-pooled connection;
    returns whether `conn` goes through a transaction pooler.

    psycopg prepares a statement it has run 5 times, under a name like `_pg3_0`, on the server
    connection of the moment. A transaction pooler (PgBouncer before 1.21, or with
    max_prepared_statements = 0) hands the next transaction another server connection, where
    that name is missing or already taken by another client.

    `backend_pid`: as in through_pooler.
    """
    mode = pooler_mode()
    pooled = mode == "transaction" or (mode == "auto" and through_pooler(conn, backend_pid))
    if pooled:
        conn.prepare_threshold = None
    return pooled


def listen_dsn(dsn: str) -> str | None:
    """Where a worker LISTENs: PIPELINE_LISTEN_URL if set; None (poll only) if `dsn` goes
    through a transaction pooler, which drops LISTEN when the transaction ends; else `dsn`.

    Detection connects once, so this raises outages while the database is away: call it
    where such errors are retried.
    """
    direct = os.environ.get(LISTEN_URL_ENV)
    if direct:
        return direct
    mode = pooler_mode()
    if mode == "auto":
        with psycopg.connect(
            dsn,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name="pg-pipeline probe",
        ) as conn:
            mode = "transaction" if through_pooler(conn) else "none"
        if mode == "transaction":
            log.info(
                "%s goes through a connection pooler: polling instead of LISTEN (set %s to a "
                "direct DSN for wake-ups, or %s=session if the pooler keeps sessions)",
                describe(dsn),
                LISTEN_URL_ENV,
                POOLER_ENV,
            )
    return None if mode == "transaction" else dsn


#: What PostgreSQL answers when a pooler moved psycopg's prepared statements away.
_PREPARED_CLASH = (
    psycopg.errors.DuplicatePreparedStatement,
    psycopg.errors.InvalidSqlStatementName,
)


def _ours(exc: psycopg.Error) -> bool:
    # Only psycopg's own statement names: a user's EXECUTE of a missing name is their error.
    return '"_pg3_' in (exc.diag.message_primary or "")


def _pooler_advice(exc: psycopg.Error) -> PoolerError:
    setting = os.environ.get(POOLER_ENV) or "unset, so detected"
    return PoolerError(
        f"the server lost or duplicated psycopg's prepared statement "
        f"({exc.diag.message_primary}): the database URL goes through a connection pooler in "
        f"transaction mode (PgBouncer before 1.21, say), but {POOLER_ENV} is {setting}. "
        f"Set {POOLER_ENV}=transaction, and {LISTEN_URL_ENV} to a direct DSN if workers "
        "should LISTEN"
    )


# -- schemas -----------------------------------------------------------------------------------
#
# The named queries (Q) are written for this process's schema. A connection made for another
# (connect(schema=), make_pool(schema=)) gets a cursor class that runs each of them as written
# for its own: a lookup by the query's text, so that the code that runs them needs no
# connection-specific copy of Q, and SQL that is not one of ours goes through untouched.


def schema_of(conn: psycopg.Connection[Any]) -> str:
    """The schema `conn` was made for (connect(schema=)); this process's for any other."""
    return getattr(conn.cursor_factory, "schema", None) or configured_schema()


@functools.cache
def cursor_class(base: type[PoolerAwareCursor[Any]], schema: str) -> type[PoolerAwareCursor[Any]]:
    """`base`, or for a schema other than this process's, a subclass that runs the named
    queries against `schema`."""
    if schema == configured_schema():
        return base
    ours = queries_for(schema)
    translation = {sql: ours[name] for name, sql in Q.items() if sql != ours[name]}
    return type(
        f"{base.__name__}For_{schema}", (base,), {"schema": schema, "_as_ours": translation}
    )


class PoolerAwareCursor(psycopg.Cursor[Row]):
    """A cursor whose prepared-statement clash says which setting fixes it, instead of
    `prepared statement "_pg3_0" already exists`."""

    #: the named queries of this process's schema, each as written for the cursor's schema
    _as_ours: ClassVar[Mapping[str, str]] = {}

    def execute(
        self,
        query: Query,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Self:
        if self._as_ours and isinstance(query, str):
            query = self._as_ours.get(query, query)
        try:
            # psycopg's overloads keep templates apart from params; ours passes both through.
            return super().execute(query, params, prepare=prepare, binary=binary)  # type: ignore[misc, arg-type]
        except _PREPARED_CLASH as exc:
            if _ours(exc):
                raise _pooler_advice(exc) from exc
            raise

    def executemany(
        self, query: Query, params_seq: Iterable[Params], *, returning: bool = False
    ) -> None:
        if self._as_ours and isinstance(query, str):
            query = self._as_ours.get(query, query)
        try:
            super().executemany(query, params_seq, returning=returning)
        except _PREPARED_CLASH as exc:
            if _ours(exc):
                raise _pooler_advice(exc) from exc
            raise


class PooledCursor(PoolerAwareCursor[Row]):
    """A pooled connection's cursor: when the server says it takes no writes (READ_ONLY), the
    connection is closed, and the pool makes a new one in its place.

    After a failover the old primary may come back as a standby, or the DNS name may point at
    it a while longer; a connection made before keeps talking to it, and a pool would hand it
    out again and again. A new connection goes where DATABASE_URL says now (with several hosts
    and `target_session_attrs=read-write`, to whichever is the primary). Also right when the
    primary itself turned read-only (`default_transaction_read_only`): the caller waits the
    outage out, and a later connection finds it writable.
    """

    def execute(
        self,
        query: Query,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Self:
        try:
            return super().execute(query, params, prepare=prepare, binary=binary)
        except psycopg.Error as exc:
            self._drop_if_read_only(exc)
            raise

    def executemany(
        self, query: Query, params_seq: Iterable[Params], *, returning: bool = False
    ) -> None:
        try:
            super().executemany(query, params_seq, returning=returning)
        except psycopg.Error as exc:
            self._drop_if_read_only(exc)
            raise

    def _drop_if_read_only(self, exc: psycopg.Error) -> None:
        if exc.sqlstate == READ_ONLY:
            log.debug("the server takes no writes now: closing this connection for a new one")
            self.connection.close()
