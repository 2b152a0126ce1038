"""Parsed manifest entries, shared across queries and commits.

A manifest file never changes once written, so its parsed entries can be reused: the
metadata tables, optimize's file selection and pyiceberg's own commit path (which reads
every manifest of the snapshot two or three times) all hit this cache. Entries are shared
objects; nothing in the engine mutates them (pyiceberg's inheritance of sequence numbers on
read is idempotent).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

MAX_ENTRIES = 400_000

_lock = threading.Lock()
_cache: OrderedDict[tuple[str, bool], list] = OrderedDict()
_size = 0
_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    from pyiceberg.manifest import ManifestFile

    original = ManifestFile.fetch_manifest_entry

    def fetch_manifest_entry(self, io, discard_deleted: bool = True):
        global _size
        key = (self.manifest_path, discard_deleted)
        with _lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
                return list(hit)
        entries = original(self, io, discard_deleted=discard_deleted)
        with _lock:
            if key not in _cache:
                _cache[key] = entries
                _size += len(entries)
                while _size > MAX_ENTRIES and _cache:
                    _k, v = _cache.popitem(last=False)
                    _size -= len(v)
        return list(entries)

    ManifestFile.fetch_manifest_entry = fetch_manifest_entry
    _installed = True


def clear() -> None:
    global _size
    with _lock:
        _cache.clear()
        _size = 0
