//! What floe's statements cost the coordinator, as the coordinator itself reports it in
//! each statement's final stats: planning time (`planningTimeMillis`, 469+) and task CPU
//! (`cpuTimeMillis`). Shared by every clone of a client, so one meter sums all a
//! connection sent; the refresh weighs its reads against `[refresh] coordinator_budget`
//! with it.

use std::sync::atomic::{AtomicU64, Ordering};

use super::wire::StatementStats;

/// Running totals of the statements a client finished (succeeded or failed on the server).
#[derive(Debug, Default)]
pub struct CostMeter {
    statements: AtomicU64,
    planning_ms: AtomicU64,
    cpu_ms: AtomicU64,
    elapsed_ms: AtomicU64,
    /// Statements whose server reported no planning time (before 469): their elapsed time
    /// stands in for it, an upper bound.
    unplanned: AtomicU64,
}

/// A reading of a [`CostMeter`]; differences of two readings are what happened between.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    pub statements: u64,
    pub planning_ms: u64,
    pub cpu_ms: u64,
    pub elapsed_ms: u64,
}

impl Cost {
    /// What the coordinator spent: planning plus task CPU.
    pub fn coordinator_ms(&self) -> u64 {
        self.planning_ms + self.cpu_ms
    }

    /// What happened since `earlier`.
    pub fn since(&self, earlier: &Cost) -> Cost {
        Cost {
            statements: self.statements.saturating_sub(earlier.statements),
            planning_ms: self.planning_ms.saturating_sub(earlier.planning_ms),
            cpu_ms: self.cpu_ms.saturating_sub(earlier.cpu_ms),
            elapsed_ms: self.elapsed_ms.saturating_sub(earlier.elapsed_ms),
        }
    }
}

impl CostMeter {
    /// Count a statement by its final stats.
    pub fn record(&self, s: &StatementStats) {
        let planning = match s.planning_time_millis {
            Some(p) => p,
            None => {
                self.unplanned.fetch_add(1, Ordering::Relaxed);
                s.elapsed_time_millis
            }
        };
        self.statements.fetch_add(1, Ordering::Relaxed);
        self.planning_ms.fetch_add(planning, Ordering::Relaxed);
        self.cpu_ms.fetch_add(s.cpu_time_millis, Ordering::Relaxed);
        self.elapsed_ms
            .fetch_add(s.elapsed_time_millis, Ordering::Relaxed);
    }

    pub fn read(&self) -> Cost {
        Cost {
            statements: self.statements.load(Ordering::Relaxed),
            planning_ms: self.planning_ms.load(Ordering::Relaxed),
            cpu_ms: self.cpu_ms.load(Ordering::Relaxed),
            elapsed_ms: self.elapsed_ms.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planning_and_cpu_add_up_and_elapsed_stands_in_for_a_missing_planning_time() {
        let m = CostMeter::default();
        let before = m.read();
        m.record(&StatementStats {
            planning_time_millis: Some(120),
            cpu_time_millis: 30,
            elapsed_time_millis: 400,
            ..Default::default()
        });
        // An older server: no planning time; its elapsed time bounds it.
        m.record(&StatementStats {
            planning_time_millis: None,
            cpu_time_millis: 5,
            elapsed_time_millis: 90,
            ..Default::default()
        });
        let d = m.read().since(&before);
        assert_eq!(d.statements, 2);
        assert_eq!(d.planning_ms, 210);
        assert_eq!(d.cpu_ms, 35);
        assert_eq!(d.coordinator_ms(), 245);
        assert_eq!(d.elapsed_ms, 490);
    }
}
