//! Drafting a maintenance plan, for the TUI's confirm popup and `floe maintain` alike:
//! what they read from the lakehouse before a plan can be built (threshold, layout,
//! partitions), the partitions a `--partition` spec names, and the measured rate an ETA
//! is computed from.

use crate::lakehouse::model::{PartitionStats, TableNameError, TableRef};
use crate::lakehouse::plan::{
    PartitioningError, Plan, PlanRefusal, Procedure, TableLayout, live_specs_sql, optimize_plan,
    partition_path_sql, spec_fields_from_path, table_plan,
};
use crate::lakehouse::queries::{Lakehouse, PartitionList};
use crate::mutation::audit::AuditLog;
use crate::mutation::contention::{self, Others};
use crate::mutation::eta::{self, Measured};
use crate::trino::TrinoError;
use crate::units::UnitError;

/// The maintenance an operator asks for, before the lakehouse is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaintenanceKind {
    /// `partitions: None` means the table's small-file partitions (or the whole table
    /// when it is unpartitioned).
    Optimize,
    ExpireSnapshots {
        retention_secs: u64,
    },
    RemoveOrphanFiles {
        retention_secs: u64,
    },
    OptimizeManifests,
}

/// Everything needed to (re)build a plan purely, e.g. when the operator toggles grouping.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanDraft {
    pub table: TableRef,
    pub procedure: Procedure,
    pub layout: TableLayout,
    pub partitions: Vec<PartitionStats>,
    /// Why the plan covers what it covers, when that is not what was asked (shown with
    /// the confirmation).
    pub note: Option<String>,
    /// The plan opens grouped (bounded statements over many partitions).
    pub grouped: bool,
    /// An optimize's measured rate (earlier optimizes on this coordinator), when read.
    pub measured: Option<Measured>,
}

impl PlanDraft {
    /// The same draft over `partitions` only (a part of an incremental plan).
    pub fn over(&self, partitions: Vec<PartitionStats>) -> PlanDraft {
        PlanDraft {
            partitions,
            ..self.clone()
        }
    }

    pub fn build(&self, grouped: bool) -> Result<Plan, PlanRefusal> {
        match &self.procedure {
            Procedure::Optimize { threshold } => optimize_plan(
                &self.table,
                &self.layout,
                &self.partitions,
                *threshold,
                grouped,
            ),
            other => Ok(table_plan(&self.table, other.clone())),
        }
    }
}

/// Why a plan could not be drafted: a read of what it needs failed on Trino (typed, with
/// what was being read), what was asked does not name a table, a size, a duration or
/// partitions of it, or the table cannot be planned as asked.
#[derive(Clone, Debug, thiserror::Error)]
pub enum PlanError {
    #[error("reading {what}: {source}")]
    Read {
        what: String,
        source: Box<TrinoError>,
    },
    #[error(transparent)]
    Refused(#[from] PlanRefusal),
    #[error(transparent)]
    Table(#[from] TableNameError),
    /// `flag`: the command-line option (`--threshold`, `--retention`).
    #[error("{flag}: {source}")]
    Argument {
        flag: &'static str,
        source: UnitError,
    },
    #[error(transparent)]
    Partition(#[from] PartitionSpecError),
    #[error(
        "reading the partition spec {spec_id} of {table}: its data file {file} has no live row to read its partition path from"
    )]
    NoPartitionPath {
        table: TableRef,
        spec_id: i32,
        file: String,
    },
    #[error("{table}: spec {spec_id}: {source}")]
    SpecPath {
        table: TableRef,
        spec_id: i32,
        source: Box<PartitioningError>,
    },
    /// Another write runs on the table (any client: its maintenance DAG, a colleague's
    /// floe, a cron): the plan is not drafted.
    #[error(transparent)]
    Contended(#[from] super::contention::Contended),
    /// Whether another write runs on the table could not be read.
    #[error(transparent)]
    Unsure(#[from] super::contention::Unknown),
    /// No partition holds two small files: nothing an optimize could merge.
    #[error(
        "no partition of {0} holds two or more small files: optimize cannot merge them (the table is over-partitioned: its partitioning, not a compaction, is the fix)"
    )]
    OverPartitioned(TableRef),
}

/// A `--partition` spec that names no partition of the table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PartitionSpecError {
    #[error("--partition {0:?}: expected COLUMN=VALUE or COLUMN IS NULL, joined by /")]
    Syntax(String),
    #[error("--partition {0:?}: \"(spec N)\" takes a spec id")]
    SpecId(String),
    /// `fields`: the table's partition fields.
    #[error(
        "--partition {spec:?}: the table has no partition field {field:?} (fields: {})",
        fields.join(", ")
    )]
    NoField {
        spec: String,
        field: String,
        fields: Vec<String>,
    },
    /// `null_field`: a field given `=null`, which may have meant `IS NULL`.
    #[error(
        "--partition {spec:?} matches no partition holding data files{}",
        null_hint(null_field)
    )]
    NoMatch {
        spec: String,
        null_field: Option<String>,
    },
}

fn null_hint(field: &Option<String>) -> String {
    match field {
        Some(k) => {
            format!(" (a NULL value is spelled '{k} IS NULL'; {k}=null is the string 'null')")
        }
        None => String::new(),
    }
}

impl PlanError {
    fn read(what: impl Into<String>) -> impl FnOnce(TrinoError) -> PlanError {
        let what = what.into();
        move |source| PlanError::Read {
            what,
            source: Box::new(source),
        }
    }
}

/// The small-file threshold of a table.
pub async fn threshold_of(lake: &Lakehouse, t: &TableRef) -> Result<u64, PlanError> {
    small_file_threshold(lake, t)
        .await
        .map_err(PlanError::read(format!("the properties of {t}")))
}

/// The partition layout of a table.
pub async fn layout_of(lake: &Lakehouse, t: &TableRef) -> Result<TableLayout, PlanError> {
    lake.table_layout(t)
        .await
        .map_err(PlanError::read(format!("the layout of {t}")))
}

/// The layout of a table with the partition specs of its live data files (see
/// [`TableLayout::live_specs`]): one read of `$files`, then the `"$partition"` path of one
/// file of each spec (one split, one row), so a plan knows which spec each partition
/// belongs to and which fields that spec has.
pub async fn layout_with_specs(lake: &Lakehouse, t: &TableRef) -> Result<TableLayout, PlanError> {
    let mut layout = layout_of(lake, t).await?;
    if layout.partitioning.is_empty() {
        return Ok(layout);
    }
    let what = format!("the partition specs of the live files of {t}");
    let out = lake
        .client
        .query(&live_specs_sql(t))
        .await
        .map_err(PlanError::read(what.clone()))?;
    for r in &out.rows {
        let Some(id) = r
            .get("spec")
            .and_then(crate::trino::Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
        else {
            continue;
        };
        let Some(file) = r.str("file") else { continue };
        let paths = lake
            .client
            .query(&partition_path_sql(t, file))
            .await
            .map_err(PlanError::read(what.clone()))?;
        let Some(path) = paths.rows.first().and_then(|r| r.str("path")) else {
            return Err(PlanError::NoPartitionPath {
                table: t.clone(),
                spec_id: id,
                file: file.to_string(),
            });
        };
        let fields = spec_fields_from_path(path).map_err(|source| PlanError::SpecPath {
            table: t.clone(),
            spec_id: id,
            source: Box::new(source),
        })?;
        layout.live_specs.push((id, fields));
    }
    Ok(layout)
}

/// The partitions of a table.
pub async fn partitions_of(lake: &Lakehouse, t: &TableRef) -> Result<PartitionList, PlanError> {
    lake.partitions(t)
        .await
        .map_err(PlanError::read(format!("the partitions of {t}")))
}

/// What an optimize covers.
#[derive(Clone, Debug, PartialEq)]
pub enum Over {
    /// `o` on a table: its partitions holding `min_small` small files or more (else
    /// those holding two, grouped), or the whole table when it is unpartitioned.
    SmallFiles { min_small: u64 },
    /// These partitions (marked on the Partitions tab).
    These(Vec<PartitionStats>),
    /// The partitions the `--partition` specs name (see [`select_partitions`]).
    Named(Vec<String>),
    /// The whole table (`floe maintain optimize TABLE`; every other procedure).
    Whole,
}

/// Read what a plan needs (threshold unless given, layout, the partitions it covers) and
/// return the draft: the one drafter of the TUI and `floe maintain`.
pub async fn draft(
    lake: &Lakehouse,
    table: TableRef,
    kind: MaintenanceKind,
    over: Over,
    threshold: Option<u64>,
) -> Result<PlanDraft, PlanError> {
    let procedure = match kind {
        MaintenanceKind::Optimize => Procedure::Optimize {
            threshold: match threshold {
                Some(t) => t,
                None => threshold_of(lake, &table).await?,
            },
        },
        MaintenanceKind::ExpireSnapshots { retention_secs } => {
            Procedure::ExpireSnapshots { retention_secs }
        }
        MaintenanceKind::RemoveOrphanFiles { retention_secs } => {
            Procedure::RemoveOrphanFiles { retention_secs }
        }
        MaintenanceKind::OptimizeManifests => Procedure::OptimizeManifests,
    };
    let mut draft = PlanDraft {
        table: table.clone(),
        procedure,
        layout: Default::default(),
        partitions: Vec::new(),
        note: None,
        grouped: false,
        measured: None,
    };
    if kind != MaintenanceKind::Optimize {
        return Ok(draft);
    }
    let parts = match over {
        Over::Whole => return Ok(draft),
        Over::These(p) => p,
        Over::Named(specs) => {
            select_partitions(&partitions_of(lake, &table).await?.partitions, &specs)?
        }
        Over::SmallFiles { min_small } => {
            // From the Tables tab: the table's small-file partitions, incrementally.
            let mut list = partitions_of(lake, &table).await?;
            if list.layout_fields.is_empty() {
                // Read as unpartitioned, maybe from a layout cached before the table was
                // partitioned: its declared layout decides, read again, before a plan of
                // the whole table.
                let now = lake
                    .relearn_layout(&table)
                    .await
                    .map_err(PlanError::read(format!("the layout of {table}")))?;
                if !now.partitioning.is_empty() {
                    list = partitions_of(lake, &table).await?;
                }
            }
            if list.layout_fields.is_empty() {
                // Unpartitioned: the whole table, its one row giving the counts.
                draft.partitions = list.partitions;
                return Ok(draft);
            } else {
                let t = optimize_targets(&table, list.partitions, min_small)?;
                draft.note = t.note;
                draft.grouped = t.grouped;
                t.partitions
            }
        }
    };
    if !parts.is_empty() {
        draft.layout = layout_with_specs(lake, &table).await?;
    }
    draft.partitions = parts;
    Ok(draft)
}

/// The check before a plan is drafted: nobody else writes `t` now (the coordinator's
/// running statements, `others`' maintenance DAGs). What could not be read to tell is
/// returned, to be said beside the plan.
pub async fn unwritten(
    lake: &Lakehouse,
    others: &Others,
    t: &TableRef,
) -> Result<Vec<String>, PlanError> {
    let w = contention::writers(lake, others, t).await?;
    if w.none() {
        Ok(w.unread)
    } else {
        Err(contention::Contended(Box::new(w)).into())
    }
}

/// The measured rate of earlier optimizes (the audit log's and the coordinator's), which
/// the TUI's confirmation and `floe maintain`'s plan estimate from.
pub async fn measured(lake: &Lakehouse, audit_log: std::path::PathBuf) -> Measured {
    let audit = tokio::task::spawn_blocking(move || AuditLog::new(audit_log).read())
        .await
        .unwrap_or_default();
    eta::measure(lake, &audit).await
}

/// The small-file threshold floe uses for a table: `small_file_ratio` × its target
/// (the table property `write.target-file-size-bytes`, else the config's default).
pub async fn small_file_threshold(lake: &Lakehouse, t: &TableRef) -> Result<u64, TrinoError> {
    let props = lake.properties(t).await?;
    let target = props
        .iter()
        .find(|(k, _)| k == "write.target-file-size-bytes")
        .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        .unwrap_or(lake.scan.target_file_size);
    Ok(lake.scan.small_threshold(target))
}

/// One `--partition` spec: `COLUMN=VALUE` (the value exactly, `region=null` is the
/// string `'null'`) or `COLUMN IS NULL` (SQL NULL), joined by `/`.
pub fn parse_partition_spec(
    spec: &str,
) -> Result<Vec<(String, Option<String>)>, PartitionSpecError> {
    spec.split('/')
        .map(|kv| {
            if let Some((k, v)) = kv.split_once('=') {
                return Ok((k.trim().to_string(), Some(v.to_string())));
            }
            let t = kv.trim();
            let lower = t.to_ascii_lowercase();
            match lower.strip_suffix("is null") {
                Some(k) if k.ends_with(char::is_whitespace) && !k.trim().is_empty() => {
                    Ok((t[..k.trim_end().len()].to_string(), None))
                }
                _ => Err(PartitionSpecError::Syntax(spec.to_string())),
            }
        })
        .collect()
}

/// A `--partition` spec's trailing ` (spec N)`, as the Partitions tab labels a partition
/// of a table whose live files span several partition specs: the spec text before it and
/// N.
fn split_spec_id(spec: &str) -> Result<(&str, Option<i32>), PartitionSpecError> {
    let t = spec.trim_end();
    let Some(open) = t.strip_suffix(')').and_then(|rest| rest.rfind(" (spec ")) else {
        return Ok((spec, None));
    };
    let id = t[open + " (spec ".len()..t.len() - 1]
        .trim()
        .parse::<i32>()
        .map_err(|_| PartitionSpecError::SpecId(spec.to_string()))?;
    Ok((&t[..open], Some(id)))
}

/// Partitions matching `k=v[/k=v…][ (spec N)]` specs (each spec may name a subset of the
/// fields; `k IS NULL` matches NULL, `k=null` the string `'null'`; ` (spec N)` only the
/// partitions of partition spec N, each its own partition).
pub fn select_partitions(
    all: &[PartitionStats],
    specs: &[String],
) -> Result<Vec<PartitionStats>, PartitionSpecError> {
    let mut out = Vec::new();
    for spec in specs {
        // Only a table listed with specs has the suffix (a value may end like one).
        let (text, spec_id) = if all.iter().any(|p| p.spec_id.is_some()) {
            split_spec_id(spec)?
        } else {
            (spec.as_str(), None)
        };
        let wanted = parse_partition_spec(text)?;
        if let Some(p) = all.first() {
            for (k, _) in &wanted {
                if !p.values.iter().any(|(n, _)| n == k) {
                    return Err(PartitionSpecError::NoField {
                        spec: spec.clone(),
                        field: k.clone(),
                        fields: p.values.iter().map(|(n, _)| n.clone()).collect(),
                    });
                }
            }
        }
        let matches: Vec<&PartitionStats> = all
            .iter()
            .filter(|p| {
                spec_id.is_none_or(|id| p.spec_id == Some(id))
                    && wanted
                        .iter()
                        .all(|(k, v)| p.values.iter().any(|(n, val)| n == k && val == v))
            })
            .collect();
        if matches.is_empty() {
            return Err(PartitionSpecError::NoMatch {
                spec: spec.clone(),
                null_field: wanted
                    .iter()
                    .find(|(_, v)| v.as_deref().is_some_and(|v| v.eq_ignore_ascii_case("null")))
                    .map(|(k, _)| k.clone()),
            });
        }
        // Within one spec, each partition is its own (a predicate over some fields would
        // select the other specs' partitions too).
        if spec_id.is_some() || wanted.len() == all.first().map(|p| p.values.len()).unwrap_or(0) {
            out.extend(matches.into_iter().cloned());
        } else {
            // A subset of the fields: one statement over all of them, counted together.
            let mut agg = PartitionStats {
                values: wanted.clone(),
                data_files: 0,
                small_files: 0,
                total_bytes: 0,
                records: 0,
                min_file: u64::MAX,
                max_file: 0,
                delete_files: 0,
                oldest_small_file_at: None,
                spec_id: None,
            };
            for p in matches {
                agg.data_files += p.data_files;
                agg.small_files += p.small_files;
                agg.total_bytes += p.total_bytes;
                agg.records += p.records;
                agg.min_file = agg.min_file.min(p.min_file);
                agg.max_file = agg.max_file.max(p.max_file);
            }
            out.push(agg);
        }
    }
    Ok(out)
}

/// What `o` on a table optimizes, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Targets {
    pub partitions: Vec<PartitionStats>,
    pub note: Option<String>,
    pub grouped: bool,
}

/// The partitions to optimize for a table as a whole: those holding `min_small` or more
/// small files; when none does (small files spread thin over many partitions), every
/// partition holding two or more of them, grouped into bounded statements, and a note
/// saying why. Nothing to merge (no partition holds two small files) is an error that
/// says so.
pub fn optimize_targets(
    table: &TableRef,
    partitions: Vec<PartitionStats>,
    min_small: u64,
) -> Result<Targets, PlanError> {
    let (enough, rest): (Vec<PartitionStats>, Vec<PartitionStats>) = partitions
        .into_iter()
        .partition(|p| p.small_files >= min_small);
    if !enough.is_empty() {
        return Ok(Targets {
            partitions: enough,
            note: None,
            grouped: false,
        });
    }
    let spread: Vec<PartitionStats> = rest.into_iter().filter(|p| p.small_files >= 2).collect();
    if spread.is_empty() {
        return Err(PlanError::OverPartitioned(table.clone()));
    }
    let small: u64 = spread.iter().map(|p| p.small_files).sum();
    Ok(Targets {
        note: Some(format!(
            "no partition of {table} holds {min_small} or more small files: its {} small files are spread over {} partitions, so the plan optimizes every one of them, oldest first, grouped {} partitions a statement (g: one statement each)",
            crate::fmt::thousands(small),
            crate::fmt::thousands(spread.len() as u64),
            crate::lakehouse::plan::MAX_GROUP
        )),
        partitions: spread,
        grouped: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_read_says_what_it_read_and_keeps_trinos_error() {
        let trino = TrinoError::Query {
            query_id: "q1".into(),
            error_name: "TABLE_NOT_FOUND".into(),
            error_code: 46,
            error_type: "USER_ERROR".into(),
            message: "Table 'iceberg.zoning.documents' does not exist".into(),
            location: None,
        };
        let e = PlanError::read("the layout of iceberg.zoning.documents")(trino);
        assert_eq!(
            e.to_string(),
            "reading the layout of iceberg.zoning.documents: TABLE_NOT_FOUND: Table 'iceberg.zoning.documents' does not exist (query q1)"
        );
        let PlanError::Read { source, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(source.name(), "TABLE_NOT_FOUND");
        let refused: PlanError =
            PlanRefusal::Predicate(crate::lakehouse::plan::PredicateError::NoValue).into();
        assert!(matches!(refused, PlanError::Refused(_)));
        assert_eq!(refused.to_string(), "no partition value to match");
    }
    use crate::lakehouse::plan::{MAX_GROUP, parse_partition_entry};

    /// `n` partitions of `small` small files each, one a day from 2026-08-01.
    fn spread(n: usize, small: u64) -> Vec<PartitionStats> {
        (0..n)
            .map(|i| PartitionStats {
                values: vec![(
                    "ordered_at_day".into(),
                    Some(
                        (chrono::NaiveDate::from_ymd_opt(2026, 8, 1).unwrap()
                            + chrono::Duration::days(i as i64))
                        .to_string(),
                    ),
                )],
                data_files: small,
                small_files: small,
                total_bytes: small * 4000,
                records: 100,
                min_file: 3000,
                max_file: 5000,
                delete_files: 0,
                oldest_small_file_at: None,
                spec_id: None,
            })
            .collect()
    }

    #[test]
    fn a_table_spread_thin_optimizes_every_partition_with_small_files_in_bounded_groups() {
        let t = TableRef::new("iceberg", "sales", "orders");
        // 1,101 small files over 270 partitions of about four: none holds 12.
        let mut parts = spread(270, 4);
        parts[0].small_files = 5;
        parts[0].data_files = 5;
        parts.push(PartitionStats {
            small_files: 1,
            data_files: 1,
            ..spread(1, 1)[0].clone()
        });
        let got = optimize_targets(&t, parts, 12).unwrap();
        assert_eq!(
            got.partitions.len(),
            270,
            "the lone small file cannot merge"
        );
        assert!(got.grouped);
        let note = got.note.clone().unwrap();
        assert!(
            note.contains("no partition of iceberg.sales.orders holds 12 or more small files")
                && note.contains("1,081 small files are spread over 270 partitions"),
            "{note}"
        );
        let layout = TableLayout {
            columns: vec![("ordered_at".into(), "timestamp(6) with time zone".into())],
            partitioning: vec![parse_partition_entry("day(ordered_at)").unwrap()],
            live_specs: Vec::new(),
        };
        let draft = PlanDraft {
            table: t.clone(),
            procedure: Procedure::Optimize {
                threshold: 96 << 20,
            },
            layout,
            partitions: got.partitions,
            note: got.note,
            grouped: got.grouped,
            measured: None,
        };
        let plan = draft.build(draft.grouped).unwrap();
        assert_eq!(plan.steps.len(), 270usize.div_ceil(MAX_GROUP));
        assert!(plan.steps.iter().all(|s| s.targets.len() <= MAX_GROUP));
        assert_eq!(plan.files(), 1081);
        // Oldest first: the first statement holds the first day.
        assert!(
            plan.steps[0].sql.contains("2026-08-01"),
            "{}",
            plan.steps[0].sql
        );
        // One statement each on g.
        assert_eq!(draft.build(false).unwrap().steps.len(), 270);
    }

    #[test]
    fn partitions_past_min_small_files_are_the_plan_and_nothing_to_merge_says_why() {
        let t = TableRef::new("iceberg", "zoning", "documents");
        let mut parts = spread(10, 3);
        parts[4].small_files = 20;
        let got = optimize_targets(&t, parts, 12).unwrap();
        assert_eq!(got.partitions.len(), 1);
        assert_eq!(got.note, None);
        assert!(!got.grouped);
        let e = optimize_targets(&t, spread(30, 1), 12).unwrap_err();
        assert!(matches!(e, PlanError::OverPartitioned(_)), "{e:?}");
        assert!(e.to_string().contains("over-partitioned"), "{e}");
    }

    /// A spread-thin table one of whose partitions is NULL (its path is the string
    /// 'null''s too): the grouped plan is drawn, that partition in a statement of its own
    /// selected by `IS NULL`, the rest grouped by path.
    #[test]
    fn a_null_partition_of_a_table_spread_thin_is_planned_alone_beside_the_groups() {
        let t = TableRef::new("iceberg", "zoning", "permits");
        let mut parts: Vec<PartitionStats> = spread(100, 3)
            .into_iter()
            .enumerate()
            .map(|(i, mut p)| {
                p.values = vec![("district".into(), Some(format!("d{i:03}")))];
                p
            })
            .collect();
        parts[7].values[0].1 = None;
        parts[8].values[0].1 = Some("null".into());
        let got = optimize_targets(&t, parts, 12).unwrap();
        assert!(got.grouped);
        let draft = PlanDraft {
            table: t.clone(),
            procedure: Procedure::Optimize {
                threshold: 96 << 20,
            },
            layout: TableLayout {
                columns: vec![("district".into(), "varchar".into())],
                partitioning: vec![parse_partition_entry("district").unwrap()],
                live_specs: Vec::new(),
            },
            partitions: got.partitions,
            note: got.note,
            grouped: true,
            measured: None,
        };
        let plan = draft.build(true).unwrap();
        assert_eq!(plan.steps.len(), 98usize.div_ceil(MAX_GROUP) + 2, "{plan}");
        assert_eq!(plan.files(), 300);
        let alone: Vec<&str> = plan
            .steps
            .iter()
            .filter(|s| !s.sql.contains("\"$partition\""))
            .map(|s| s.sql.as_str())
            .collect();
        assert_eq!(alone.len(), 2, "{plan}");
        assert!(
            alone
                .iter()
                .any(|s| s.ends_with("WHERE \"district\" IS NULL")),
            "{plan}"
        );
        assert!(
            alone
                .iter()
                .any(|s| s.ends_with("WHERE \"district\" = 'null'")),
            "{plan}"
        );
        assert!(
            plan.notes
                .iter()
                .any(|n| n.starts_with("2 partitions planned alone")),
            "{:?}",
            plan.notes
        );
    }
}
