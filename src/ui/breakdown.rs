//! A table's health breakdown as the side panel and the `i` popup draw it: its verdict,
//! one line per finding, the figures behind them, and the queries that read it.

use crate::app::state::State;
use crate::fmt::human_bytes;
use crate::health::Severity;
use crate::lakehouse::model::TableRef;

/// The facts behind the newer rules, one line each, only those the server reported.
/// `waiting`: the verdict says the small files wait for a compaction
/// ([`crate::health::Health::waits_for_compaction`]); small files it cannot merge (one
/// per partition, what an optimize leaves) or too few to matter are not "waiting".
pub fn detail_facts(
    st: &crate::lakehouse::model::TableStats,
    waiting: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(w) = st.oldest_small_file_at
        && st.small_files > 0
    {
        let age = crate::fmt::human_duration((now - w).num_seconds().max(0));
        out.push(if waiting {
            format!("small files waiting since {age} (oldest live small file)")
        } else {
            let why = if st.max_partition_small_files.is_some_and(|m| m < 2) {
                "no partition holds two for a compaction to merge"
            } else {
                "too few to be worth a compaction"
            };
            format!(
                "{} small files left, not waiting for a compaction ({why}); the oldest from {age} ago",
                crate::fmt::thousands(st.small_files)
            )
        });
    }
    if st.delete_files > 0 {
        out.push(format!(
            "deletes: {} position files ({} rows), {} equality files ({} keys), {}",
            st.position_delete_files,
            st.position_deletes,
            st.equality_delete_files,
            st.equality_deletes,
            human_bytes(st.delete_bytes)
        ));
    }
    let mut meta = Vec::new();
    if let Some(m) = st.manifests {
        meta.push(format!(
            "{m} manifests ({} small{})",
            st.small_manifests.unwrap_or(0),
            st.manifest_bytes
                .map(|b| format!(", {}", human_bytes(b)))
                .unwrap_or_default()
        ));
    }
    if let Some(m) = st.metadata_files {
        meta.push(format!("{m} metadata files"));
    }
    if st.large_files > 0 {
        meta.push(format!("{} files over the large-file line", st.large_files));
    }
    if !meta.is_empty() {
        out.push(meta.join(", "));
    }
    out
}

/// One line per finding, then the table's figures, its last failure and the queries that
/// read it: the health popup and the side panel.
pub fn health_breakdown(s: &State, t: &TableRef) -> Vec<(Severity, String)> {
    let Some(row) = s.tables.row(t) else {
        return vec![(Severity::Unknown, format!("{t} is not loaded"))];
    };
    let mut out = Vec::new();
    if let Some(h) = &row.health {
        out.push((
            h.status,
            format!("{} — score {}/100", h.status.label(), h.score),
        ));
        for f in &h.findings {
            let pen = if f.penalty > 0 {
                format!(" (−{})", f.penalty)
            } else {
                String::new()
            };
            out.push((
                f.severity,
                format!("[{}] {}{pen}: {}", f.severity.short(), f.rule, f.message),
            ));
        }
        if h.findings.is_empty() {
            out.push((Severity::Ok, "no findings: every rule passes".into()));
        }
    }
    if let Some(st) = row.stats() {
        out.push((Severity::Info, String::new()));
        out.push((
            Severity::Info,
            format!(
                "target {} ({}), {} data files, {} small, avg {}, {} total",
                human_bytes(st.target_file_size),
                if st.target_from_property {
                    "write.target-file-size-bytes"
                } else {
                    "config default"
                },
                st.data_files,
                st.small_files,
                st.avg_file_size()
                    .map(human_bytes)
                    .unwrap_or_else(|| "-".into()),
                human_bytes(st.total_bytes)
            ),
        ));
        let waiting = row
            .health
            .as_ref()
            .is_some_and(crate::health::Health::waits_for_compaction);
        for line in detail_facts(st, waiting, s.now) {
            out.push((Severity::Info, line));
        }
        if st.files_unread {
            out.push((
                Severity::Info,
                if s.tables.standing(row) != crate::refresh::Standing::Idle {
                    format!(
                        "files from the newest snapshot's totals (at least {} small); its files are being read",
                        st.small_files
                    )
                } else {
                    format!(
                        "files from the newest snapshot's totals: fewer than {} data files, no small-file verdict applies, so their sizes are not read",
                        s.health.min_small_files
                    )
                },
            ));
        }
    }
    if let Some(at) = row.read.checked_at {
        out.push((
            Severity::Info,
            format!(
                "last checked {} ago{}",
                crate::fmt::human_duration(s.now.signed_duration_since(at).num_seconds()),
                match s.tables.refresh.policy.full_every {
                    Some(e) => format!(
                        " (every table is checked within {}; a write through this coordinator within a refresh)",
                        humantime::format_duration(e)
                    ),
                    None => String::new(),
                }
            ),
        ));
    }
    if let Some(e) = row.error() {
        out.push((Severity::Unknown, format!("last load failed: {e}")));
    }
    let queries = crate::app::query_history::lines(s, t);
    if !queries.is_empty() {
        out.push((Severity::Info, String::new()));
        out.extend(queries.into_iter().map(|l| (Severity::Info, l)));
    }
    out
}
