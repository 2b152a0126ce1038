//! Failing DAGs as incidents: pinned on the connection their error names, else grouped by
//! the endpoint their error names, the suspect connections there with them.

use std::collections::BTreeMap;

use super::affected::optimize_next;
use super::connections::{ConnFinding, conn_state, ids};
use super::dags::{dag_failure_line, paused, runs, unpause};
use super::endpoints::{contains_word, endpoints};
use super::{DagFacts, Incident, Jump, Kind, Next, Severity, Triage, plural};

impl<'f, 'a> Triage<'f, 'a> {
    /// Failing DAGs: pinned on the connection their error names, else by the endpoint
    /// their error names, else one incident each.
    pub(super) fn failing_dags(&mut self) {
        let mut by_conn: BTreeMap<usize, Vec<&'a DagFacts>> = BTreeMap::new();
        let mut by_endpoint: BTreeMap<String, Vec<&'a DagFacts>> = BTreeMap::new();
        let mut alone: Vec<&'a DagFacts> = Vec::new();
        for &d in &self.facts.dags {
            if d.import_error.is_some() || !d.last_run_failed() {
                continue;
            }
            let error = d.error_line.as_deref().unwrap_or("");
            let named = endpoints(error);
            // The connection the error names (`(connection trino_documents)`) is the one
            // that failed: once it works or points elsewhere, the failure stays its own,
            // never another's that still points at the endpoint in the error.
            if let Some(i) = self.conns.iter().position(|c| contains_word(error, &c.id)) {
                let c = &self.conns[i];
                if c.works || !(named.is_empty() || named.contains(&c.endpoint)) {
                    by_conn.entry(i).or_default().push(d);
                    continue;
                }
            }
            // Prefer an endpoint a suspect connection points at; else the first named.
            let chosen = named
                .iter()
                .find(|e| self.conns.iter().any(|c| c.suspect() && &c.endpoint == *e))
                .or(named.first());
            match chosen {
                Some(e) => by_endpoint.entry(e.clone()).or_default().push(d),
                None => alone.push(d),
            }
        }
        for (i, dags) in by_conn {
            let c = self.conns[i].clone();
            self.pinned(&c, &dags);
        }
        for (endpoint, dags) in &by_endpoint {
            self.endpoint(endpoint, dags, None);
        }
        for d in alone {
            self.dag_failing(d);
        }
    }

    /// DAGs whose errors name connection `c`, which works now or points elsewhere than
    /// they failed on: fixed since (or, failing its test, the suspect where it points now).
    fn pinned(&mut self, c: &ConnFinding<'a>, dags: &[&'a DagFacts]) {
        let failed_on = failed_on(dags);
        if c.failing {
            return self.endpoint(&c.endpoint.clone(), dags, Some(c));
        }
        let endpoint = failed_on.first().unwrap_or(&c.endpoint).clone();
        self.fixed_endpoint(&endpoint, dags, std::slice::from_ref(c));
    }

    /// DAGs failing on one endpoint, with the Airflow connections that point there (the
    /// suspects: none says it works), or the one their errors name (`pinned`).
    fn endpoint(
        &mut self,
        endpoint: &str,
        dags: &[&'a DagFacts],
        pinned: Option<&ConnFinding<'a>>,
    ) {
        let here: Vec<ConnFinding<'a>> = self
            .conns
            .iter()
            .filter(|c| c.suspect() && c.endpoint == endpoint)
            .cloned()
            .collect();
        // The one pinned, else those the DAGs' own errors name (as a word), else every
        // suspect at the endpoint.
        let names = |id: &str| {
            dags.iter().any(|d| {
                d.error_line
                    .as_deref()
                    .is_some_and(|e| contains_word(e, id))
            })
        };
        let shown: Vec<&ConnFinding> = match pinned {
            Some(c) => vec![c],
            None if here.iter().any(|c| names(&c.id)) => {
                here.iter().filter(|c| names(&c.id)).collect()
            }
            None => here.iter().collect(),
        };
        let dag_ids: Vec<String> = dags.iter().map(|d| d.dag_id.clone()).collect();
        let what = if dags.len() == 1 {
            format!(
                "DAG {}{} {}",
                dags[0].dag_id,
                paused(dags[0]),
                runs(dags[0].failed_runs)
            )
        } else {
            format!(
                "DAGs {} failing ({} failed runs)",
                dag_ids.join(", "),
                dags.iter().map(|d| d.failed_runs.max(1)).sum::<u32>()
            )
        };
        let failed_on = failed_on(dags);
        let cause = if shown.is_empty() {
            format!("{what} (its error names {endpoint})")
        } else {
            let moved = match failed_on.first() {
                Some(e) if !failed_on.iter().any(|f| f == endpoint) => {
                    format!("; its last run failed on {e}")
                }
                _ => String::new(),
            };
            format!(
                "{what} ({} {} → {endpoint}, {}{moved})",
                plural(shown.len(), "connection", "connections"),
                ids(&shown).join(", "),
                conn_state(&shown, dags[0].error_line.as_deref())
            )
        };
        let mut evidence: Vec<String> = dags.iter().map(|d| dag_failure_line(d)).collect();
        for c in here.iter().chain(pinned.filter(|p| !p.suspect())) {
            evidence.push(c.finding.message.clone());
            self.used.insert(c.index);
        }
        let mut mine = Vec::new();
        for d in dags {
            self.handled.insert(d.dag_id.as_str());
            mine.extend(self.tables_of(&d.dag_id));
        }
        let tables = self.claim(&mine, &mut evidence);
        let mut next = vec![Next::FixConnection {
            connections: ids(&shown),
            endpoint: Some(endpoint.to_string()),
        }];
        next.extend(unpause(dags.iter().copied()));
        next.push(Next::Trigger {
            dag_id: dag_ids[0].clone(),
            after_fix: true,
        });
        if let Some(t) = tables.first() {
            next.push(optimize_next(t));
        }
        self.out.push(Incident {
            severity: Severity::Critical,
            kind: Kind::Endpoint,
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

/// The endpoints the DAGs' errors name, in order, each once.
fn failed_on(dags: &[&DagFacts]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in dags {
        for e in endpoints(d.error_line.as_deref().unwrap_or("")) {
            if !out.contains(&e) {
                out.push(e);
            }
        }
    }
    out
}
