//! The predicates that select a partition: typed equality and ranges aligned to its
//! bounds under the current spec, its `"$partition"` path otherwise, and the match on the
//! `partition` row of `$files`.

use chrono::{Datelike, NaiveDate, NaiveDateTime};

use super::{TableLayout, Transform};
use crate::lakehouse::model::PartitionStats;
use crate::sql::{LiteralError, quote_ident, quote_string, typed_literal};

/// Why no predicate selects a partition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PredicateError {
    #[error("the table is not partitioned: optimize it as a whole")]
    NotPartitioned,
    /// A partition path of a table without partition values.
    #[error("the table is not partitioned")]
    NoPath,
    #[error("partition field {0:?} is not in the table's current partitioning")]
    NotInSpec(String),
    #[error("partition source column {0:?} not found")]
    NoSourceColumn(String),
    #[error(transparent)]
    Literal(#[from] LiteralError),
    /// `partition`: its label.
    #[error(
        "partition {0} cannot be selected by its path: Iceberg writes NULL and the string 'null' alike there"
    )]
    AmbiguousPath(String),
    #[error("the partition has only void fields: optimize the table as a whole")]
    OnlyVoid,
    #[error("partition value {value:?} does not fit transform {transform:?}")]
    Misfit { value: String, transform: Transform },
    #[error("no partition value to match")]
    NoValue,
    #[error("a temporal partition on a {0} column")]
    TemporalColumn(String),
    #[error("an hour partition on a date column")]
    HourOnDate,
}

pub fn partition_predicate(
    layout: &TableLayout,
    p: &PartitionStats,
) -> Result<String, PredicateError> {
    if p.values.is_empty() {
        return Err(PredicateError::NotPartitioned);
    }
    let mut terms = Vec::new();
    for (name, value) in &p.values {
        let field = layout
            .field(name)
            .ok_or_else(|| PredicateError::NotInSpec(name.clone()))?;
        let col = quote_ident(&field.source);
        let ty = layout
            .column_type(&field.source)
            .ok_or_else(|| PredicateError::NoSourceColumn(field.source.clone()))?
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
                    return Err(PredicateError::AmbiguousPath(p.label()));
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
        return Err(PredicateError::OnlyVoid);
    }
    Ok(terms.join(" AND "))
}

/// A predicate on the `partition` row of `$files` (aliased `f`) matching partitions whose
/// rendered values are `values` (all fields or a subset): each value turned back into the
/// field's own type (years, months and hours since 1970, dates, the source column's type).
pub fn files_partition_predicate(
    layout: &TableLayout,
    values: &[(String, Option<String>)],
) -> Result<String, PredicateError> {
    let mut terms = Vec::new();
    for (name, value) in values {
        let field = layout
            .field(name)
            .ok_or_else(|| PredicateError::NotInSpec(name.clone()))?;
        let col = format!("f.partition.{}", quote_ident(name));
        let Some(v) = value else {
            terms.push(format!("{col} IS NULL"));
            continue;
        };
        let bad = || PredicateError::Misfit {
            value: v.clone(),
            transform: field.transform.clone(),
        };
        let source_type = || {
            layout
                .column_type(&field.source)
                .ok_or_else(|| PredicateError::NoSourceColumn(field.source.clone()))
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
        return Err(PredicateError::NoValue);
    }
    Ok(terms.join(" AND "))
}

fn temporal_bounds(
    t: &Transform,
    v: &str,
) -> Result<(NaiveDateTime, NaiveDateTime), PredicateError> {
    let bad = || PredicateError::Misfit {
        value: v.to_string(),
        transform: t.clone(),
    };
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

fn range(
    col: &str,
    ty: &str,
    lo: NaiveDateTime,
    hi: NaiveDateTime,
) -> Result<String, PredicateError> {
    let t = ty.to_ascii_lowercase();
    let lit = |x: NaiveDateTime| -> Result<String, PredicateError> {
        if t == "date" {
            Ok(typed_literal("date", &x.format("%Y-%m-%d").to_string())?)
        } else if t.starts_with("timestamp") {
            Ok(typed_literal(
                &t,
                &x.format("%Y-%m-%d %H:%M:%S").to_string(),
            )?)
        } else {
            Err(PredicateError::TemporalColumn(ty.to_string()))
        }
    };
    if t == "date" && (lo.time() != chrono::NaiveTime::MIN || hi.time() != chrono::NaiveTime::MIN) {
        return Err(PredicateError::HourOnDate);
    }
    Ok(format!("{col} >= {} AND {col} < {}", lit(lo)?, lit(hi)?))
}

/// Whether the partition's path (`"$partition"`) may also be another partition's: Iceberg
/// writes a NULL value as `null`, the way it writes the string `'null'`.
pub(super) fn path_is_ambiguous(layout: &TableLayout, p: &PartitionStats) -> bool {
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
pub fn partition_path(p: &PartitionStats) -> Result<String, PredicateError> {
    if p.values.is_empty() {
        return Err(PredicateError::NoPath);
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
