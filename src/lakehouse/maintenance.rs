//! Maintenance plans: the exact statements floe will run, built without splicing anything
//! raw. Identity partition columns get typed equality predicates, temporal transforms
//! get ranges aligned to the partition's bounds (which Trino's Iceberg connector absorbs
//! into the scan), other transforms use the `"$partition"` path.

use std::fmt;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime};
use serde::Serialize;

use super::layout::PropValue;
use crate::trino::Value;

use super::model::{PartitionStats, TableRef};
use super::sql::{quote_ident, quote_string, typed_literal};
use crate::fmt::human_bytes;
use crate::units::Bytes;

/// How a partition field derives from its source column.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Transform {
    Identity,
    Year,
    Month,
    Day,
    Hour,
    Bucket(u32),
    Truncate(u32),
    Void,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PartitionField {
    /// The field name as `$files.partition` names it (`district`, `filed_at_day`).
    pub name: String,
    pub source: String,
    pub transform: Transform,
}

/// Columns (name, Trino type) and the partitioning of a table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableLayout {
    pub columns: Vec<(String, String)>,
    pub partitioning: Vec<PartitionField>,
    /// The partition specs the table's live data files were written under: each spec's id
    /// and its field names in order, as the `"$partition"` path of one of its files names
    /// them (see [`spec_fields_from_path`]). Empty when not read.
    pub live_specs: Vec<(i32, Vec<String>)>,
}

impl TableLayout {
    pub fn column_type(&self, name: &str) -> Option<&str> {
        self.columns
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, t)| t.as_str())
    }

    /// The partition field `$files.partition` names `name`, from the table's spec.
    pub fn field(&self, name: &str) -> Option<&PartitionField> {
        self.partitioning.iter().find(|f| f.name == name)
    }

    /// The field names of live spec `id`, when read.
    pub fn spec_fields(&self, id: i32) -> Option<&[String]> {
        self.live_specs
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, f)| f.as_slice())
    }

    /// Whether a live spec other than the current partitioning holds data files. Trino
    /// then enforces a predicate on a partition column only where every live spec
    /// partitions by it the same way (a range on `day(tstz)` is refused with "Unexpected
    /// FilterNode" while files of a spec without it are live); `"$partition"`, the path
    /// of each file's own spec, selects a partition of any spec exactly.
    pub fn mixed_specs(&self) -> bool {
        let current: Vec<&str> = self.partitioning.iter().map(|f| f.name.as_str()).collect();
        self.live_specs
            .iter()
            .any(|(_, f)| f.iter().map(String::as_str).ne(current.iter().copied()))
    }
}

/// The statement listing the partition specs of a table's live data files, one file of
/// each (columns `spec`, `file`).
pub fn live_specs_sql(t: &TableRef) -> String {
    format!(
        "SELECT spec_id AS spec, min(file_path) AS file FROM {} WHERE content = 0 GROUP BY spec_id ORDER BY spec_id",
        t.meta("files")
    )
}

/// The statement reading the `"$partition"` path of data file `file` (column `path`):
/// one split, at most one row.
pub fn partition_path_sql(t: &TableRef, file: &str) -> String {
    format!(
        "SELECT \"$partition\" AS path FROM {} WHERE \"$path\" = {} LIMIT 1",
        t.sql(),
        quote_string(file)
    )
}

/// The field names of a partition path (`region=north/tstz_day=2026-11-04` → `region`,
/// `tstz_day`), decoded as Iceberg encodes them; an unpartitioned spec's path is empty.
pub fn spec_fields_from_path(path: &str) -> Result<Vec<String>, String> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    path.split('/')
        .map(|kv| {
            let (k, _) = kv
                .split_once('=')
                .ok_or_else(|| format!("partition path {path:?}: {kv:?} is not NAME=VALUE"))?;
            url_decode(k).ok_or_else(|| format!("partition path {path:?}: bad escape in {k:?}"))
        })
        .collect()
}

fn url_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

impl Transform {
    /// A partition value of this transform as the operator reads it and as Iceberg writes
    /// it in paths (`"$partition"`): year/month/hour (integers since 1970 in `$files`) as
    /// `2026`, `2026-03`, `2026-03-02-14`; everything else as the value itself, at full
    /// precision (predicates are built from this text).
    pub fn render(&self, v: &Value) -> String {
        if let Value::Int(n) = *v {
            match self {
                Transform::Year => return format!("{:04}", 1970 + n),
                Transform::Month => {
                    let y = 1970 + n.div_euclid(12);
                    let m = n.rem_euclid(12) + 1;
                    return format!("{y:04}-{m:02}");
                }
                Transform::Day => {
                    if let Some(t) = n
                        .checked_mul(86_400)
                        .and_then(|s| DateTime::from_timestamp(s, 0))
                    {
                        return t.format("%Y-%m-%d").to_string();
                    }
                }
                Transform::Hour => {
                    if let Some(t) = n
                        .checked_mul(3600)
                        .and_then(|s| DateTime::from_timestamp(s, 0))
                    {
                        return t.format("%Y-%m-%d-%H").to_string();
                    }
                }
                _ => {}
            }
        }
        v.exact()
    }
}

/// Parse one entry of Trino's `partitioning = ARRAY[…]` (`district`, `day(filed_at)`,
/// `bucket(id, 16)`, `"Odd Col"`, `truncate("Odd Col", 4)`).
pub fn parse_partition_entry(entry: &str) -> Result<PartitionField, String> {
    let e = entry.trim();
    let unquote = |s: &str| -> String {
        let s = s.trim();
        if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
            s[1..s.len() - 1].replace("\"\"", "\"")
        } else {
            s.to_lowercase()
        }
    };
    if let Some(open) = e.find('(')
        && e.ends_with(')')
        && !e.starts_with('"')
    {
        let func = e[..open].trim().to_lowercase();
        let args: Vec<&str> = split_args(&e[open + 1..e.len() - 1]);
        let source = unquote(
            args.first()
                .ok_or_else(|| format!("partition transform {e:?} has no column"))?,
        );
        let num = |i: usize| -> Result<u32, String> {
            args.get(i)
                .and_then(|a| a.trim().parse().ok())
                .ok_or_else(|| format!("partition transform {e:?}: bad width"))
        };
        let (transform, suffix) = match func.as_str() {
            "year" => (Transform::Year, "year"),
            "month" => (Transform::Month, "month"),
            "day" => (Transform::Day, "day"),
            "hour" => (Transform::Hour, "hour"),
            "bucket" => (Transform::Bucket(num(1)?), "bucket"),
            "truncate" => (Transform::Truncate(num(1)?), "trunc"),
            "void" => (Transform::Void, "null"),
            other => return Err(format!("unknown partition transform {other:?} in {e:?}")),
        };
        return Ok(PartitionField {
            name: format!("{source}_{suffix}"),
            source,
            transform,
        });
    }
    let name = unquote(e);
    Ok(PartitionField {
        name: name.clone(),
        source: name,
        transform: Transform::Identity,
    })
}

fn split_args(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quoted = false;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The `partitioning = ARRAY['a', 'day(b)']` property of the `WITH (…)` clause of
/// `SHOW CREATE TABLE`'s text (empty when the table is not partitioned).
pub fn partitioning_from_show_create(text: &str) -> Result<Vec<PartitionField>, String> {
    let props = super::layout::with_properties(text)?;
    let Some((_, value)) = props.iter().find(|(k, _)| k == "partitioning") else {
        return Ok(Vec::new());
    };
    let PropValue::Array(items) = value else {
        return Err(format!("partitioning is not an ARRAY: {value:?}"));
    };
    items
        .iter()
        .map(|item| match item {
            PropValue::Str(e) => parse_partition_entry(e),
            other => Err(format!("partitioning entry {other:?} is not a string")),
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Procedure {
    Optimize { threshold: u64 },
    ExpireSnapshots { retention_secs: u64 },
    RemoveOrphanFiles { retention_secs: u64 },
    OptimizeManifests,
}

impl Procedure {
    pub fn name(&self) -> &'static str {
        match self {
            Procedure::Optimize { .. } => "optimize",
            Procedure::ExpireSnapshots { .. } => "expire_snapshots",
            Procedure::RemoveOrphanFiles { .. } => "remove_orphan_files",
            Procedure::OptimizeManifests => "optimize_manifests",
        }
    }

    fn call(&self) -> String {
        match self {
            Procedure::Optimize { threshold } => {
                format!(
                    "optimize(file_size_threshold => {})",
                    quote_string(&Bytes(*threshold).trino_literal())
                )
            }
            Procedure::ExpireSnapshots { retention_secs } => {
                format!(
                    "expire_snapshots(retention_threshold => {})",
                    quote_string(&trino_duration(*retention_secs))
                )
            }
            Procedure::RemoveOrphanFiles { retention_secs } => {
                format!(
                    "remove_orphan_files(retention_threshold => {})",
                    quote_string(&trino_duration(*retention_secs))
                )
            }
            Procedure::OptimizeManifests => "optimize_manifests".into(),
        }
    }
}

/// A duration as Trino's airlift `Duration` parses it: `7d`, `36h`, `90m`, `45s`.
pub fn trino_duration(secs: u64) -> String {
    for (unit, n) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs >= n && secs.is_multiple_of(n) {
            return format!("{}{unit}", secs / n);
        }
    }
    format!("{secs}s")
}

/// One statement of a plan, with what it is expected to rewrite.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    pub sql: String,
    /// The partition it targets (`district=north/filed_at_day=2026-03-02`), if any.
    pub partition: Option<String>,
    pub files: u64,
    pub small_files: u64,
    pub bytes: u64,
    /// The partitions the statement rewrites, each as the partition values it must match
    /// (all fields, or the subset a partial `--partition` spec names); after the statement
    /// these are re-read to count what is left. Empty for a table-wide statement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Vec<(String, Option<String>)>>,
    /// The partition spec the targets belong to, when the table's live files span several
    /// (the targets are then re-read among that spec's files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_id: Option<i32>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub table: TableRef,
    pub procedure: Procedure,
    pub steps: Vec<Step>,
    /// Session properties the statements need (none by default).
    pub session: Vec<(String, String)>,
    /// What the operator must know before confirming (shown with the plan).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Plan {
    pub fn files(&self) -> u64 {
        self.steps.iter().map(|s| s.small_files).sum()
    }

    pub fn bytes(&self) -> u64 {
        self.steps.iter().map(|s| s.bytes).sum()
    }

    /// One line that says what the plan does.
    pub fn summary(&self) -> String {
        match &self.procedure {
            Procedure::Optimize { threshold } => {
                let parts = self.steps.iter().filter(|s| s.partition.is_some()).count();
                let scope = if parts > 0 {
                    format!("{parts} partition{}", if parts == 1 { "" } else { "s" })
                } else {
                    "the whole table".to_string()
                };
                // A whole-table plan drafted without reading the table has no counts:
                // say so rather than "0 small files".
                let what = if parts == 0 && self.files() == 0 && self.bytes() == 0 {
                    "files not counted".to_string()
                } else {
                    format!(
                        "{} small files, {}",
                        self.files(),
                        human_bytes(self.bytes())
                    )
                };
                format!(
                    "optimize {} ({scope}, {} statement{}): rewrite files below {} — {what}",
                    self.table,
                    self.steps.len(),
                    if self.steps.len() == 1 { "" } else { "s" },
                    human_bytes(*threshold),
                )
            }
            Procedure::ExpireSnapshots { retention_secs } => {
                format!(
                    "expire snapshots of {} older than {}",
                    self.table,
                    trino_duration(*retention_secs)
                )
            }
            Procedure::RemoveOrphanFiles { retention_secs } => {
                format!(
                    "remove orphan files of {} older than {}",
                    self.table,
                    trino_duration(*retention_secs)
                )
            }
            Procedure::OptimizeManifests => format!("optimize the manifests of {}", self.table),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary())?;
        for n in &self.notes {
            writeln!(f, "-- note: {n}")?;
        }
        for (k, v) in &self.session {
            writeln!(f, "-- session: {k}={v}")?;
        }
        for s in &self.steps {
            writeln!(f, "{};", s.sql)?;
        }
        Ok(())
    }
}

/// A table-wide procedure (no WHERE).
pub fn table_plan(table: &TableRef, procedure: Procedure) -> Plan {
    let sql = format!("ALTER TABLE {} EXECUTE {}", table.sql(), procedure.call());
    Plan {
        table: table.clone(),
        procedure,
        steps: vec![Step {
            sql,
            partition: None,
            files: 0,
            small_files: 0,
            bytes: 0,
            targets: Vec::new(),
            spec_id: None,
        }],
        session: Vec::new(),
        notes: Vec::new(),
    }
}

/// Partitions one grouped optimize statement covers at most: each statement stays
/// bounded in what it rewrites and in the length of its `IN` list.
pub const MAX_GROUP: usize = 64;

/// Optimize the given partitions: one statement each (oldest first), or grouped
/// statements over `"$partition"` ([`MAX_GROUP`] partitions each). With no partitions, the whole table; an unpartitioned
/// layout (no partitioning) is always the whole table, one statement that carries the
/// counts of the rows given (what the confirmation shows it will rewrite).
pub fn optimize_plan(
    table: &TableRef,
    layout: &TableLayout,
    partitions: &[PartitionStats],
    threshold: u64,
    grouped: bool,
) -> Result<Plan, String> {
    let procedure = Procedure::Optimize { threshold };
    current_spec_selects(table, layout, partitions)?;
    if partitions.is_empty() || layout.partitioning.is_empty() {
        let mut plan = table_plan(table, procedure);
        if let Some(step) = plan.steps.first_mut() {
            step.files = partitions.iter().map(|p| p.data_files).sum();
            step.small_files = partitions.iter().map(|p| p.small_files).sum();
            step.bytes = partitions.iter().map(|p| p.total_bytes).sum();
        }
        return Ok(plan);
    }
    let mut parts: Vec<&PartitionStats> = partitions.iter().collect();
    parts.sort_by_key(|p| temporal_key(layout, p));
    let head = format!("ALTER TABLE {} EXECUTE {}", table.sql(), procedure.call());
    if layout.mixed_specs() {
        return mixed_spec_plan(table, layout, procedure, &head, &parts, grouped);
    }
    let mut steps = Vec::new();
    if grouped {
        if let Some(p) = parts.iter().find(|p| path_is_ambiguous(layout, p)) {
            return Err(format!(
                "partition {} cannot be selected by its path in a grouped statement: Iceberg \
                 writes NULL and the string 'null' alike there; optimize it ungrouped",
                p.label()
            ));
        }
        // Bounded statements: at most MAX_GROUP partitions each, oldest first.
        for chunk in parts.chunks(MAX_GROUP) {
            let paths: Vec<String> = chunk
                .iter()
                .map(|p| partition_path(p))
                .collect::<Result<_, _>>()?;
            let list = paths
                .iter()
                .map(|p| quote_string(p))
                .collect::<Vec<_>>()
                .join(", ");
            steps.push(Step {
                sql: format!("{head} WHERE \"$partition\" IN ({list})"),
                partition: Some(format!("{} partitions", chunk.len())),
                files: chunk.iter().map(|p| p.data_files).sum(),
                small_files: chunk.iter().map(|p| p.small_files).sum(),
                bytes: chunk.iter().map(|p| p.total_bytes).sum(),
                targets: chunk.iter().map(|p| p.values.clone()).collect(),
                spec_id: None,
            });
        }
    } else {
        for p in parts {
            steps.push(partition_step(&head, layout, p)?);
        }
    }
    Ok(Plan {
        table: table.clone(),
        procedure,
        steps,
        session: Vec::new(),
        notes: Vec::new(),
    })
}

/// One statement over `chunk`, partitions of spec `id` (spec, path, stats, label), each
/// selected by its path in its own spec (`"$partition"`).
fn path_step(head: &str, id: i32, chunk: &[(i32, String, &PartitionStats, String)]) -> Step {
    let list = chunk
        .iter()
        .map(|(_, path, _, _)| quote_string(path))
        .collect::<Vec<_>>();
    let (sql, partition) = if chunk.len() == 1 {
        (
            format!("{head} WHERE \"$partition\" = {}", list[0]),
            chunk[0].3.clone(),
        )
    } else {
        (
            format!("{head} WHERE \"$partition\" IN ({})", list.join(", ")),
            format!("{} partitions (spec {id})", chunk.len()),
        )
    };
    Step {
        sql,
        partition: Some(partition),
        files: chunk.iter().map(|(_, _, p, _)| p.data_files).sum(),
        small_files: chunk.iter().map(|(_, _, p, _)| p.small_files).sum(),
        bytes: chunk.iter().map(|(_, _, p, _)| p.total_bytes).sum(),
        targets: chunk.iter().map(|(_, _, p, _)| p.values.clone()).collect(),
        spec_id: Some(id),
    }
}

/// The plan for a table whose live files span several partition specs (see
/// [`TableLayout::mixed_specs`]): each partition selected by its `"$partition"` path in
/// its own spec, a spec's partitions never grouped with another's. A partial spec (some
/// fields only) keeps its predicate where every live spec partitions by those fields, and
/// is refused before the confirmation where one does not. A partition of an earlier spec
/// is rewritten under the current one: the plan says so.
fn mixed_spec_plan(
    table: &TableRef,
    layout: &TableLayout,
    procedure: Procedure,
    head: &str,
    parts: &[&PartitionStats],
    grouped: bool,
) -> Result<Plan, String> {
    let describe = |fields: &[String]| {
        if fields.is_empty() {
            "unpartitioned".to_string()
        } else {
            fields.join(", ")
        }
    };
    let specs_text = layout
        .live_specs
        .iter()
        .map(|(id, f)| format!("spec {id}: {}", describe(f)))
        .collect::<Vec<_>>()
        .join("; ");
    let current: Vec<String> = layout.partitioning.iter().map(|f| f.name.clone()).collect();
    let whole = format!(
        "name whole partitions (as the Partitions tab lists them, with their spec), or optimize \
             the whole table (`floe maintain optimize {table}` without --partition)"
    );
    // (spec, path, partition) of every full partition; the partial specs' own steps.
    let mut by_path: Vec<(i32, String, &PartitionStats, String)> = Vec::new();
    let mut steps = Vec::new();
    let mut earlier: Vec<String> = Vec::new();
    for p in parts {
        let Some(id) = p.spec_id else {
            // A partial spec: a predicate over the named fields, which every live spec
            // must partition by for Trino to enforce it.
            if let Some((name, _)) = p.values.iter().find(|(n, _)| {
                layout
                    .live_specs
                    .iter()
                    .any(|(_, f)| !f.iter().any(|x| x == n))
            }) {
                return Err(format!(
                    "partition {} of {table}: the table's live files span several partition \
                         specs ({specs_text}), and field {name:?} is not in every one of them: \
                         Trino cannot select by it; {whole}",
                    p.label()
                ));
            }
            steps.push(partition_step(head, layout, p)?);
            continue;
        };
        let fields = layout.spec_fields(id).ok_or_else(|| {
            format!(
                "partition {} of {table}: spec {id} no longer holds live files \
                     ({specs_text}); read the partitions again",
                p.label()
            )
        })?;
        // The partition as its own spec has it: that spec's fields, in its order; the
        // other fields of the union are NULL in `$files` for its files.
        let mut own = Vec::new();
        for name in fields {
            let v = p
                .values
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| {
                    format!(
                        "partition {} of {table}: spec {id} has field {name:?}, which its \
                             partition row lacks",
                        p.label()
                    )
                })?;
            own.push((name.clone(), v));
        }
        if let Some((name, _)) = p
            .values
            .iter()
            .find(|(n, v)| v.is_some() && !fields.contains(n))
        {
            return Err(format!(
                "partition {} of {table}: field {name:?} has a value, but spec {id} has no such \
                     field ({specs_text})",
                p.label()
            ));
        }
        let own_stats = PartitionStats {
            values: own,
            ..(*p).clone()
        };
        if path_is_ambiguous(layout, &own_stats) {
            return Err(format!(
                "partition {} of {table} cannot be selected: the table's live files span \
                     several partition specs ({specs_text}), so only its path (\"$partition\") \
                     selects it, and Iceberg writes NULL and the string 'null' alike there; {whole}",
                p.label()
            ));
        }
        let label = own_stats.label();
        if *fields != current[..] {
            earlier.push(label.clone());
        }
        let path = partition_path(&own_stats)?;
        by_path.push((id, path, p, label));
    }
    if grouped {
        let mut seen = Vec::new();
        for id in by_path.iter().map(|e| e.0) {
            if seen.contains(&id) {
                continue;
            }
            seen.push(id);
            let of: Vec<_> = by_path.iter().filter(|e| e.0 == id).cloned().collect();
            for chunk in of.chunks(MAX_GROUP) {
                steps.push(path_step(head, id, chunk));
            }
        }
    } else {
        for entry in &by_path {
            steps.push(path_step(head, entry.0, std::slice::from_ref(entry)));
        }
    }
    let mut notes = vec![format!(
        "the table's live files span several partition specs ({specs_text}): each partition is \
             selected by its path in its own spec (\"$partition\"), which Trino enforces for every \
             spec"
    )];
    if !earlier.is_empty() {
        notes.push(format!(
            "{} belong{} to an earlier partition spec: optimize rewrites {} rows under the \
                 current partitioning ({}), so they move into the current spec's partitions \
                 (new files there; the files already there are not rewritten)",
            earlier.join(", "),
            if earlier.len() == 1 { "s" } else { "" },
            if earlier.len() == 1 { "its" } else { "their" },
            describe(&current),
        ));
    }
    Ok(Plan {
        table: table.clone(),
        procedure,
        steps,
        session: Vec::new(),
        notes,
    })
}

/// Refuse partitions the table's current partitioning cannot select: a table whose
/// partitioning was removed still lists the partitions its files were written in, and a
/// spec change leaves partitions of fields the current spec no longer has. Optimizing
/// one of those would either rewrite the whole table (no predicate left to select it) or
/// be refused by Trino after the confirmation; say so before.
fn current_spec_selects(
    table: &TableRef,
    layout: &TableLayout,
    partitions: &[PartitionStats],
) -> Result<(), String> {
    let whole = format!(
        "optimize the whole table instead (`floe maintain optimize {table}` without --partition)"
    );
    for p in partitions.iter().filter(|p| !p.values.is_empty()) {
        if layout.partitioning.is_empty() {
            return Err(format!(
                "{table} is no longer partitioned, but {} belongs to its earlier partitioning: \
                 no predicate can select it alone, and a plan without one would rewrite every \
                 file of the table; {whole}",
                p.label()
            ));
        }
        if let Some((name, _)) = p.values.iter().find(|(n, _)| layout.field(n).is_none()) {
            let current: Vec<&str> = layout
                .partitioning
                .iter()
                .map(|f| f.name.as_str())
                .collect();
            return Err(format!(
                "partition {} of {table}: field {name:?} is not in the table's current \
                 partitioning ({}): it belongs to an earlier partition spec, which Trino cannot \
                 select; {whole}",
                p.label(),
                current.join(", ")
            ));
        }
    }
    Ok(())
}

/// Sort key: the partition's temporal values first (oldest first), then its label.
fn temporal_key(layout: &TableLayout, p: &PartitionStats) -> (Vec<String>, String) {
    let mut t = Vec::new();
    for (name, v) in &p.values {
        if layout.field(name).is_some_and(|f| {
            matches!(
                f.transform,
                Transform::Year | Transform::Month | Transform::Day | Transform::Hour
            )
        }) {
            t.push(v.clone().unwrap_or_default());
        }
    }
    (t, p.label())
}

/// The WHERE predicate selecting exactly one partition.
/// The optimize of one partition, selected by its values under the current spec.
fn partition_step(head: &str, layout: &TableLayout, p: &PartitionStats) -> Result<Step, String> {
    let predicate = partition_predicate(layout, p)?;
    Ok(Step {
        sql: format!("{head} WHERE {predicate}"),
        partition: Some(p.label()),
        files: p.data_files,
        small_files: p.small_files,
        bytes: p.total_bytes,
        targets: vec![p.values.clone()],
        spec_id: None,
    })
}

pub fn partition_predicate(layout: &TableLayout, p: &PartitionStats) -> Result<String, String> {
    if p.values.is_empty() {
        return Err("the table is not partitioned: optimize it as a whole".into());
    }
    let mut terms = Vec::new();
    for (name, value) in &p.values {
        let field = layout.field(name).ok_or_else(|| {
            format!("partition field {name:?} is not in the table's current partitioning")
        })?;
        let col = quote_ident(&field.source);
        let ty = layout
            .column_type(&field.source)
            .ok_or_else(|| format!("partition source column {:?} not found", field.source))?
            .to_string();
        let term = match (&field.transform, value) {
            (Transform::Void, _) => continue,
            (_, None) => format!("{col} IS NULL"),
            (Transform::Identity, Some(v)) => format!("{col} = {}", typed_literal(&ty, v)?),
            (Transform::Year | Transform::Month | Transform::Day | Transform::Hour, Some(v)) => {
                let (lo, hi) = temporal_bounds(&field.transform, v)?;
                range(&col, &ty, lo, hi)?
            }
            (Transform::Bucket(_) | Transform::Truncate(_), Some(_)) => {
                // Not expressible as an aligned range: select the partition by its path.
                if path_is_ambiguous(layout, p) {
                    return Err(format!(
                        "partition {} cannot be selected by its path: Iceberg writes NULL and \
                         the string 'null' alike there",
                        p.label()
                    ));
                }
                return Ok(format!(
                    "\"$partition\" = {}",
                    quote_string(&partition_path(p)?)
                ));
            }
        };
        terms.push(term);
    }
    if terms.is_empty() {
        return Err("the partition has only void fields: optimize the table as a whole".into());
    }
    Ok(terms.join(" AND "))
}

/// A predicate on the `partition` row of `$files` (aliased `f`) matching partitions whose
/// rendered values are `values` (all fields or a subset): each value turned back into the
/// field's own type (years, months and hours since 1970, dates, the source column's type).
pub fn files_partition_predicate(
    layout: &TableLayout,
    values: &[(String, Option<String>)],
) -> Result<String, String> {
    let mut terms = Vec::new();
    for (name, value) in values {
        let field = layout.field(name).ok_or_else(|| {
            format!("partition field {name:?} is not in the table's current partitioning")
        })?;
        let col = format!("f.partition.{}", quote_ident(name));
        let Some(v) = value else {
            terms.push(format!("{col} IS NULL"));
            continue;
        };
        let bad = || {
            format!(
                "partition value {v:?} does not fit transform {:?}",
                field.transform
            )
        };
        let source_type = || {
            layout
                .column_type(&field.source)
                .ok_or_else(|| format!("partition source column {:?} not found", field.source))
        };
        let lit = match &field.transform {
            Transform::Identity | Transform::Truncate(_) => typed_literal(source_type()?, v)?,
            Transform::Bucket(_) => v.trim().parse::<i64>().map_err(|_| bad())?.to_string(),
            Transform::Year => (v.trim().parse::<i64>().map_err(|_| bad())? - 1970).to_string(),
            Transform::Month => {
                let d =
                    NaiveDate::parse_from_str(&format!("{v}-01"), "%Y-%m-%d").map_err(|_| bad())?;
                ((i64::from(d.year()) - 1970) * 12 + i64::from(d.month0())).to_string()
            }
            Transform::Day => typed_literal("date", v)?,
            Transform::Hour => {
                let t = NaiveDateTime::parse_from_str(&format!("{v}:00:00"), "%Y-%m-%d-%H:%M:%S")
                    .map_err(|_| bad())?;
                t.and_utc().timestamp().div_euclid(3600).to_string()
            }
            Transform::Void => return Err(bad()),
        };
        terms.push(format!("{col} = {lit}"));
    }
    if terms.is_empty() {
        return Err("no partition value to match".into());
    }
    Ok(terms.join(" AND "))
}

fn temporal_bounds(t: &Transform, v: &str) -> Result<(NaiveDateTime, NaiveDateTime), String> {
    let bad = || format!("partition value {v:?} does not fit transform {t:?}");
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).expect("midnight exists");
    match t {
        Transform::Day => {
            let d = NaiveDate::parse_from_str(v, "%Y-%m-%d").map_err(|_| bad())?;
            Ok((midnight(d), midnight(d.succ_opt().ok_or_else(bad)?)))
        }
        Transform::Month => {
            let d = NaiveDate::parse_from_str(&format!("{v}-01"), "%Y-%m-%d").map_err(|_| bad())?;
            let next = if d.month() == 12 {
                NaiveDate::from_ymd_opt(d.year() + 1, 1, 1)
            } else {
                NaiveDate::from_ymd_opt(d.year(), d.month() + 1, 1)
            }
            .ok_or_else(bad)?;
            Ok((midnight(d), midnight(next)))
        }
        Transform::Year => {
            let y: i32 = v.parse().map_err(|_| bad())?;
            let a = NaiveDate::from_ymd_opt(y, 1, 1).ok_or_else(bad)?;
            let b = NaiveDate::from_ymd_opt(y + 1, 1, 1).ok_or_else(bad)?;
            Ok((midnight(a), midnight(b)))
        }
        Transform::Hour => {
            let t = NaiveDateTime::parse_from_str(&format!("{v}:00:00"), "%Y-%m-%d-%H:%M:%S")
                .map_err(|_| bad())?;
            Ok((t, t + chrono::Duration::hours(1)))
        }
        _ => Err(bad()),
    }
}

fn range(col: &str, ty: &str, lo: NaiveDateTime, hi: NaiveDateTime) -> Result<String, String> {
    let t = ty.to_ascii_lowercase();
    let lit = |x: NaiveDateTime| -> Result<String, String> {
        if t == "date" {
            typed_literal("date", &x.format("%Y-%m-%d").to_string())
        } else if t.starts_with("timestamp") {
            typed_literal(&t, &x.format("%Y-%m-%d %H:%M:%S").to_string())
        } else {
            Err(format!("a temporal partition on a {ty} column"))
        }
    };
    if t == "date" && (lo.time() != chrono::NaiveTime::MIN || hi.time() != chrono::NaiveTime::MIN) {
        return Err("an hour partition on a date column".into());
    }
    Ok(format!("{col} >= {} AND {col} < {}", lit(lo)?, lit(hi)?))
}

/// Whether the partition's path (`"$partition"`) may also be another partition's: Iceberg
/// writes a NULL value as `null`, the way it writes the string `'null'`.
fn path_is_ambiguous(layout: &TableLayout, p: &PartitionStats) -> bool {
    p.values.iter().any(|(name, v)| {
        // Only a field whose values are text can hold the string 'null'.
        let textual = match layout.field(name) {
            Some(f) => {
                matches!(f.transform, Transform::Identity | Transform::Truncate(_))
                    && layout.column_type(&f.source).is_none_or(|t| {
                        let t = t.to_ascii_lowercase();
                        t.starts_with("varchar") || t.starts_with("char")
                    })
            }
            None => true,
        };
        match v {
            None => textual,
            Some(v) => textual && v == "null",
        }
    })
}

/// The partition's path as Iceberg writes it (`district=north/filed_at_day=2026-03-02`),
/// values escaped as Java's URLEncoder does; the value of Trino's `"$partition"`.
pub fn partition_path(p: &PartitionStats) -> Result<String, String> {
    if p.values.is_empty() {
        return Err("the table is not partitioned".into());
    }
    Ok(p.values
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                url_encode(k),
                v.as_deref()
                    .map(url_encode)
                    .unwrap_or_else(|| "null".into())
            )
        })
        .collect::<Vec<_>>()
        .join("/"))
}

fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
