"""Query lifecycle and QueryResults pages, following Trino's client protocol.

Mirrors io.trino.dispatcher.QueuedStatementResource and io.trino.server.protocol.Query:

* POST answers a QUEUED page whose nextUri is /v1/statement/queued/{id}/{slug}/1; the query
  is handed to the engine on the first GET of a queued URI (Trino submits it then too).
* Queued GETs accept the last token or the next one (anything else is 410), wait up to 1 s
  for the dispatch and then point at /v1/statement/executing/{id}/{slug}/0. Failures found
  while dispatching (syntax errors, access denied, an unknown time zone) end the query on a
  queued page, as in Trino.
* Executing GETs: the last token returns the cached page again, an older one 410, anything
  else but the next one 404. Pages long-poll up to 1 s, carry `columns` once known and
  `data` in pages of at most `page_size` rows (and about 1 MB). The last page has no nextUri.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import secrets
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ..common.errors import TrinoError
from ..engine.api import Progress, Result, Session
from . import typesig

FINAL_STATES = ("FINISHED", "FAILED")
MAX_WAIT_S = 1.0
TARGET_RESULT_BYTES = 1024 * 1024
# Trino keeps finished queries for query.min-expire-age (15 m) before forgetting them.
EXPIRE_AFTER_S = 15 * 60
MAX_RETAINED = 2000
# How long a started statement may take to fail parsing and still fail on a queued page.
DISPATCH_GRACE_S = 0.25

_ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"


class HttpError(Exception):
    """An HTTP-level answer (404 Query not found, 410 Gone, ...)."""

    def __init__(self, status: int, message: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message


class QueryIdGenerator:
    """`YYYYMMDD_HHMMSS_NNNNN_xxxxx`: UTC start time, a counter, and the coordinator's id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = 0
        self._last_stamp = ""
        self.coordinator_id = "".join(random.choice(_ID_ALPHABET) for _ in range(5))

    def next(self) -> str:
        with self._lock:
            stamp = datetime.now(timezone.utc).strftime("%Y%m%d_%H%M%S")
            if self._counter >= 99999:
                self._counter = 0
            self._counter += 1
            return f"{stamp}_{self._counter:05d}_{self.coordinator_id}"


def airlift_duration(seconds: float) -> str:
    """airlift Duration.toString(): most succinct unit, two decimals (e.g. 15.77d, 38.50s)."""
    units = [("d", 86400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)]
    for name, size in units:
        if seconds >= size:
            return f"{seconds / size:.2f}{name}"
    return f"{seconds / 1e-9:.2f}ns"


def iso_millis(wall: float) -> str:
    return datetime.fromtimestamp(wall, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def statement_scans(sql: str, session: Session) -> dict:
    """Scans per table of a statement (see `lab.engine.scans`); `{}` when not countable."""
    try:
        from ..engine.scans import scans_of_sql
    except ImportError:  # an engine without sqlglot
        return {}
    try:
        return scans_of_sql(sql, session.catalog, session.schema)
    except Exception:
        return {}


@dataclass
class Listener:
    name: str
    version: int
    legacy_type_signatures: bool = False


@dataclass
class Page:
    body: dict
    headers: list


@dataclass
class Query:
    id: str
    user: str
    sql: str
    session: Session
    listener: Listener
    source: str | None
    slug_key: bytes = field(default_factory=lambda: secrets.token_bytes(16))
    created_mono: float = field(default_factory=time.monotonic)
    created_wall: float = field(default_factory=time.time)
    cond: threading.Condition = field(default_factory=threading.Condition)
    cancelled: threading.Event = field(default_factory=threading.Event)

    # lifecycle
    state: str = "QUEUED"
    submitted: bool = False
    started_mono: float | None = None
    ended_mono: float | None = None
    dispatched: bool = False           # the client was handed the executing URI
    dispatch_error: TrinoError | None = None
    result: Result | None = None
    error: TrinoError | None = None
    delete_received: bool = False
    progress: Progress = field(default_factory=Progress)
    cpu_s: float = 0.0
    slow_s: float = 0.0
    last_heartbeat: float = field(default_factory=time.monotonic)

    # queued URIs
    queued_token: int = 0

    # executing URIs
    last_token: int = -1
    last_page: Page | None = None
    next_token: int | None = 0
    row_offset: int = 0
    update_count: int | None = None
    exec_pages: int = 0
    wire_columns: list | None = None
    transformers: list | None = None
    done_delivering: bool = False

    # redirect_host faults: where nextUri was pointed, requests that arrived there
    redirected_to: str | None = None
    redirect_hits: int = 0
    redirect_auth: list = field(default_factory=list)

    # how many times the statement scans each table as Trino plans it (WITH inlined)
    scans: dict = field(default_factory=dict)

    # ---- slugs: a per-query secret per context and token, like io.trino.server.protocol.Slug
    def slug(self, context: str, token: int) -> str:
        prefix = "x" if context == "queued" else "y"
        mac = hmac.new(self.slug_key, f"{context}:{token}".encode(), hashlib.sha1).hexdigest()
        return prefix + mac

    def slug_valid(self, context: str, slug: str, token: int) -> bool:
        return hmac.compare_digest(self.slug(context, token), slug)

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def engine_done(self) -> bool:
        return self.result is not None or self.error is not None


class QueryManager:
    def __init__(self, engine_holder, config: dict, log) -> None:
        self.engine_holder = engine_holder
        self.config = config
        self.log = log
        self.ids = QueryIdGenerator()
        self._lock = threading.Lock()
        self.queries: dict[str, Query] = {}
        self.history: list[Query] = []
        self.pool = ThreadPoolExecutor(
            max_workers=int(config.get("worker_threads", 4)), thread_name_prefix="query"
        )
        self.page_size_default = int(config.get("page_size", 1000))
        self.page_size_by_user: dict[str, int] = {}
        self.client_timeout_s = float(config.get("client_timeout_s", 300))
        self.client_timeout_by_user: dict[str, float] = {}
        self.denied_users = set(config.get("access", {}).get("denied_users", []))
        self.faults = None  # set by the server
        threading.Thread(target=self._reaper, name="query-reaper", daemon=True).start()

    # ------------------------------------------------------------------ registry
    def register(self, q: Query) -> None:
        with self._lock:
            self.queries[q.id] = q
            self.history.append(q)
            if len(self.history) > MAX_RETAINED * 2:
                self.history = self.history[-MAX_RETAINED:]

    def get(self, query_id: str) -> Query | None:
        with self._lock:
            return self.queries.get(query_id)

    def page_size(self, user: str) -> int:
        return max(1, self.page_size_by_user.get(user, self.page_size_default))

    def _reaper(self) -> None:
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            with self._lock:
                items = list(self.queries.items())
            for qid, q in items:
                if q.final:
                    # only its expiry to check: no lock (most retained queries are final)
                    if q.ended_mono is not None and now - q.ended_mono > EXPIRE_AFTER_S:
                        with self._lock:
                            self.queries.pop(qid, None)
                    continue
                with q.cond:
                    idle = now - q.last_heartbeat
                    timeout = self.client_timeout_by_user.get(q.user, self.client_timeout_s)
                    if not q.final and not q.done_delivering and idle > timeout:
                        if not q.submitted:
                            # never polled: Trino drops such a submission silently
                            self._finish_locked(q, error=TrinoError(
                                "ABANDONED_QUERY", f"Query {q.id} submission was abandoned"))
                            continue
                        last = datetime.fromtimestamp(time.time() - idle, timezone.utc)
                        self._finish_locked(q, error=TrinoError(
                            "ABANDONED_QUERY",
                            f"Query {q.id} was abandoned by the client, as it may have exited or "
                            f"stopped checking for query results. Query results have not been "
                            f"accessed since {last.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}: "
                            f"currentTime {datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}"))
                        q.cancelled.set()
                    expired = q.final and q.ended_mono is not None and now - q.ended_mono > EXPIRE_AFTER_S
                if expired:
                    with self._lock:
                        self.queries.pop(qid, None)
            with self._lock:
                if len(self.queries) > MAX_RETAINED:
                    finals = sorted((q for q in self.queries.values() if q.final),
                                    key=lambda q: q.created_mono)
                    for q in finals[: len(self.queries) - MAX_RETAINED]:
                        self.queries.pop(q.id, None)

    # ------------------------------------------------------------------ lifecycle
    def create(self, sql: str, session: Session, listener: Listener, source: str | None) -> Query:
        qid = self.ids.next()
        session.query_id = qid
        q = Query(id=qid, user=session.user, sql=sql, session=session, listener=listener, source=source)
        q.scans = statement_scans(sql, session)
        self.register(q)
        return q

    def _finish_locked(self, q: Query, *, error: TrinoError | None = None) -> None:
        """Move q to FAILED with `error` (caller holds q.cond)."""
        if q.final:
            return
        if q.error is None:
            q.error = error
        q.state = "FAILED"
        q.ended_mono = time.monotonic()
        q.cond.notify_all()

    def _submit(self, q: Query) -> None:
        # caller holds q.cond
        if q.submitted:
            return
        q.submitted = True
        if q.final:
            return
        holder = self.engine_holder
        if holder.engine is None:
            q.dispatch_error = TrinoError("SERVER_STARTING_UP", "Trino server is still initializing")
            self._finish_locked(q, error=q.dispatch_error)
            return
        if q.user in self.denied_users:
            q.dispatch_error = TrinoError("PERMISSION_DENIED", "Access Denied: Cannot execute query")
            self._finish_locked(q, error=q.dispatch_error)
            return
        hold = self.faults.take_query_rule("hold", q.user, q.sql) if self.faults else None
        slow = self.faults.take_query_rule("slow", q.user, q.sql) if self.faults else None
        server = self.faults.take_query_rule("server_time", q.user, q.sql) if self.faults else None
        if slow:
            q.slow_s = float(slow["ms"]) / 1000.0
        # hold and server_time wait on a timer, not on a worker thread
        wait_ms = float(hold["ms"] if hold else 0) + float(server["ms"] if server else 0)
        if wait_ms > 0:
            timer = threading.Timer(wait_ms / 1000.0, self.pool.submit, (self._run, q))
            timer.daemon = True
            timer.start()
        else:
            self.pool.submit(self._run, q)

    def _run(self, q: Query) -> None:
        with q.cond:
            if q.final:
                return
            q.started_mono = time.monotonic()
            q.state = "RUNNING"
            q.cond.notify_all()
        cpu0 = time.thread_time()

        def progress(p: Progress) -> None:
            with q.cond:
                q.progress = p
                q.cpu_s = time.thread_time() - cpu0

        try:
            if q.slow_s:
                self._slow_down(q, q.slow_s)
            result = self.engine_holder.engine.execute(q.sql, q.session, progress, q.cancelled)
            if not isinstance(result, Result):
                raise TypeError(f"engine returned {type(result).__name__}, not Result")
            error = None
        except TrinoError as e:
            result, error = None, e
        except Exception as e:  # noqa: BLE001 - every engine bug becomes a query failure
            self.log(f"query {q.id} failed with an internal error:\n{traceback.format_exc()}")
            result, error = None, TrinoError("GENERIC_INTERNAL_ERROR", str(e) or type(e).__name__)
        with q.cond:
            q.cpu_s = time.thread_time() - cpu0
            if q.final:
                return
            if q.cancelled.is_set() and error is None and q.delete_received:
                error = TrinoError("USER_CANCELED", "Query was canceled")
            if error is not None:
                if error.error_name == "SYNTAX_ERROR" and not q.dispatched:
                    q.dispatch_error = error
                self._finish_locked(q, error=error)
            else:
                q.result = result
                p = q.progress
                total = max(p.total_splits, 1)
                q.progress = Progress(
                    total_splits=total, completed_splits=total, running_splits=0,
                    processed_rows=p.processed_rows, processed_bytes=p.processed_bytes,
                    physical_input_bytes=p.physical_input_bytes,
                    physical_written_bytes=p.physical_written_bytes,
                )
            q.cond.notify_all()

    @staticmethod
    def _slow_down(q: Query, seconds: float) -> None:
        """The `slow` fault: extra execution time made of splits, cancellable like real work."""
        steps = max(1, int(seconds / 0.05))
        for i in range(steps):
            if q.cancelled.is_set():
                raise TrinoError("USER_CANCELED", "Query was canceled")
            with q.cond:
                q.progress = Progress(total_splits=steps + 1, completed_splits=i, running_splits=1,
                                      processed_rows=i * 1000, processed_bytes=i * 65536,
                                      physical_input_bytes=i * 65536)
            time.sleep(seconds / steps)

    def cancel(self, q: Query) -> None:
        with q.cond:
            q.delete_received = True
            q.cancelled.set()
            if not q.final and not q.done_delivering:
                self._finish_locked(q, error=TrinoError("USER_CANCELED", "Query was canceled"))

    def heartbeat(self, q: Query) -> None:
        with q.cond:
            q.last_heartbeat = time.monotonic()

    # ------------------------------------------------------------------ stats
    def stats(self, q: Query, *, queued_page: bool = False) -> dict:
        now = time.monotonic()
        end = q.ended_mono or now
        elapsed_ms = int((end - q.created_mono) * 1000)
        start = q.started_mono
        queued_ms = int(((start or end) - q.created_mono) * 1000)
        version = q.listener.version
        if queued_page:
            st = "FAILED" if q.dispatch_error is not None and q.final else "QUEUED"
            stats = {"state": st, "queued": st == "QUEUED", "scheduled": False, "nodes": 0,
                     "totalSplits": 0, "queuedSplits": 0, "runningSplits": 0, "completedSplits": 0}
            if version >= 469:
                stats.update({"planningTimeMillis": 0, "analysisTimeMillis": 0})
            stats.update({"cpuTimeMillis": 0, "wallTimeMillis": 0, "queuedTimeMillis": queued_ms,
                          "elapsedTimeMillis": elapsed_ms})
            if version >= 469:
                stats.update({"finishingTimeMillis": 0, "physicalInputTimeMillis": 0})
            stats.update({"processedRows": 0, "processedBytes": 0, "physicalInputBytes": 0,
                          "physicalWrittenBytes": 0})
            if version >= 469:
                stats["internalNetworkInputBytes"] = 0
            stats.update({"peakMemoryBytes": 0, "spilledBytes": 0})
            return stats

        p = q.progress
        state = q.state
        scheduled = start is not None and (state != "FAILED" or p.total_splits > 0)
        total = p.total_splits
        completed = p.completed_splits
        running = p.running_splits
        queued_splits = max(total - completed - running, 0)
        wall_ms = int(((q.ended_mono or now) - start) * 1000) if start else 0
        cpu_ms = int(q.cpu_s * 1000)
        peak = 0
        if q.result is not None:
            peak = min(len(q.result.rows) * 64 + 4096, 256 * 1024 * 1024)
        stats = {"state": state, "queued": state == "QUEUED", "scheduled": bool(scheduled)}
        if scheduled and total > 0:
            stats["progressPercentage"] = min(100.0, completed * 100.0 / total)
            if version >= 414:
                stats["runningPercentage"] = min(100.0, running * 100.0 / total)
        stats.update({"nodes": 1 if start else 0, "totalSplits": total, "queuedSplits": queued_splits,
                      "runningSplits": running, "completedSplits": completed})
        if version >= 469:
            stats.update({"planningTimeMillis": 1 if start else 0, "analysisTimeMillis": 1 if start else 0})
        stats.update({"cpuTimeMillis": cpu_ms, "wallTimeMillis": wall_ms, "queuedTimeMillis": queued_ms,
                      "elapsedTimeMillis": elapsed_ms})
        if version >= 469:
            stats.update({"finishingTimeMillis": 0, "physicalInputTimeMillis": 0})
        stats.update({"processedRows": p.processed_rows,
                      "processedBytes": p.processed_bytes or p.physical_input_bytes,
                      "physicalInputBytes": p.physical_input_bytes})
        if version >= 424:
            stats["physicalWrittenBytes"] = p.physical_written_bytes
        if version >= 469:
            stats["internalNetworkInputBytes"] = 0
        stats.update({"peakMemoryBytes": peak, "spilledBytes": 0})
        if start is not None:
            stage_state = {"RUNNING": "RUNNING", "FINISHED": "FINISHED", "FAILED": "FAILED"}.get(state, "PLANNED")
            if state == "RUNNING" and q.engine_done:
                stage_state = "FINISHED"
            leaf = {
                "stageId": "1", "state": stage_state, "done": stage_state in ("FINISHED", "FAILED"),
                "nodes": 1, "totalSplits": total, "queuedSplits": queued_splits, "runningSplits": running,
                "completedSplits": completed, "cpuTimeMillis": cpu_ms, "wallTimeMillis": wall_ms,
                "processedRows": p.processed_rows, "processedBytes": p.processed_bytes or p.physical_input_bytes,
                "physicalInputBytes": p.physical_input_bytes, "failedTasks": 1 if state == "FAILED" else 0,
                "coordinatorOnly": False, "subStages": [],
            }
            root_state = state if state in ("FINISHED", "FAILED") else "RUNNING"
            stats["rootStage"] = {
                "stageId": "0", "state": root_state, "done": root_state in ("FINISHED", "FAILED"),
                "nodes": 1, "totalSplits": 1, "queuedSplits": 0,
                "runningSplits": 0 if root_state != "RUNNING" else 1,
                "completedSplits": 1 if root_state != "RUNNING" else 0,
                "cpuTimeMillis": 0, "wallTimeMillis": 0, "processedRows": len(q.result.rows) if q.result else 0,
                "processedBytes": 0, "physicalInputBytes": 0, "failedTasks": 0,
                "coordinatorOnly": False, "subStages": [leaf],
            }
        if q.final and q.scans:
            # unknown to Trino's clients, which ignore fields they do not know
            stats["labScans"] = dict(q.scans)
        return stats

    # ------------------------------------------------------------------ pages
    def info_uri(self, base: str, q: Query) -> str:
        return f"{base}/ui/query.html?{q.id}"

    def queued_uri(self, base: str, q: Query, token: int) -> str:
        return f"{base}/v1/statement/queued/{q.id}/{q.slug('queued', token)}/{token}"

    def executing_uri(self, base: str, q: Query, token: int) -> str:
        return f"{base}/v1/statement/executing/{q.id}/{q.slug('executing', token)}/{token}"

    def _queued_page(self, base: str, q: Query, token: int) -> dict:
        # caller holds q.cond
        page = {"id": q.id, "infoUri": self.info_uri(base, q)}
        failed = q.final and (q.dispatch_error is not None or not q.dispatched and q.error is not None
                              and q.error.error_name in ("USER_CANCELED", "ABANDONED_QUERY"))
        if failed:
            err = q.dispatch_error or q.error
            page["stats"] = self.stats(q, queued_page=True)
            page["stats"]["state"] = "FAILED"
            page["stats"]["queued"] = False
            page["error"] = err.to_wire()
        else:
            if q.dispatched:
                page["nextUri"] = self.executing_uri(base, q, 0)
            else:
                page["nextUri"] = self.queued_uri(base, q, token + 1)
            page["stats"] = self.stats(q, queued_page=True)
        page["warnings"] = []
        return page

    def post_page(self, base: str, q: Query) -> dict:
        with q.cond:
            return self._queued_page(base, q, 0)

    def queued_get(self, base: str, q: Query, slug: str, token: int, wait_s: float) -> dict:
        if not q.slug_valid("queued", slug, token):
            raise HttpError(404, "Query not found")
        deadline = time.monotonic() + wait_s
        with q.cond:
            if token != q.queued_token and token != q.queued_token + 1:
                raise HttpError(410, "Invalid token")
            q.queued_token = max(q.queued_token, token)
            q.last_heartbeat = time.monotonic()
            self._submit(q)

            def dispatched() -> bool:
                if q.final or q.engine_done:
                    return True
                # A statement that got a worker is dispatched once parsing had its chance to
                # fail, so syntax errors surface on a queued page as in Trino.
                return q.started_mono is not None and time.monotonic() - q.started_mono >= DISPATCH_GRACE_S

            while not dispatched():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                q.cond.wait(min(remaining, 0.05) if q.started_mono else remaining)
            if dispatched() and q.dispatch_error is None:
                if not (q.final and not q.dispatched and q.error is not None
                        and q.error.error_name in ("USER_CANCELED", "ABANDONED_QUERY")):
                    q.dispatched = True
            return self._queued_page(base, q, token)

    def _prepare_columns(self, q: Query) -> None:
        if q.wire_columns is not None or q.result is None:
            return
        caps = q.session.client_capabilities
        parametric = "PARAMETRIC_DATETIME" in caps
        cols = []
        transformers = []
        for c in q.result.columns:
            try:
                node = typesig.parse_type(c.type)
            except ValueError:
                node = None
            type_string = c.type
            if node is not None and not parametric and typesig.has_datetime(node):
                stripped = typesig.strip_datetime_precision(node)
                type_string = stripped.render()
                sig = typesig._signature(stripped, q.listener.legacy_type_signatures)
                transformers.append(node)
            else:
                sig = (typesig._signature(node, q.listener.legacy_type_signatures) if node is not None
                       else {"rawType": c.type, "arguments": []})
                # the type text as Trino prints a client type signature: parameters
                # separated by ", " (`decimal(10, 2)`, `row(amount decimal(10, 2))`)
                if node is not None:
                    type_string = node.render()
                transformers.append(None)
            cols.append({"name": c.name, "type": type_string, "typeSignature": sig})
        q.wire_columns = cols
        q.transformers = transformers if any(t is not None for t in transformers) else None

    def _take_rows(self, q: Query) -> list:
        rows = q.result.rows
        size = self.page_size(q.user)
        chunk = []
        budget = TARGET_RESULT_BYTES
        i = q.row_offset
        while i < len(rows) and len(chunk) < size:
            row = rows[i]
            if q.transformers is not None:
                row = [typesig.round_value(t, v) if t is not None else v for t, v in zip(q.transformers, row)]
            chunk.append(row)
            i += 1
            if len(chunk) % 64 == 1:
                # sample one row in 64 to keep pages near Trino's ~1 MB target
                budget -= 64 * len(json.dumps(row, separators=(",", ":"), default=str))
            if budget <= 0:
                break
        q.row_offset = i
        return chunk

    def executing_get(self, base: str, q: Query, slug: str, token: int, wait_s: float) -> Page:
        if not q.slug_valid("executing", slug, token):
            raise HttpError(404, "Query not found")
        with q.cond:
            q.last_heartbeat = time.monotonic()
            cached = self._cached(q, token)
            if cached is not None:
                return cached
        # wait for news without holding the lock (the condition releases it)
        deadline = time.monotonic() + wait_s
        with q.cond:
            while not (q.final or q.engine_done):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                q.cond.wait(remaining)
            cached = self._cached(q, token)
            if cached is not None:
                return cached
            return self._next_page(base, q, token)

    def _cached(self, q: Query, token: int) -> Page | None:
        if q.last_page is None:
            if token != 0:
                raise HttpError(404, "Query not found")
            return None
        if token == q.last_token:
            return q.last_page
        if token < q.last_token:
            raise HttpError(410, "Gone")
        if q.next_token is None or token != q.next_token:
            raise HttpError(404, "Query not found")
        return None

    def _next_page(self, base: str, q: Query, token: int) -> Page:
        # caller holds q.cond
        if not q.final and self.faults is not None:
            rule = self.faults.fail_query(q.user, q.exec_pages, q.sql)
            if rule is not None:
                q.cancelled.set()
                # the injected failure replaces whatever the engine produced
                q.error = TrinoError(rule.get("error_name", "GENERIC_INTERNAL_ERROR"),
                                     rule.get("message", "Injected failure"))
                self._finish_locked(q)
        page: dict = {"id": q.id, "infoUri": self.info_uri(base, q)}
        headers: list = []
        data = None
        if q.state == "FAILED":
            q.next_token = None
        elif q.result is not None:
            self._prepare_columns(q)
            chunk = self._take_rows(q)
            r = q.result
            if r.update_type is not None and q.update_count is None:
                if (len(r.rows) == 1 and len(r.columns) == 1
                        and r.columns[0].type == "bigint" and isinstance(r.rows[0][0], int)):
                    q.update_count = r.rows[0][0]
            headers = list(r.headers)
            if chunk:
                data = chunk
                q.next_token = token + 1
            else:
                q.next_token = None
                q.done_delivering = True
                q.state = "FINISHED"
                q.ended_mono = time.monotonic()
                q.cond.notify_all()
        else:
            q.next_token = token + 1

        if q.next_token is not None:
            page["partialCancelUri"] = (
                f"{base}/v1/statement/executing/partialCancel/{q.id}/1/"
                f"{q.slug('executing', q.next_token)}/{q.next_token}"
            )
            page["nextUri"] = self.executing_uri(base, q, q.next_token)
        if q.wire_columns is not None and q.state != "FAILED":
            page["columns"] = q.wire_columns
        if data is not None:
            page["data"] = data
        page["stats"] = self.stats(q)
        if q.state == "FAILED" and q.error is not None:
            page["error"] = q.error.to_wire()
        page["warnings"] = []
        if q.result is not None and q.result.update_type is not None and q.state != "FAILED":
            page["updateType"] = q.result.update_type
            if q.update_count is not None:
                page["updateCount"] = q.update_count
        result = Page(page, headers)
        q.last_token = token
        q.last_page = result
        q.exec_pages += 1
        return result

    # ------------------------------------------------------------------ lab views
    def describe(self) -> list[dict]:
        with self._lock:
            items = list(self.history)
        out = []
        for q in items:
            out.append({
                "id": q.id, "user": q.user, "sql": q.sql, "state": q.state,
                "error_name": q.error.error_name if q.error is not None else None,
                "delete_received": q.delete_received, "listener": q.listener.name,
                "source": q.source, "created": iso_millis(q.created_wall),
                "pages": q.exec_pages,
                "redirected_to": q.redirected_to, "redirect_hits": q.redirect_hits,
                "redirect_auth": list(q.redirect_auth),
                "scans": dict(q.scans),
            })
        return out

    def basic_info(self, base: str, q: Query) -> dict:
        stats = self.stats(q)
        elapsed = stats["elapsedTimeMillis"] / 1000.0
        info = {
            "queryId": q.id,
            "session": {"queryId": q.id, "user": q.user, "source": q.source,
                        "catalog": q.session.catalog, "schema": q.session.schema,
                        "timeZone": q.session.time_zone,
                        "clientCapabilities": sorted(q.session.client_capabilities)},
            "state": q.state,
            "scheduled": stats["scheduled"],
            "self": f"{base}/v1/query/{q.id}",
            "query": q.sql,
            "queryStats": {
                "createTime": iso_millis(q.created_wall),
                "elapsedTime": airlift_duration(elapsed),
                "queuedTime": airlift_duration(stats["queuedTimeMillis"] / 1000.0),
                "totalDrivers": stats["totalSplits"], "queuedDrivers": stats["queuedSplits"],
                "runningDrivers": stats["runningSplits"], "completedDrivers": stats["completedSplits"],
                "totalCpuTime": airlift_duration(stats["cpuTimeMillis"] / 1000.0),
            },
        }
        if "progressPercentage" in stats:
            info["queryStats"]["progressPercentage"] = stats["progressPercentage"]
        if q.result is not None and q.result.update_type:
            info["updateType"] = q.result.update_type
        if q.error is not None:
            info["errorType"] = q.error.error_type
            info["errorCode"] = {"code": q.error.error_code, "name": q.error.error_name,
                                 "type": q.error.error_type}
        return info


def new_node_id() -> str:
    return os.environ.get("FLOE_LAB_NODE_ID") or "lab-" + secrets.token_hex(4)
