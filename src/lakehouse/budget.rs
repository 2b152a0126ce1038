//! What floe's steady refreshes cost a coordinator per minute, from what each of their
//! statements costs it (planning plus task CPU): a listing and a read of the recent
//! writes each refresh, and the probes of the rotation. Pure.

use std::time::Duration;

/// The figures of one coordinator and one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SteadyCost {
    pub tables: usize,
    pub refresh: Duration,
    /// Every table checked within (`None`: only written tables are).
    pub full_every: Option<Duration>,
    pub probe_batch: usize,
    pub listing_ms: u64,
    /// One probe statement of `probe_batch` tables.
    pub probe_ms: u64,
    pub writes_ms: u64,
}

impl SteadyCost {
    /// Tables the rotation looks at each refresh, on average.
    pub fn quota(&self) -> f64 {
        match self.full_every {
            Some(e) if !e.is_zero() => {
                self.tables as f64 * self.refresh.as_secs_f64() / e.as_secs_f64()
            }
            _ => 0.0,
        }
    }

    /// Probe statements a refresh, on average: the rotation sends whole batches (of
    /// every table, when they are fewer than a batch).
    pub fn probes_per_refresh(&self) -> f64 {
        self.quota() / self.probe_batch.min(self.tables).max(1) as f64
    }

    /// The probes' cadence in words: "2 probes a refresh", "a probe every 2 refreshes".
    pub fn probe_cadence(&self) -> String {
        let p = self.probes_per_refresh();
        let round = |x: f64| format!("{:.1}", x).trim_end_matches(".0").to_string();
        if p <= 0.0 {
            "no probes".into()
        } else if p >= 1.0 {
            let n = round(p);
            format!("{n} probe{} a refresh", if n == "1" { "" } else { "s" })
        } else {
            format!("a probe every {} refreshes", round(1.0 / p))
        }
    }

    fn refreshes_per_minute(&self) -> f64 {
        60.0 / self.refresh.as_secs_f64().max(1.0)
    }

    /// The coordinator's time a minute.
    pub fn per_minute(&self) -> Duration {
        let per_refresh = (self.listing_ms + self.writes_ms) as f64
            + self.probes_per_refresh() * self.probe_ms as f64;
        Duration::from_secs_f64(per_refresh / 1000.0 * self.refreshes_per_minute())
    }

    /// How soon every table is looked at under `budget`: `full_every`, or longer when
    /// the budget leaves fewer probes than that takes (`None`: never, or no rotation).
    pub fn checked_within(&self, budget: Option<Duration>) -> Option<Duration> {
        let every = self.full_every.filter(|e| !e.is_zero())?;
        let Some(budget) = budget else {
            return Some(every);
        };
        let per_min = self.per_minute().as_secs_f64();
        if per_min <= budget.as_secs_f64() || self.probes_per_refresh() <= 0.0 {
            return Some(every);
        }
        let fixed =
            (self.listing_ms + self.writes_ms) as f64 / 1000.0 * self.refreshes_per_minute();
        let left = budget.as_secs_f64() - fixed;
        if left <= 0.0 {
            return None;
        }
        let share = left / (per_min - fixed);
        Some(Duration::from_secs_f64(every.as_secs_f64() / share))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(tables: usize, probe_ms: u64) -> SteadyCost {
        SteadyCost {
            tables,
            refresh: Duration::from_secs(60),
            full_every: Some(Duration::from_secs(3600)),
            probe_batch: 10,
            listing_ms: 30,
            probe_ms,
            writes_ms: 120,
        }
    }

    #[test]
    fn the_steady_cost_is_the_listing_the_writes_and_the_rotations_probes() {
        let c = at(1000, 200);
        // 16.7 tables a refresh, in probes of ten: 1.67 probes of 200 ms.
        assert_eq!(c.probe_cadence(), "1.7 probes a refresh");
        assert_eq!(c.per_minute().as_millis(), 483);
        // 300 tables: five a refresh, a probe of ten every other one.
        let c = at(300, 200);
        assert_eq!(c.probe_cadence(), "a probe every 2 refreshes");
        assert_eq!(c.per_minute(), Duration::from_millis(250));
        // Fewer tables than a batch: all of them in one probe an hour.
        assert_eq!(at(3, 200).probe_cadence(), "a probe every 60 refreshes");
        assert_eq!(at(6000, 200).probe_cadence(), "10 probes a refresh");
        assert_eq!(at(600, 200).probe_cadence(), "1 probe a refresh");
        assert_eq!(
            c.checked_within(Some(Duration::from_secs(2))),
            Some(Duration::from_secs(3600))
        );
    }

    #[test]
    fn over_the_budget_every_table_is_checked_less_often_or_never() {
        let c = at(1000, 1_000);
        // 0.15 s fixed + 1.67 s of probes a minute: 0.85 s left of a 1 s budget, 0.51 of
        // them: every table within 1 h / 0.51.
        let within = c.checked_within(Some(Duration::from_secs(1))).unwrap();
        assert_eq!(within.as_secs(), 7058, "{within:?}");
        assert_eq!(
            c.checked_within(Some(Duration::from_millis(100))),
            None,
            "the fixed cost alone is over"
        );
        assert_eq!(c.checked_within(None), Some(Duration::from_secs(3600)));
    }
}
