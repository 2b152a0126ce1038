//! Which tables a steady refresh looks at, and what floe's reads have cost the coordinator
//! lately (the ledger the rotation shrinks under the budget).

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

use super::{Ctx, Records, RefreshPolicy};
use crate::lakehouse::model::TableRef;
use crate::trino::Cost;

/// Readings of the client's cost meter, oldest first, the last ten minutes of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ledger(VecDeque<(DateTime<Utc>, Cost)>);

impl Ledger {
    /// A reading of the meter at `now`.
    pub fn record(&mut self, now: DateTime<Utc>, c: Cost) {
        if self.0.back().is_some_and(|(_, last)| *last == c) && self.0.len() > 1 {
            // Nothing sent since: the newest reading moves, the cost per minute falls.
            self.0.pop_back();
        }
        self.0.push_back((now, c));
        while self
            .0
            .front()
            .is_some_and(|(at, _)| (now - *at).num_seconds() > 600)
        {
            self.0.pop_front();
        }
    }

    /// What floe cost the coordinator per minute over the last five minutes of readings
    /// (planning plus task CPU, seconds); `None` with less than half a minute of them.
    pub fn per_minute(&self) -> Option<f64> {
        let (last_at, last) = self.0.back()?;
        let (first_at, first) = self
            .0
            .iter()
            .find(|(at, _)| (*last_at - *at).num_seconds() <= 300)?;
        let span = (*last_at - *first_at).num_milliseconds() as f64 / 60_000.0;
        if span < 0.5 {
            return None;
        }
        Some(last.since(first).coordinator_ms() as f64 / 1000.0 / span)
    }
}

/// The tables a steady refresh probes, in `order`: every table never read, failed, or
/// shown from the cache of an earlier run; then the least recently checked, at the rate
/// that looks at every table within `full_every` at this refresh interval — fewer when the
/// last minutes cost the coordinator more than the budget, in proportion.
///
/// The rate accrues in `credit` (tables owed) and is paid in whole probe statements of
/// `probe_batch` tables: a statement costs the coordinator's process one to two tables'
/// reads before it reads any (on Trino 476: `SELECT 1` 22-92 ms of CPU, a probe of five
/// tables 110-300 ms), so 300 tables an hour are ten every other minute, not five every
/// minute. A table may then wait a batch's refreshes past `full_every`; the batch
/// of the tables that must be probed is filled from the rotation when the credit allows.
pub(super) fn rotation(
    order: &[TableRef],
    records: &impl Records,
    policy: &RefreshPolicy,
    ledger: &Ledger,
    ctx: Ctx<'_>,
    credit: &mut f64,
) -> Vec<TableRef> {
    let mut rate = match policy.full_every {
        Some(every) if !every.is_zero() => {
            order.len() as f64 * ctx.refresh_every.as_secs_f64() / every.as_secs_f64()
        }
        _ => 0.0,
    };
    if let (Some(budget), Some(spent)) = (policy.budget, ledger.per_minute())
        && spent > budget.as_secs_f64()
    {
        rate *= budget.as_secs_f64() / spent;
    }
    let mut must = Vec::new();
    let mut rest = Vec::new();
    for t in order {
        let Some(r) = records.get(t) else { continue };
        if r.stats.is_none() || r.error.is_some() || r.cached {
            must.push(t.clone());
        } else {
            rest.push((r.checked_at, t));
        }
    }
    let batch = policy.probe_batch.max(1);
    *credit = (*credit + rate).min((rest.len() + batch) as f64);
    let owed = credit.floor() as usize;
    // Whole batches, or the whole rotation once it is owed (a rotation smaller than a
    // batch waits for all of it).
    let mut take = if owed >= rest.len() {
        rest.len()
    } else {
        owed / batch * batch
    };
    if !must.is_empty() {
        let free = (batch - must.len() % batch) % batch;
        take = (take + free.min(owed - take)).min(rest.len());
    }
    *credit -= take as f64;
    rest.sort_by_key(|(at, _)| *at);
    must.extend(rest.into_iter().take(take).map(|(_, t)| t.clone()));
    must
}
