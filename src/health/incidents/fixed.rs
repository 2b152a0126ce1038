//! A failing DAG whose error names a connection fixed since: it passes its test now, or,
//! where Airflow tests nothing, it points elsewhere than the task failed on.

use super::affected::optimize_next;
use super::connections::{ConnFinding, why_untested};
use super::dags::{dag_failure_line, paused, runs, unpause};
use super::{DagFacts, Incident, Jump, Kind, Next, Severity, Triage, worse};

impl<'f, 'a> Triage<'f, 'a> {
    /// DAGs failing on `endpoint` whose errors name connections fixed since (`working`:
    /// their test passes now, or, untested, they point elsewhere). When floe fixed one and
    /// the DAG's last run came before, the run after the fix is what is left to do (and,
    /// untested, its proof); a run after the fix that still failed on the old endpoint
    /// means the tasks read another definition of the connection.
    pub(super) fn fixed_endpoint(
        &mut self,
        endpoint: &str,
        dags: &[&'a DagFacts],
        working: &[ConnFinding<'a>],
    ) {
        let d = dags[0];
        let c = &working[0];
        let now_at = c.endpoint.as_str();
        let fixed_at = self.facts.fixed.get(&c.id).copied();
        let ran_after = matches!((fixed_at, d.last_run_at), (Some(f), Some(r)) if r > f);
        let when = fixed_at
            .map(|t| format!("fixed {}", t.format("%H:%M")))
            .unwrap_or_else(|| "changed".into());
        let verdict = if c.works {
            "its test passes"
        } else {
            why_untested(&[c])
        };
        let (severity, state) = if ran_after {
            (
                Severity::Critical,
                format!(
                    "{when}, {verdict}, yet a run after it still failed on {endpoint}: the tasks read another definition of {} (an AIRFLOW_CONN_ variable or a secrets backend?)",
                    c.id
                ),
            )
        } else if c.works {
            (
                Severity::Warning,
                format!("{when}, its test passes; the last run failed before the fix: t trigger"),
            )
        } else {
            (
                Severity::Warning,
                format!(
                    "{when}, {verdict}: the DAG's next run proves it (t trigger); the last run failed on {endpoint}"
                ),
            )
        };
        let dag_ids: Vec<String> = dags.iter().map(|d| d.dag_id.clone()).collect();
        let cause = format!(
            "DAG {}{} {} (connection {} → {now_at}, {state})",
            d.dag_id,
            paused(d),
            runs(d.failed_runs),
            c.id
        );
        let mut evidence: Vec<String> = dags.iter().map(|d| dag_failure_line(d)).collect();
        evidence.extend(working.iter().map(|c| c.finding.message.clone()));
        let mut mine = Vec::new();
        for d in dags {
            self.handled.insert(d.dag_id.as_str());
            mine.extend(self.tables_of(&d.dag_id));
        }
        let tables = self.claim(&mine, &mut evidence);
        let mut next = Vec::new();
        next.extend(unpause(dags.iter().copied()));
        next.push(Next::Trigger {
            dag_id: dag_ids[0].clone(),
            after_fix: false,
        });
        if let Some(t) = tables.first() {
            next.push(optimize_next(t));
        }
        let severity = tables.iter().map(|t| t.severity).fold(severity, worse);
        self.out.push(Incident {
            severity,
            kind: Kind::DagFailing,
            cause,
            jump: Jump::DagFailure {
                dag_id: dag_ids[0].clone(),
            },
            tables,
            dags: dag_ids,
            evidence,
            next,
        });
    }
}
