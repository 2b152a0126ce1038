//! A table's layout as the plans need it: its columns, its partition fields and their
//! transforms (from `SHOW CREATE TABLE`), the partition specs its live files were written
//! under (from their `"$partition"` paths).

use chrono::DateTime;
use serde::Serialize;

use crate::lakehouse::layout::{LayoutError, PropValue};
use crate::lakehouse::model::TableRef;
use crate::sql::quote_string;
use crate::trino::Value;

/// A partitioning, a partition entry or a partition path that does not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PartitioningError {
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error("partitioning is not an ARRAY: {0:?}")]
    NotArray(PropValue),
    #[error("partitioning entry {0:?} is not a string")]
    NotString(PropValue),
    #[error("partition transform {0:?} has no column")]
    NoColumn(String),
    #[error("partition transform {0:?}: bad width")]
    Width(String),
    #[error("unknown partition transform {name:?} in {entry:?}")]
    Transform { name: String, entry: String },
    #[error("partition path {path:?}: {part:?} is not NAME=VALUE")]
    PathPart { path: String, part: String },
    #[error("partition path {path:?}: bad escape in {name:?}")]
    PathEscape { path: String, name: String },
}

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
    /// The table's format: a Delta table is partitioned by its columns' values alone and
    /// has no `"$partition"` path to select partitions by.
    pub format: crate::lakehouse::delta::TableFormat,
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
pub fn spec_fields_from_path(path: &str) -> Result<Vec<String>, PartitioningError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    path.split('/')
        .map(|kv| {
            let (k, _) = kv
                .split_once('=')
                .ok_or_else(|| PartitioningError::PathPart {
                    path: path.to_string(),
                    part: kv.to_string(),
                })?;
            url_decode(k).ok_or_else(|| PartitioningError::PathEscape {
                path: path.to_string(),
                name: k.to_string(),
            })
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
pub fn parse_partition_entry(entry: &str) -> Result<PartitionField, PartitioningError> {
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
                .ok_or_else(|| PartitioningError::NoColumn(e.to_string()))?,
        );
        let num = |i: usize| -> Result<u32, PartitioningError> {
            args.get(i)
                .and_then(|a| a.trim().parse().ok())
                .ok_or_else(|| PartitioningError::Width(e.to_string()))
        };
        let (transform, suffix) = match func.as_str() {
            "year" => (Transform::Year, "year"),
            "month" => (Transform::Month, "month"),
            "day" => (Transform::Day, "day"),
            "hour" => (Transform::Hour, "hour"),
            "bucket" => (Transform::Bucket(num(1)?), "bucket"),
            "truncate" => (Transform::Truncate(num(1)?), "trunc"),
            "void" => (Transform::Void, "null"),
            other => {
                return Err(PartitioningError::Transform {
                    name: other.to_string(),
                    entry: e.to_string(),
                });
            }
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

/// The fields of the array property `key` of the `WITH (…)` clause of `SHOW CREATE
/// TABLE`'s text, each of its strings made a field by `field` (none when it is absent).
fn array_property(
    text: &str,
    key: &str,
    field: impl Fn(&str) -> Result<PartitionField, PartitioningError>,
) -> Result<Vec<PartitionField>, PartitioningError> {
    let props = crate::lakehouse::layout::with_properties(text)?;
    let Some((_, value)) = props.iter().find(|(k, _)| k == key) else {
        return Ok(Vec::new());
    };
    let PropValue::Array(items) = value else {
        return Err(PartitioningError::NotArray(value.clone()));
    };
    items
        .iter()
        .map(|item| match item {
            PropValue::Str(e) => field(e),
            other => Err(PartitioningError::NotString(other.clone())),
        })
        .collect()
}

/// A Delta table's partitioning from its `SHOW CREATE TABLE`: `partitioned_by = ARRAY[…]`
/// names the columns whose values partition it (Delta has no transforms: each column is
/// an identity field). No such property: unpartitioned.
pub fn delta_partitioning_from_show_create(
    text: &str,
) -> Result<Vec<PartitionField>, PartitioningError> {
    array_property(text, "partitioned_by", |column| {
        Ok(PartitionField {
            name: column.to_string(),
            source: column.to_string(),
            transform: Transform::Identity,
        })
    })
}

/// The `partitioning = ARRAY['a', 'day(b)']` property of the `WITH (…)` clause of
/// `SHOW CREATE TABLE`'s text (empty when the table is not partitioned).
pub fn partitioning_from_show_create(text: &str) -> Result<Vec<PartitionField>, PartitioningError> {
    array_property(text, "partitioning", parse_partition_entry)
}
