"""Fault rules injected through the control endpoint (POST /_lab/faults).

A rule is scoped to the requests of queries submitted by one X-Trino-User, or to every
request (user null). `count` is how many times it fires; absent or null means until
cleared. `on` picks the requests it applies to: `post` (POST /v1/statement), `next`
(anything on a queued/executing nextUri), `info` (/v1/info*), `queries` (the coordinator's
query list, GET /v1/query), `any` (default). A rule with
`sql_contains` fires only on the POST of a statement whose text holds that string (a
refresh's file read, say, and no other statement of the same user).

Three kinds shape the JSON answer of a request that was processed normally (one count per
answer they change): `big_page` pads the next page carrying `data` with an unknown field of
`mb` MB, `extra_fields` adds unknown fields to every object of the answer (top level, stats,
columns, type signatures, error, ...; never inside `data`), `redirect_host` points the
page's `nextUri` at another `host` and/or `scheme` (and `port`).

Besides the transport faults, two kinds shape a query's execution (one count per query):
`hold` keeps it QUEUED for `ms` before it reaches the engine, `slow` makes it run `ms`
longer, reporting split progress and honouring cancellation meanwhile.

A rule with `sql` (the stand-in only) applies only to the requests and queries of
statements whose text contains it (`"sql": "EXECUTE optimize"`: the optimize, not the
reads a client sends around it).

`server_time` adds a fixed server time of `ms` to every statement (not every HTTP request)
of the user it is scoped to, as a real coordinator's planning and scheduling costs: the
statement waits that long before the engine runs it, without holding one of the lab's
worker threads, so statements in flight at once overlap their server time as on a cluster.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

KINDS = {"status", "latency", "drop", "malformed", "fail_query", "hold", "slow",
         "server_time", "big_page", "extra_fields", "redirect_host"}
# per-query kinds, taken once per query when it is submitted
QUERY_KINDS = {"hold", "slow", "server_time"}
# kinds that reshape a JSON answer after it was produced
PAGE_KINDS = {"big_page", "extra_fields", "redirect_host"}
TARGETS = {"post", "next", "info", "queries", "any"}


class FaultError(ValueError):
    pass


@dataclass
class Rule:
    user: str | None
    spec: dict
    remaining: int | None
    fired: int = 0

    @property
    def kind(self) -> str:
        return self.spec["kind"]

    def applies(self, target: str, user: str | None, sql: str | None = None) -> bool:
        if self.remaining is not None and self.remaining <= 0:
            return False
        if self.user is not None and self.user != user:
            return False
        wanted = self.spec.get("sql")
        if wanted is not None and (sql is None or wanted not in sql):
            return False
        posted = self.spec.get("sql_contains")
        if posted is not None and (target != "post" or sql is None or posted not in sql):
            return False
        on = self.spec.get("on", "any")
        return on == "any" or on == target

    def consume(self) -> None:
        self.fired += 1
        if self.remaining is not None:
            self.remaining -= 1

    def describe(self) -> dict:
        return {"user": self.user, **self.spec, "remaining": self.remaining, "fired": self.fired}


def validate(spec: dict) -> dict:
    if not isinstance(spec, dict):
        raise FaultError("a rule must be an object")
    kind = spec.get("kind")
    if kind not in KINDS:
        raise FaultError(f"unknown fault kind {kind!r} (one of {sorted(KINDS)})")
    on = spec.get("on", "any")
    if on not in TARGETS:
        raise FaultError(f"unknown 'on' {on!r} (one of {sorted(TARGETS)})")
    if "sql" in spec and (not isinstance(spec["sql"], str) or not spec["sql"]):
        raise FaultError("'sql' must be a non-empty string (text the statement contains)")
    if spec.get("sql_contains") is not None and not isinstance(spec["sql_contains"], str):
        raise FaultError("'sql_contains' must be a string (a rule with it fires on a POST of a statement holding it)")
    count = spec.get("count")
    if count is not None and (not isinstance(count, int) or count < 0):
        raise FaultError("'count' must be a non-negative integer or null")
    if kind == "status":
        status = spec.get("status")
        if not isinstance(status, int) or not 100 <= status <= 599:
            raise FaultError("'status' must be an HTTP status code")
        headers = spec.get("headers", {})
        if not isinstance(headers, dict):
            raise FaultError("'headers' must be an object of header name to value")
        for name, value in headers.items():
            if not isinstance(value, (str, int, float)) and not (
                    isinstance(value, dict) and isinstance(value.get("http_date_in_s"), (int, float))):
                raise FaultError(f"header {name!r}: a value is a string, a number or "
                                 "{\"http_date_in_s\": seconds}")
        if spec.get("body") is not None and not isinstance(spec["body"], str):
            raise FaultError("'body' must be a string")
    if kind == "big_page":
        mb = spec.get("mb")
        if not isinstance(mb, (int, float)) or not 0 < mb <= 1024:
            raise FaultError("'mb' must be a number of megabytes in (0, 1024]")
    if kind == "redirect_host":
        if spec.get("host") is None and spec.get("scheme") is None and spec.get("port") is None:
            raise FaultError("redirect_host needs 'host', 'scheme' or 'port'")
        if spec.get("scheme") not in (None, "http", "https"):
            raise FaultError("'scheme' must be http or https")
        if spec.get("port") is not None and not isinstance(spec["port"], int):
            raise FaultError("'port' must be an integer")
    if kind in ("latency", "hold", "slow", "server_time") and not isinstance(spec.get("ms"), (int, float)):
        raise FaultError("'ms' must be a number")
    if kind == "server_time" and not 0 <= spec["ms"] <= 600_000:
        raise FaultError("'ms' must be between 0 and 600000")
    if kind == "fail_query":
        from ..common.errors import STANDARD_ERRORS

        name = spec.get("error_name", "GENERIC_INTERNAL_ERROR")
        if name not in STANDARD_ERRORS:
            raise FaultError(f"unknown Trino error name {name!r}")
        after = spec.get("after_pages", 0)
        if not isinstance(after, int) or after < 0:
            raise FaultError("'after_pages' must be a non-negative integer")
    return dict(spec)


class FaultStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[Rule] = []

    def add(self, user: str | None, specs: list) -> int:
        if not isinstance(specs, list):
            raise FaultError("'rules' must be a list")
        rules = [Rule(user, validate(s), s.get("count")) for s in specs]
        with self._lock:
            self._rules.extend(rules)
            return len(self._rules)

    def clear(self, user: str | None, everything: bool) -> int:
        with self._lock:
            before = len(self._rules)
            if everything:
                self._rules.clear()
            else:
                self._rules = [r for r in self._rules if r.user != user]
            return before - len(self._rules)

    def describe(self) -> list[dict]:
        with self._lock:
            return [r.describe() for r in self._rules]

    def for_request(self, target: str, user: str | None, sql: str | None = None) -> tuple[float, dict | None]:
        """Total latency (ms) to add and the first transport-level rule that fires (status,
        drop or malformed), consuming counts. `sql`: the statement the request is about (a
        rule with `sql` fires only on its requests; one with `sql_contains` only on the POST
        of a statement holding that text)."""
        latency = 0.0
        action = None
        with self._lock:
            for r in self._rules:
                if (r.kind == "fail_query" or r.kind in QUERY_KINDS or r.kind in PAGE_KINDS
                        or not r.applies(target, user, sql)):
                    continue
                if r.kind == "latency":
                    latency += float(r.spec["ms"])
                    r.consume()
                elif action is None:
                    action = dict(r.spec)
                    r.consume()
        return latency, action

    def for_page(self, target: str, user: str | None, has_data: bool, has_next: bool) -> list[dict]:
        """The answer-shaping rules that fire for one JSON answer, consuming counts:
        `big_page` only on a page carrying data, `redirect_host` only on one with a nextUri."""
        out = []
        with self._lock:
            for r in self._rules:
                if r.kind not in PAGE_KINDS or not r.applies(target, user):
                    continue
                if r.kind == "big_page" and not has_data:
                    continue
                if r.kind == "redirect_host" and not has_next:
                    continue
                r.consume()
                out.append(dict(r.spec))
        return out

    def take_query_rule(self, kind: str, user: str | None, sql: str | None = None) -> dict | None:
        """A `hold`, `slow` or `server_time` rule for a query of `user` (its text `sql`) being
        submitted, consuming one count."""
        with self._lock:
            for r in self._rules:
                if r.kind == kind and r.applies(r.spec.get("on", "any"), user, sql):
                    r.consume()
                    return dict(r.spec)
        return None

    def fail_query(self, user: str | None, pages_served: int, sql: str | None = None) -> dict | None:
        """The fail_query rule that fires for a query of `user` (its text `sql`) about to get
        its page number `pages_served` (0-based, executing pages), consuming one count."""
        with self._lock:
            for r in self._rules:
                if r.kind != "fail_query" or not r.applies("next", user, sql):
                    continue
                if pages_served >= int(r.spec.get("after_pages", 0)):
                    r.consume()
                    return dict(r.spec)
        return None
