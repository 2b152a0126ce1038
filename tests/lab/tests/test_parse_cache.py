"""Statements that differ only in quoted identifiers share one parse: the tree each gets is
the one its own text parses to, positions included."""

import sqlglot

import pytest

from ..engine import parse_cache
from ..engine.query import node_pos
from ..engine.scans import scans_of_sql

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

ONE = 'SELECT count(*) AS "n", \'say "hi"\' AS s -- "not" an identifier\nFROM "cat"."s"."a$files" f /* "nor" this */ WHERE f.x = \'it\'\'s\''
TWO = ONE.replace('"a$files"', '"a much longer ""name""$files"')


def test_strings_and_comments_keep_their_quotes():
    key, idents, _ = parse_cache.normalise(ONE)
    assert idents == ["n", "cat", "s", "a$files"]
    assert "'say \"hi\"'" in key and '"not"' in key and '"nor"' in key


def test_a_shared_parse_is_the_statement_own_parse():
    parse_cache.clear()
    for sql in (ONE, TWO, ONE):
        own = sqlglot.parse_one(sql, read="trino")
        shared = parse_cache.parse_trino(sql)
        assert shared == own
        assert shared.sql("trino") == own.sql("trino")
        tables = list(own.find_all(sqlglot.exp.Table))
        assert [node_pos(sql, t) for t in shared.find_all(sqlglot.exp.Table)] == [node_pos(sql, t) for t in tables]
    key, _, _ = parse_cache.normalise(TWO)
    assert parse_cache.normalise(ONE)[0] == key


def test_scans_name_each_statement_tables():
    assert scans_of_sql(ONE) == {"cat.s.a$files": 1}
    assert scans_of_sql(TWO) == {'cat.s.a much longer "name"$files': 1}


def test_text_that_does_not_parse_raises_as_before():
    bad = 'SELECT "x" FROM ('
    try:
        parse_cache.parse_trino(bad)
    except sqlglot.errors.ParseError as e:
        try:
            sqlglot.parse_one(bad, read="trino")
        except sqlglot.errors.ParseError as e2:
            assert str(e) == str(e2)
            return
    raise AssertionError("a parse error was expected")
