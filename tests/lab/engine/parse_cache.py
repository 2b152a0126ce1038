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
import re
import threading
from collections import OrderedDict

import sqlglot
from sqlglot import exp

MAX_TEMPLATES = 256

_lock = threading.Lock()
_templates: OrderedDict[str, exp.Expression] = OrderedDict()


def placeholder(i: int) -> str:
    return f"__lab_ident_{i}__"


# what can hold a quoted identifier's quote without being one: string literals and comments
# (an unterminated one runs to the end), then quoted identifiers ("" escapes a quote)
_TOKENS = re.compile(
    r"'(?:[^']|'')*(?:'|\Z)"
    r"|--[^\n]*"
    r"|/\*.*?(?:\*/|\Z)"
    r'|"((?:[^"]|"")*)("|\Z)',
    re.S,
)


def normalise(sql: str) -> tuple[str, list[str], list[tuple[int, int]]]:
    """The text with each quoted identifier replaced by a placeholder, the identifiers
    (unescaped) and, per replacement, (offset in the normalised text of the character
    after it, how much longer the original was)."""
    out: list[str] = []
    idents: list[str] = []
    shifts: list[tuple[int, int]] = []
    start = 0
    pos = 0  # length of the normalised text so far
    for m in _TOKENS.finditer(sql):
        if m.group(2) is None:
            continue  # a literal or a comment
        if m.group(2) == "":
            break  # unterminated: left to the parser
        chunk = sql[start:m.start()]
        out.append(chunk)
        pos += len(chunk)
        ph = f'"{placeholder(len(idents))}"'
        idents.append(m.group(1).replace('""', '"'))
        out.append(ph)
        pos += len(ph)
        shifts.append((pos, (m.end() - m.start()) - len(ph)))
        start = m.end()
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


def _fill(tree: exp.Expression, idents: list[str], shifts: list[tuple[int, int]],
          keep: frozenset[int] = frozenset()) -> exp.Expression:
    """Put the identifiers back (but those whose index is in `keep`, left as placeholders)
    and move every node's position to the statement's own text."""
    names = {placeholder(i): name for i, name in enumerate(idents) if i not in keep}
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
