//! What floe learned a server cannot read, so that it never pays for the same failure twice.

use std::collections::{HashMap, HashSet};

use super::model::TableRef;

/// Which tables' `$entries` the server failed to read, and per catalog how many tables
/// failed and how many read it. A catalog whose first [`ENTRIES_GIVE_UP`] tables all failed
/// and none read it is read through `$files` from then on: on the real Trino 476 every
/// cold read of a pyiceberg-written table cost a failed `$entries` statement (its whole
/// planning, ~0.9 s) before the `$files` one, 300 failed statements in a 300-table cold
/// start. One table that reads it keeps `$entries` for the catalog's others.
#[derive(Debug, Default)]
pub struct EntriesRecord {
    tables: HashSet<TableRef>,
    catalogs: HashMap<String, (u32, u32)>,
}

/// Tables of one catalog whose `$entries` failed, none read, before the catalog is read
/// through `$files` (a few, as that many run at once at a cold start).
pub const ENTRIES_GIVE_UP: u32 = 3;

impl EntriesRecord {
    pub fn failed(&mut self, t: &TableRef) {
        if self.tables.insert(t.clone()) {
            self.catalogs.entry(t.catalog.clone()).or_default().0 += 1;
        }
    }

    pub fn read(&mut self, t: &TableRef) {
        self.catalogs.entry(t.catalog.clone()).or_default().1 += 1;
    }

    pub fn unreadable(&self, t: &TableRef) -> bool {
        self.tables.contains(t)
            || self
                .catalogs
                .get(&t.catalog)
                .is_some_and(|(failed, read)| *failed >= ENTRIES_GIVE_UP && *read == 0)
    }
}

#[cfg(test)]
mod tests;
