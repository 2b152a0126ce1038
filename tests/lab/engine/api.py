"""The contract between the lab's Trino-protocol server (tests/lab/trino) and its SQL
engine (tests/lab/engine).

The server owns HTTP, paging, stats, auth, TLS, faults and cancellation. The engine owns
SQL: it parses Trino SQL, executes it for real over the Iceberg warehouse, and hands back
columns with Trino type strings and rows already in Trino's JSON wire encoding.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


@dataclass
class Session:
    """Everything the client's headers put in the session."""

    user: str
    catalog: str | None = None
    schema: str | None = None
    # X-Trino-Time-Zone, else the coordinator's zone (the server decides the default).
    time_zone: str = "UTC"
    # X-Trino-Session pairs; catalog properties appear as "catalog.prop".
    properties: dict[str, str] = field(default_factory=dict)
    # X-Trino-Client-Capabilities (e.g. {"PARAMETRIC_DATETIME"}).
    client_capabilities: frozenset[str] = frozenset()
    source: str | None = None
    # The Trino version this listener impersonates (e.g. 480): it decides result shapes
    # (ALTER TABLE EXECUTE `rows` up to 480, metrics from 481), whether
    # <catalog>.system.iceberg_tables exists (475+), and similar version-dependent facts.
    server_version: int = 480
    query_id: str = ""


@dataclass
class Column:
    name: str
    # Trino's type string, e.g. "bigint", "varchar", "timestamp(3) with time zone",
    # "map(varchar, varchar)", "row(district varchar, filed_at_day date)", "array(bigint)".
    # Row field names that need it are double-quoted as Trino prints them.
    type: str


@dataclass
class Progress:
    """Reported by the engine while a statement runs; the server turns it into `stats`."""

    total_splits: int = 0
    completed_splits: int = 0
    running_splits: int = 0
    processed_rows: int = 0
    processed_bytes: int = 0
    physical_input_bytes: int = 0
    physical_written_bytes: int = 0


@dataclass
class Result:
    columns: list[Column]
    # Rows in wire encoding (JSON-ready): bigint as int, decimal as str, double as float or
    # "NaN"/"Infinity", timestamps as Trino text in the session zone, ROW as list, MAP as
    # dict with string keys, varbinary as base64 str.
    rows: list[list[Any]]
    # e.g. "ALTER TABLE EXECUTE", "SET SESSION"; None for queries.
    update_type: str | None = None
    # Response headers to add (X-Trino-Set-Session etc.), as (name, value) pairs.
    headers: list[tuple[str, str]] = field(default_factory=list)


ProgressFn = Callable[[Progress], None]


class EngineProtocol(Protocol):
    def execute(
        self,
        sql: str,
        session: Session,
        progress: ProgressFn,
        cancelled: threading.Event,
    ) -> Result:
        """Run one statement to completion (thread-safe; called concurrently).

        Raises common.errors.TrinoError for every failure a client should see. Must check
        `cancelled` between units of work and raise TrinoError("USER_CANCELED", "Query was
        canceled") when it is set; a mutation that is cancelled before its commit commits
        nothing.
        """
        ...

    def control(self, op: str, payload: dict) -> dict:
        """Lab-only operations reached through the server's control endpoint
        (POST /_lab/engine/<op>), e.g. "clone_table", "expected", "reload"."""
        ...


# How the server obtains an engine:
#
#     from lab.engine import load_engine
#     engine = load_engine({"iceberg": "/abs/.lab/warehouses/seed", "scale": "/abs/…/scale"})
#
# Each value is a scenario directory written by scenarios/generate.py: it holds
# `catalog.db` (pyiceberg SqlCatalog on sqlite), `warehouse/` and `expected.json`.
