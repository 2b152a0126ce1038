//! The coordinator's list of the queries it keeps (`GET /v1/query[?state=…]`): each one's
//! id, state, user, source, text, and when it began and ended. One HTTP request the
//! coordinator answers from memory,
//! where a statement over `system.runtime.queries` costs it a query (planning, a task,
//! its own entry in the list): on the real Trino 476 8 ms of its CPU against 96-116 ms.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::Client;
use crate::trino::error::TrinoError;

/// A query as the coordinator's list names it (every string hostile: parsed, sanitised
/// where shown).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListedQuery {
    pub query_id: String,
    pub state: String,
    pub user: String,
    pub source: Option<String>,
    /// Its text, as the client sent it.
    pub query: String,
    /// When it was created and ended, by the coordinator's clock.
    pub created: Option<DateTime<Utc>>,
    pub ended: Option<DateTime<Utc>>,
    /// The name of its error, when it failed.
    pub error_code: Option<String>,
}

impl ListedQuery {
    /// The same from a row of `system.runtime.queries` (its columns `query_id`, `state`,
    /// `user`, `source`, `query`, `created`, `end`, `error_code`, those it has); `None`
    /// without an id.
    pub fn from_row(r: &crate::trino::Row) -> Option<ListedQuery> {
        Some(ListedQuery {
            query_id: r.str("query_id")?.to_string(),
            state: r.str("state").unwrap_or_default().to_string(),
            user: r.str("user").unwrap_or_default().to_string(),
            source: r
                .str("source")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            query: r.str("query").unwrap_or_default().to_string(),
            created: r.datetime("created"),
            ended: r.datetime("end"),
            error_code: r.str("error_code").map(str::to_string),
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    query_id: Option<String>,
    state: Option<String>,
    session: Option<Session>,
    query: Option<String>,
    query_stats: Option<Stats>,
    error_code: Option<ErrorCode>,
}

#[derive(Deserialize)]
struct Session {
    user: Option<String>,
    source: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stats {
    create_time: Option<String>,
    end_time: Option<String>,
}

#[derive(Deserialize)]
struct ErrorCode {
    name: Option<String>,
}

fn instant(t: Option<String>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(&t?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The queries of a `/v1/query` answer (a JSON array of the coordinator's
/// `BasicQueryInfo`); an entry without an id or a text is skipped, a time that is not
/// RFC 3339 is unknown.
pub fn parse_query_list(text: &str) -> Result<Vec<ListedQuery>, String> {
    let listed: Vec<Listed> =
        serde_json::from_str(text).map_err(|e| format!("not a list of queries: {e}"))?;
    Ok(listed
        .into_iter()
        .filter_map(|l| {
            let (created, ended) = l.query_stats.map_or((None, None), |s| {
                (instant(s.create_time), instant(s.end_time))
            });
            let (user, source) = l.session.map_or((None, None), |s| (s.user, s.source));
            Some(ListedQuery {
                query_id: l.query_id?,
                state: l.state.unwrap_or_default(),
                user: user.unwrap_or_default(),
                source: source.filter(|s| !s.is_empty()),
                query: l.query?,
                created,
                ended,
                error_code: l.error_code.and_then(|c| c.name),
            })
        })
        .collect())
}

impl Client {
    /// The queries the coordinator keeps, of one state or all (`GET /v1/query`; as
    /// `system.runtime.queries`, only those the user may see).
    pub async fn queries(&self, state: Option<&str>) -> Result<Vec<ListedQuery>, TrinoError> {
        let url = match state {
            Some(s) => self.endpoint(&format!("v1/query?state={s}"))?,
            None => self.endpoint("v1/query")?,
        };
        let text = self.get_document(&url).await?;
        parse_query_list(&text).map_err(|message| TrinoError::Malformed {
            url: url.to_string(),
            message,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_gives_each_text_and_end_and_skips_what_it_cannot_read() {
        // As Trino 476 answers (trimmed: a real entry carries its session and ~35 stats).
        let text = r#"[
          {"queryId":"q1","state":"FINISHED","query":"INSERT INTO s.t VALUES 1",
           "session":{"user":"etl","source":"","catalog":"iceberg"},
           "queryStats":{"createTime":"2026-12-07T03:13:15.957Z","endTime":"2026-12-07T03:13:16.006Z"},
           "queryType":"INSERT","labUnknown":{"x":[1]}},
          {"queryId":"q2","state":"FINISHED","queryStats":{"endTime":"2026-12-07T03:13:17Z"}},
          {"queryId":"q3","state":"FAILED","query":"SELECT 1","queryStats":{"endTime":"soon"},
           "session":{"user":"bi","source":"dashboard"},
           "errorCode":{"code":1,"name":"SYNTAX_ERROR","type":"USER_ERROR"}},
          {"queryId":"q4","state":"FINISHED","query":"DELETE FROM t","queryStats":{"endTime":"2026-12-07T04:13:18+01:00"}},
          {"state":"RUNNING","query":"SELECT 2"}
        ]"#;
        let qs = parse_query_list(text).unwrap();
        assert_eq!(qs.len(), 3, "no text, no id: skipped");
        assert_eq!(qs[0].query, "INSERT INTO s.t VALUES 1");
        assert_eq!(
            (qs[0].user.as_str(), qs[0].source.as_deref()),
            ("etl", None)
        );
        assert_eq!(
            qs[0].created.unwrap().to_rfc3339(),
            "2026-12-07T03:13:15.957+00:00"
        );
        assert_eq!(
            (
                qs[1].state.as_str(),
                qs[1].source.as_deref(),
                qs[1].error_code.as_deref()
            ),
            ("FAILED", Some("dashboard"), Some("SYNTAX_ERROR"))
        );
        assert_eq!(
            qs[0].ended.unwrap().to_rfc3339(),
            "2026-12-07T03:13:16.006+00:00"
        );
        assert_eq!(qs[1].ended, None, "a time that is not one");
        assert_eq!(
            qs[2].ended.unwrap().to_rfc3339(),
            "2026-12-07T03:13:18+00:00",
            "an offset is the same instant"
        );
        assert!(parse_query_list("<html>404</html>").is_err());
        assert!(parse_query_list(r#"{"queries":[]}"#).is_err());
    }
}
