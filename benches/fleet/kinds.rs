//! What a statement reads, by its text: the Iceberg metadata tables it references, a scan
//! of the data table's hidden columns, the coordinator's own tables, the listing. A
//! statement's kind is the set of what it reads (`$snapshots + $manifests + $properties`),
//! the same for floe's statements and the script's, so the two can be set side by side
//! whatever floe's statement shapes become.

/// The metadata tables a statement can reference, as they appear in its text (the name
/// ends the quoted identifier: `"orders_000$files"`).
const METADATA_TABLES: &[&str] = &[
    "$snapshots",
    "$files",
    "$entries",
    "$all_entries",
    "$manifests",
    "$all_manifests",
    "$properties",
    "$metadata_log_entries",
    "$partitions",
    "$history",
    "$refs",
];

/// What `sql` reads, in a fixed order: each metadata table it references, `"$path"` /
/// `"$file_modified_time"` (a scan of the data table's files), `system.runtime.queries`,
/// the listing (`system.iceberg_tables` or `information_schema.tables`); "other" when
/// none of these.
pub(crate) fn reads(sql: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if sql.contains("iceberg_tables") || sql.contains("information_schema.tables") {
        out.push("listing");
    }
    if sql.contains("system.runtime.queries") {
        out.push("system.runtime.queries");
    }
    for t in METADATA_TABLES {
        if sql.contains(&format!("{t}\"")) || sql.contains(&format!("{t}`")) {
            out.push(t);
        }
    }
    if sql.contains("\"$path\"") || sql.contains("\"$file_modified_time\"") {
        out.push("\"$path\"/\"$file_modified_time\" scan");
    }
    if out.is_empty() {
        out.push("other");
    }
    out
}

/// The kind of a statement: what it reads, joined.
pub(crate) fn kind(sql: &str) -> String {
    reads(sql).join(" + ")
}

/// How many tables' metadata the statement loads: each metadata-table reference, and
/// each scan of a data table's hidden columns.
pub(crate) fn references(sql: &str) -> u64 {
    let meta: usize = METADATA_TABLES
        .iter()
        .map(|t| sql.matches(&format!("{t}\"")).count())
        .sum();
    (meta + sql.matches("\"$file_modified_time\"").count().min(1)) as u64
}
