//! Which partitions a `--partition` spec names: its syntax, the partitions of the table
//! it matches, and a subset of the fields that spans more partitions than a writer holds.

use crate::lakehouse::model::PartitionStats;

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

/// The partitions `named` selects with each subset of the fields (`--partition
/// district=north` on a table partitioned by district and day) that spans more partitions
/// than a writer holds replaced by the partitions it spans, to be grouped in bounded
/// statements; and how many partitions those replaced (0 when none did).
pub(super) fn split_wide(
    all: &[PartitionStats],
    named: Vec<PartitionStats>,
    limit: usize,
) -> (Vec<PartitionStats>, usize) {
    let fields = all.first().map(|p| p.values.len()).unwrap_or(0);
    let mut out = Vec::new();
    let mut split = 0;
    for p in named {
        if p.spec_id.is_some() || p.values.len() >= fields {
            out.push(p);
            continue;
        }
        let spans: Vec<&PartitionStats> = all
            .iter()
            .filter(|a| {
                a.data_files > 0
                    && p.values
                        .iter()
                        .all(|(k, v)| a.values.iter().any(|(n, val)| n == k && val == v))
            })
            .collect();
        if spans.len() > limit {
            split += spans.len();
            out.extend(spans.into_iter().cloned());
        } else {
            out.push(p);
        }
    }
    (out, split)
}
