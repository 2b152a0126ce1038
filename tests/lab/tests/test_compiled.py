"""Statements that differ only in the tables they name share one compilation (engine/
compiled.py): each still gets the result and the errors its own text gives."""

from __future__ import annotations

import threading

import pytest

from ..engine import compiled, parse_cache
from ..engine.query import QueryRun, parse
from .test_engine_common import engine, fails, run, seed, session  # noqa: F401

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

SHAPE = ('SELECT count(*) AS "files", sum(f.file_size_in_bytes) AS bytes, max(f.record_count) AS most '
         'FROM "iceberg"."zoning"."{t}$files" f WHERE f.content = 0')
PARTS = 'SELECT f.partition AS p, count(*) AS n FROM "iceberg"."zoning"."{t}$files" f GROUP BY 1 ORDER BY 2 DESC'


def own(engine, sql: str):
    """The statement compiled on its own, as without the cache."""
    return QueryRun(engine, sql, session(), threading.Event()).run(parse(sql))


def test_tables_only_placeholders_are_shared_and_the_rest_stay_in_the_key():
    key, idents, _ = parse_cache.normalise(SHAPE.format(t="documents"))
    only = compiled.table_only(compiled.table_parts(key, parse_cache.template(key)), idents)
    assert [idents[i] for i in sorted(only)] == ["iceberg", "zoning", "documents$files"]
    assert "files" in idents and idents.index("files") not in only
    # a table name the statement also uses as a qualifier stays in the key
    sql = 'SELECT "a"."x" FROM "s"."A"'
    key, idents, _ = parse_cache.normalise(sql)
    parts = compiled.table_parts(key, parse_cache.template(key))
    assert [idents[i] for i in sorted(parts)] == ["s", "A"]
    assert [idents[i] for i in sorted(compiled.table_only(parts, idents))] == ["s"]


def test_each_table_gets_its_own_result_from_a_shared_compilation(engine):
    compiled.clear()
    tables = ["documents", "parcels", "documents", "staging", "parcels"]
    for t in tables:
        sql = SHAPE.format(t=t)
        shared = run(engine, sql)
        mine = own(engine, sql)
        assert shared.rows == mine.rows, t
        assert [(c.name, c.type) for c in shared.columns] == [(c.name, c.type) for c in mine.columns]
    with compiled._lock:
        forms = [f for v in compiled._compiled.values() for f in v.values()]
    # partitioned or not, `$files` of the three has the same columns but for `partition`
    assert 1 <= len(forms) <= 3


def test_a_table_of_other_columns_is_compiled_on_its_own(engine):
    compiled.clear()
    a = run(engine, PARTS.format(t="documents"))
    assert a.rows and sorted(map(str, own(engine, PARTS.format(t="documents")).rows)) == sorted(map(str, a.rows))
    # staging is unpartitioned: its `$files` has no partition column, whatever was compiled before
    e = fails(engine, PARTS.format(t="staging"))
    assert e.error_name == "COLUMN_NOT_FOUND", e
    assert "partition" in e.message and "__lab_ident_" not in e.message
    assert (e.line, e.column) == (1, 8)


def test_a_missing_table_fails_as_its_text_says_after_a_shared_run(engine):
    compiled.clear()
    run(engine, SHAPE.format(t="documents"))
    e = fails(engine, SHAPE.format(t="no_such_table"))
    assert e.error_name == "TABLE_NOT_FOUND"
    assert "iceberg.zoning.no_such_table$files" in e.message
    assert e.line == 1 and e.column is not None
