"""Parsed statements, shared by statements that differ only in their quoted identifiers.

A client reading a fleet sends the same statement for every table, the table's name
(quoted) being the only difference. Parsing is most of the lab's own time per statement,
so the text is normalised first: every quoted identifier outside string literals and
comments becomes a placeholder, the normalised text is parsed once, and each statement
gets a copy of that tree with its own identifiers put back and every node's position
moved to where it is in the statement's own text (errors point where Trino would).

A normalised text that does not parse is not cached: the statement's own text is parsed,
so a syntax error is reported on it, as before.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict

import sqlglot
from sqlglot import exp

MAX_TEMPLATES = 256

_lock = threading.Lock()
_templates: OrderedDict[str, exp.Expression] = OrderedDict()


def placeholder(i: int) -> str:
    return f"__lab_ident_{i}__"


def normalise(sql: str) -> tuple[str, list[str], list[tuple[int, int]]]:
    """The text with each quoted identifier replaced by a placeholder, the identifiers
    (unescaped) and, per replacement, (offset in the normalised text of the character
    after it, how much longer the original was)."""
    out: list[str] = []
    idents: list[str] = []
    shifts: list[tuple[int, int]] = []
    n = len(sql)
    i = 0
    start = 0
    pos = 0  # length of the normalised text so far
    while i < n:
        c = sql[i]
        if c == "'":
            i += 1
            while i < n:
                if sql[i] == "'":
                    if i + 1 < n and sql[i + 1] == "'":
                        i += 2
                        continue
                    break
                i += 1
            i += 1
        elif c == "-" and sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
        elif c == "/" and sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == '"':
            j = i + 1
            while j < n:
                if sql[j] == '"':
                    if j + 1 < n and sql[j + 1] == '"':
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                break  # unterminated: left to the parser
            chunk = sql[start:i]
            out.append(chunk)
            pos += len(chunk)
            ph = f'"{placeholder(len(idents))}"'
            idents.append(sql[i + 1:j].replace('""', '"'))
            out.append(ph)
            pos += len(ph)
            shifts.append((pos, (j + 1 - i) - len(ph)))
            i = j + 1
            start = i
        else:
            i += 1
    out.append(sql[start:])
    return "".join(out), idents, shifts


def template(key: str) -> exp.Expression | None:
    with _lock:
        hit = _templates.get(key)
        if hit is not None:
            _templates.move_to_end(key)
            return hit
    try:
        tree = sqlglot.parse_one(key, read="trino")
    except Exception:  # noqa: BLE001 - the statement's own text is parsed instead
        return None
    if tree is None:
        return None
    with _lock:
        _templates[key] = tree
        while len(_templates) > MAX_TEMPLATES:
            _templates.popitem(last=False)
    return tree


def _fill(tree: exp.Expression, idents: list[str], shifts: list[tuple[int, int]]) -> exp.Expression:
    names = {placeholder(i): name for i, name in enumerate(idents)}
    ends = [p for p, _ in shifts]
    total = [0]
    for _, d in shifts:
        total.append(total[-1] + d)

    def moved(offset: int) -> int:
        return offset + total[bisect.bisect_right(ends, offset)]

    for node in tree.walk():
        if isinstance(node, exp.Identifier) and node.quoted and node.this in names:
            node.set("this", names[node.this])
        meta = getattr(node, "_meta", None)
        if meta:
            for k in ("start", "end"):
                if k in meta:
                    meta[k] = moved(meta[k])
    return tree


def parse_trino(sql: str) -> exp.Expression:
    """`sqlglot.parse_one(sql, read="trino")`, from a shared parse of its normalised text
    when it has one; raises what that raises."""
    key, idents, shifts = normalise(sql)
    shared = template(key) if idents else None
    if shared is None:
        return sqlglot.parse_one(sql, read="trino")
    return _fill(shared.copy(), idents, shifts)


def clear() -> None:
    with _lock:
        _templates.clear()
