//! The coordinator's record of its queries, read from its query list over HTTP where it
//! serves one (`GET /v1/query`), else with a statement over `system.runtime.queries`:
//! the recent writes a refresh looks at first (see [`crate::lakehouse::recent_writes`])
//! and the queries that read a table (see [`crate::lakehouse::query_history`]).

use super::Lakehouse;
use crate::lakehouse::recent_writes::{RecentWrites, of_queries, recent_writes_sql};
use crate::trino::TrinoError;
use crate::trino::client::query_list::ListedQuery;

/// Whether `e` says the coordinator does not serve its query list to floe (a gateway or
/// proxy without `/v1/query`, a server that answers something else, an answer over
/// `trino.max_response_size`), as opposed to a failure of the moment. A refused login is
/// the moment's (an expired token, a password changed): the statement would meet it too,
/// and a list kept refused for the server's version would outlive it.
fn list_refused(e: &TrinoError) -> bool {
    match e {
        TrinoError::Http { status, .. } => matches!(status, 400 | 404 | 405 | 406 | 410 | 501),
        TrinoError::Malformed { .. } | TrinoError::TooLarge { .. } => true,
        _ => false,
    }
}

impl Lakehouse {
    /// The coordinator's query list (of one state, or all): `None` where it does not
    /// serve it to floe, learned on the first refusal and kept with the other learned
    /// fallbacks, so that the caller reads the statement instead and the list is not
    /// asked again. The list costs the coordinator a few milliseconds where the statement
    /// costs it a query: on the real Trino 476, 8 ms of its CPU against 96-116 ms for the
    /// writes' statement, and no entry of its own in the list.
    pub(crate) async fn query_list(
        &self,
        state: Option<&str>,
    ) -> Option<Result<Vec<ListedQuery>, TrinoError>> {
        if !self.query_list_served() {
            return None;
        }
        match self.client.queries(state).await {
            Err(e) if list_refused(&e) => {
                let why = e.to_string();
                tracing::info!("the coordinator's query list is not served: {why}");
                self.learn_entries(|r| r.query_list_refused(&why));
                None
            }
            r => Some(r),
        }
    }

    /// Whether the coordinator's record is read from its query list (no statement), as
    /// far as this connection knows.
    pub fn query_list_served(&self) -> bool {
        self.entries_unreadable
            .lock()
            .is_ok_and(|r| r.query_list().is_none())
    }

    /// The writes the coordinator finished after `since` (its clock): the tables they
    /// name, and when the last one ended.
    pub async fn recent_writes(
        &self,
        since: chrono::DateTime<chrono::Utc>,
    ) -> Result<RecentWrites, TrinoError> {
        if let Some(listed) = self.query_list(Some("FINISHED")).await {
            let qs = listed?;
            let after = |q: &&ListedQuery| q.ended.is_some_and(|e| e > since);
            return Ok(of_queries(
                qs.iter().filter(after).map(|q| (q.query.as_str(), q.ended)),
            ));
        }
        let out = self.client.query(&recent_writes_sql(since)).await?;
        Ok(of_queries(out.rows.iter().filter_map(|r| {
            let ended = r.get("ended").and_then(crate::trino::Value::as_datetime);
            r.str("query").map(|q| (q, ended))
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_answer_that_will_not_change_moves_the_read_to_the_statement() {
        let http = |status| TrinoError::Http {
            status,
            url: "http://c/v1/query?state=FINISHED".into(),
            message: String::new(),
        };
        assert!(list_refused(&http(404)));
        assert!(list_refused(&http(405)));
        assert!(!list_refused(&http(503)), "a restart is of the moment");
        assert!(!list_refused(&http(500)));
        assert!(!list_refused(&TrinoError::Transport {
            url: "http://c".into(),
            message: "connection refused".into()
        }));
        assert!(list_refused(&TrinoError::Malformed {
            url: "http://c".into(),
            message: "not a list of queries".into()
        }));
        assert!(list_refused(&TrinoError::TooLarge {
            url: "http://c".into(),
            limit: 1 << 20
        }));
        assert!(
            !list_refused(&TrinoError::Auth {
                status: 401,
                url: "http://c/v1/query".into(),
                message: String::new()
            }),
            "a login refused is not the list refused"
        );
    }
}
