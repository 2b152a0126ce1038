//! What the queries suffered: the coordinator's own record of the recent queries that
//! read a table. Its query list (`GET /v1/query`, or `system.runtime.queries` where it
//! does not serve it) gives the candidates (its text names the table); the query info it
//! links (`/v1/query/{id}`) decides — a query counts only when
//! its `inputs` hold the table — and tells the cost: elapsed, queued, CPU, splits,
//! physical input. A coordinator that keeps no such record, or a user who may not read
//! it, is an answer ([`TableQueries::Unavailable`]), not an error.
//!
//! The query text, user and source are the server's: hostile until sanitised where they
//! are shown.

use chrono::{DateTime, Utc};
use futures::stream::{self, StreamExt};
use serde::Serialize;

use super::model::TableRef;
use super::queries::Lakehouse;
use crate::fmt::{human_duration, thousands};
use crate::spelled::spelled;
use crate::sql::quote_string;
use crate::trino::{QueryInfo, TrinoError};

/// Candidates read from `system.runtime.queries`, newest first.
pub const MAX_CANDIDATES: usize = 60;
/// Query infos read per table (the newest candidates).
pub const MAX_INFOS: usize = 24;
/// Query infos read at once.
const INFO_CONCURRENCY: usize = 4;

spelled! {
    /// A query's state as the coordinator keeps it (`system.runtime.queries`).
    QueryState else Other {
        Queued = "QUEUED",
        WaitingForResources = "WAITING_FOR_RESOURCES",
        Dispatching = "DISPATCHING",
        Planning = "PLANNING",
        Starting = "STARTING",
        Running = "RUNNING",
        Finishing = "FINISHING",
        Finished = "FINISHED",
        Failed = "FAILED",
    }
}

/// One finished (or failed) query that read the table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryRun {
    pub query_id: String,
    pub state: QueryState,
    pub user: String,
    pub source: Option<String>,
    /// The statement as the coordinator keeps it (hostile text).
    pub query: String,
    pub created: Option<DateTime<Utc>>,
    pub ended: Option<DateTime<Utc>>,
    pub elapsed_ms: Option<u64>,
    pub queued_ms: Option<u64>,
    pub cpu_ms: Option<u64>,
    pub splits: Option<u64>,
    pub physical_input_bytes: Option<u64>,
    pub physical_written_bytes: Option<u64>,
    pub error_code: Option<String>,
}

/// The coordinator's answer about a table's queries.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "history", rename_all = "snake_case")]
pub enum TableQueries {
    /// The queries that read it, newest first; `unconfirmed`: candidates whose query
    /// info the coordinator no longer kept or would not show (not counted).
    Runs {
        runs: Vec<QueryRun>,
        unconfirmed: usize,
    },
    /// No such record here, in plain words (no history table, not allowed to read it).
    Unavailable { reason: String },
}

impl TableQueries {
    pub fn runs(&self) -> &[QueryRun] {
        match self {
            TableQueries::Runs { runs, .. } => runs,
            TableQueries::Unavailable { .. } => &[],
        }
    }
}

/// A regular expression (for `regexp_like`) matching a query text that names `t`'s table
/// as a whole word: not `documents$files` (floe's own metadata reads), not `documents_v2`.
pub fn table_word_pattern(t: &TableRef) -> String {
    let name: String = t
        .table
        .to_lowercase()
        .chars()
        .flat_map(|c| {
            let esc = !(c.is_ascii_alphanumeric() || c == '_');
            esc.then_some('\\').into_iter().chain(std::iter::once(c))
        })
        .collect();
    format!("(?i)(^|[^a-z0-9_$]){name}([^a-z0-9_$]|$)")
}

/// The candidates: finished or failed queries whose text names the table as a whole word
/// (not `documents$files`, floe's own metadata reads), floe's reads of this history left
/// out. A running query has no final cost yet.
pub fn candidates_sql(t: &TableRef) -> String {
    let pattern = table_word_pattern(t);
    format!(
        "SELECT query_id, state, \"user\", source, query, created, \"end\", error_code \
         FROM system.runtime.queries \
         WHERE state IN ('FINISHED', 'FAILED') AND regexp_like(query, {}) \
         AND strpos(query, 'system.runtime.queries') = 0 \
         ORDER BY created DESC LIMIT {MAX_CANDIDATES}",
        quote_string(&pattern)
    )
}

/// The coordinator's finished optimizes (`ALTER TABLE … EXECUTE optimize`), any table.
pub fn optimizes_sql() -> String {
    format!(
        "SELECT query_id, state, \"user\", source, query, created, \"end\", error_code \
         FROM system.runtime.queries \
         WHERE state = 'FINISHED' \
         AND regexp_like(query, '(?is)^\\s*alter\\s+table\\s.+\\sexecute\\s+optimize\\b') \
         ORDER BY created DESC LIMIT {MAX_OPTIMIZES}"
    )
}

/// Earlier optimizes read from the coordinator's history.
pub const MAX_OPTIMIZES: usize = 10;

/// Whether `query` names `t`'s table as a whole word, as [`table_word_pattern`] matches
/// it in the coordinator.
pub fn names_table_word(query: &str, t: &TableRef) -> bool {
    let (q, name) = (query.to_lowercase(), t.table.to_lowercase());
    let word =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    !name.is_empty()
        && q.match_indices(&name).any(|(i, _)| {
            !word(q[..i].chars().next_back()) && !word(q[i + name.len()..].chars().next())
        })
}

/// Whether `query` is an `ALTER TABLE … EXECUTE optimize`, as [`optimizes_sql`] picks
/// them in the coordinator.
pub fn is_optimize(query: &str) -> bool {
    let q = crate::text::fold_whitespace(query).to_lowercase();
    let Some(rest) = q.trim_start().strip_prefix("alter table ") else {
        return false;
    };
    rest.match_indices(" execute optimize").any(|(i, m)| {
        i > 0
            && !rest[i + m.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// A candidate from the coordinator's query list (its cost comes from its query info).
fn listed_candidate(q: crate::trino::client::query_list::ListedQuery) -> QueryRun {
    QueryRun {
        query_id: q.query_id,
        state: QueryState::parse(&q.state),
        user: q.user,
        source: q.source,
        query: q.query,
        created: q.created,
        ended: q.ended,
        elapsed_ms: None,
        queued_ms: None,
        cpu_ms: None,
        splits: None,
        physical_input_bytes: None,
        physical_written_bytes: None,
        error_code: q.error_code,
    }
}

/// Whether the query info says the query read `t`.
pub fn reads(info: &QueryInfo, t: &TableRef) -> bool {
    info.inputs.iter().any(|i| {
        i.catalog.eq_ignore_ascii_case(&t.catalog)
            && i.schema.eq_ignore_ascii_case(&t.schema)
            && i.table.eq_ignore_ascii_case(&t.table)
    })
}

/// `run` with the cost its query info records.
fn with_info(mut run: QueryRun, info: &QueryInfo) -> QueryRun {
    run.elapsed_ms = info.elapsed_ms.or_else(|| match (run.created, run.ended) {
        (Some(a), Some(b)) => u64::try_from((b - a).num_milliseconds()).ok(),
        _ => None,
    });
    run.queued_ms = info.queued_ms;
    run.cpu_ms = info.cpu_ms;
    run.splits = info.splits;
    run.physical_input_bytes = info.physical_input_bytes;
    run.physical_written_bytes = info.physical_written_bytes;
    run
}

/// The plain answer for an error that means "no history here" or "not yours to read".
pub fn unavailable(e: &TrinoError, user: &str, url: &str) -> Option<String> {
    match e {
        TrinoError::Query {
            error_name,
            message,
            ..
        } => match error_name.as_str() {
            "TABLE_NOT_FOUND" | "CATALOG_NOT_FOUND" | "SCHEMA_NOT_FOUND" | "NOT_SUPPORTED" => {
                Some(format!(
                    "the coordinator at {url} keeps no query history (system.runtime.queries: {message})"
                ))
            }
            "PERMISSION_DENIED" => Some(format!(
                "user {user} may not read the coordinator's query history ({message})"
            )),
            _ => None,
        },
        TrinoError::Auth { status: 403, .. } => Some(format!(
            "user {user} may not read the coordinator's query history"
        )),
        _ => None,
    }
}

/// Which of the coordinator's listed queries are candidates: of `state` (all: `None`),
/// those `pick` keeps, the `limit` newest.
struct Listed<'a> {
    state: Option<&'a str>,
    pick: &'a (dyn Fn(&QueryRun) -> bool + Sync),
    limit: usize,
}

impl Lakehouse {
    /// The recent queries the coordinator ran that read `t`, newest first.
    pub async fn table_queries(&self, t: &TableRef) -> Result<TableQueries, TrinoError> {
        let pick = |q: &QueryRun| {
            matches!(q.state, QueryState::Finished | QueryState::Failed)
                && names_table_word(&q.query, t)
                && !q.query.contains("system.runtime.queries")
        };
        let listed = Listed {
            state: None,
            pick: &pick,
            limit: MAX_CANDIDATES,
        };
        self.history(&candidates_sql(t), listed, MAX_INFOS, |i| reads(i, t))
            .await
    }

    /// The optimizes the coordinator still keeps (any table), newest first, with what
    /// they wrote.
    pub async fn optimize_runs(&self) -> Result<TableQueries, TrinoError> {
        let pick = |q: &QueryRun| is_optimize(&q.query);
        let listed = Listed {
            state: Some("FINISHED"),
            pick: &pick,
            limit: MAX_OPTIMIZES,
        };
        self.history(&optimizes_sql(), listed, MAX_OPTIMIZES, |_| true)
            .await
    }

    /// The candidates: from the coordinator's query list those `listed` picks, newest
    /// first, or those `sql` lists where it does not serve the list.
    async fn candidates(&self, sql: &str, listed: Listed<'_>) -> Result<Vec<QueryRun>, TrinoError> {
        if let Some(qs) = self.query_list(listed.state).await {
            let mut cands: Vec<QueryRun> = qs?
                .into_iter()
                .map(listed_candidate)
                .filter(|q| (listed.pick)(q))
                .collect();
            cands.sort_by_key(|q| std::cmp::Reverse(q.created));
            cands.truncate(listed.limit);
            return Ok(cands);
        }
        let out = self.client.query(sql).await?;
        Ok(out
            .rows
            .iter()
            .filter_map(crate::trino::client::query_list::ListedQuery::from_row)
            .map(listed_candidate)
            .collect())
    }

    /// The candidates (see [`Lakehouse::candidates`]), each kept when its query info
    /// passes `keep`.
    async fn history(
        &self,
        sql: &str,
        listed: Listed<'_>,
        infos: usize,
        keep: impl Fn(&QueryInfo) -> bool,
    ) -> Result<TableQueries, TrinoError> {
        let user = self.client.config().user.clone();
        let url = self.client.url().to_string();
        let cands = match self.candidates(sql, listed).await {
            Ok(c) => c,
            Err(e) => {
                return match unavailable(&e, &user, &url) {
                    Some(reason) => Ok(TableQueries::Unavailable { reason }),
                    None => Err(e),
                };
            }
        };
        let client = &self.client;
        let infos: Vec<(QueryRun, Result<QueryInfo, TrinoError>)> =
            stream::iter(cands.into_iter().take(infos))
                .map(|c| async move {
                    let info = client.query_info(&c.query_id).await;
                    (c, info)
                })
                .buffered(INFO_CONCURRENCY)
                .collect()
                .await;
        let mut runs = Vec::new();
        let mut unconfirmed = 0;
        for (c, info) in infos {
            match info {
                Ok(i) if keep(&i) => runs.push(with_info(c, &i)),
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(query = %c.query_id, error = %e, "no query info");
                    unconfirmed += 1;
                }
            }
        }
        Ok(TableQueries::Runs { runs, unconfirmed })
    }
}

/// `4m12s`, `18s`, `2.4s`, `850ms`.
pub fn elapsed_text(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 10_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else if ms < 60_000 {
        format!("{}s", ms / 1000)
    } else if ms < 3_600_000 {
        let s = ms / 1000;
        if s.is_multiple_of(60) {
            format!("{}m", s / 60)
        } else {
            format!("{}m{}s", s / 60, s % 60)
        }
    } else {
        human_duration((ms / 1000) as i64)
    }
}

/// `the dashboard query`, `a query by alice`.
pub fn who(r: &QueryRun) -> String {
    match &r.source {
        Some(s) => format!("the {s} query"),
        None => format!("a query by {}", r.user),
    }
}

/// The statement as one comparable line (whitespace folded): runs of the same query.
pub fn shape(q: &str) -> String {
    crate::text::fold_whitespace(q)
}

/// The median elapsed time of `v` (not empty).
fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    let n = v.len();
    if !n.is_multiple_of(2) {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

/// The worst of the queries that read a table: the slowest run, against the median of
/// the runs of the same statement the coordinator keeps.
#[derive(Clone, Debug, PartialEq)]
pub struct Suffering<'a> {
    pub run: &'a QueryRun,
    pub elapsed_ms: u64,
    /// Runs of the same statement (this one included).
    pub same: usize,
    pub median_ms: u64,
    /// The oldest of those runs.
    pub since: Option<DateTime<Utc>>,
}

/// A table procedure (`ALTER TABLE … EXECUTE optimize`, `expire_snapshots`, …): the
/// maintenance of a table, not a reader of it.
pub fn is_table_procedure(query: &str) -> bool {
    let words: Vec<String> = query
        .split_whitespace()
        .take(64)
        .map(str::to_ascii_lowercase)
        .collect();
    words.len() > 3
        && words[0] == "alter"
        && words[1] == "table"
        && words[2..].iter().any(|w| w == "execute")
}

pub fn suffering(runs: &[QueryRun]) -> Option<Suffering<'_>> {
    suffering_until(runs, None)
}

/// [`suffering`] among the runs created before `until` (a fix: what the queries suffered
/// is what they suffered before it, not a later run slowed by a busy coordinator).
pub fn suffering_until(runs: &[QueryRun], until: Option<DateTime<Utc>>) -> Option<Suffering<'_>> {
    // The readers: a table's own maintenance is not what its queries suffered.
    let runs: Vec<&QueryRun> = runs
        .iter()
        .filter(|r| !is_table_procedure(&r.query))
        .filter(|r| until.is_none_or(|u| r.created.is_some_and(|c| c < u)))
        .collect();
    let (run, elapsed_ms) = runs
        .iter()
        .copied()
        .filter_map(|r| r.elapsed_ms.map(|e| (r, e)))
        .max_by_key(|(_, e)| *e)?;
    let key = shape(&run.query);
    let same: Vec<&QueryRun> = runs
        .iter()
        .copied()
        .filter(|r| r.elapsed_ms.is_some() && shape(&r.query) == key)
        .collect();
    Some(Suffering {
        run,
        elapsed_ms,
        same: same.len(),
        median_ms: median(same.iter().filter_map(|r| r.elapsed_ms).collect()),
        since: same.iter().filter_map(|r| r.created).min(),
    })
}

impl Suffering<'_> {
    /// `the dashboard query on documents took 4m12s reading 18,000 splits; its median
    /// over the last 6h (5 runs) 18s`.
    pub fn line(&self, table: &str, now: DateTime<Utc>) -> String {
        let r = self.run;
        let verb = if r.state == QueryState::Failed {
            "failed after"
        } else {
            "took"
        };
        let mut s = format!(
            "{} on {table} {verb} {}",
            who(r),
            elapsed_text(self.elapsed_ms)
        );
        if let Some(n) = r.splits {
            s.push_str(&format!(" reading {} splits", thousands(n)));
        }
        if self.same > 1 {
            let over = self
                .since
                .map(|t| {
                    format!(
                        "the last {}",
                        human_duration((now - t).num_seconds().max(1))
                    )
                })
                .unwrap_or_else(|| "the coordinator's history".into());
            s.push_str(&format!(
                "; its median over {over} ({} runs) {}",
                self.same,
                elapsed_text(self.median_ms)
            ));
        } else {
            s.push_str("; the only run of it the coordinator keeps");
        }
        s
    }
}

/// What `i` shows about a table's queries: the worst first, then the newest runs.
pub fn lines(q: &TableQueries, table: &str, now: DateTime<Utc>, max: usize) -> Vec<String> {
    match q {
        TableQueries::Unavailable { reason } => vec![format!("queries: {reason}")],
        TableQueries::Runs { runs, unconfirmed } => {
            let mut out = Vec::new();
            match suffering(runs) {
                None => out.push(format!(
                    "queries: none that read {table} in the coordinator's recent history"
                )),
                Some(w) => out.push(format!("queries: {}", w.line(table, now))),
            }
            for r in runs.iter().take(max) {
                out.push(run_line(r, now));
            }
            if runs.len() > max {
                out.push(format!("  and {} more", runs.len() - max));
            }
            if *unconfirmed > 0 {
                out.push(format!(
                    "  {unconfirmed} more named {table} but their details were no longer kept or not visible"
                ));
            }
            out
        }
    }
}

/// `  3m ago FINISHED 4m12s, 18,000 splits, 2.1 GB read, cpu 9m — dashboard (alice): SELECT …`
pub fn run_line(r: &QueryRun, now: DateTime<Utc>) -> String {
    let mut facts = Vec::new();
    if let Some(e) = r.elapsed_ms {
        facts.push(elapsed_text(e));
    }
    if let Some(q) = r.queued_ms.filter(|q| *q >= 1000) {
        facts.push(format!("queued {}", elapsed_text(q)));
    }
    if let Some(n) = r.splits {
        facts.push(format!("{} splits", thousands(n)));
    }
    if let Some(b) = r.physical_input_bytes {
        facts.push(format!("{} read", crate::fmt::human_bytes(b)));
    }
    if let Some(c) = r.cpu_ms {
        facts.push(format!("cpu {}", elapsed_text(c)));
    }
    let ago = r
        .created
        .map(|t| format!("{} ago ", human_duration((now - t).num_seconds().max(0))))
        .unwrap_or_default();
    let by = match &r.source {
        Some(s) => format!("{s} ({})", r.user),
        None => r.user.clone(),
    };
    format!(
        "  {ago}{} {} — {by}: {}",
        r.state,
        facts.join(", "),
        crate::text::clip(&shape(&r.query), 80)
    )
}

#[cfg(test)]
mod tests;
