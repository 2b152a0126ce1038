//! What the queries suffered, read from the real coordinator's own record (its query
//! list, or `system.runtime.queries` where that is not served, and the query info it
//! links): the queries that read a table,
//! with their cost; a coordinator without that record, or a user who may not read it, is
//! said plainly.

use crate::common;

use common::{lab, user};
use floe::health::HealthConfig;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;
use floe::lakehouse::query_history::{self, QueryState, TableQueries};
use floe::trino::Client;

fn lake(url: &str, user: &str, source: &str) -> Lakehouse {
    let mut cfg = lab().config(url, user);
    cfg.source = source.into();
    Lakehouse::new(
        Client::new(cfg).unwrap(),
        "iceberg",
        HealthConfig::default(),
    )
}

#[tokio::test]
async fn the_queries_that_read_a_table_come_with_their_cost() {
    let u = user("history_reads");
    let source = format!("dashboard{}", std::process::id());
    let dashboard = lake(&lab().trino_url(), &u, &source);
    let docs = TableRef::new("iceberg", "zoning", "documents");
    let q = "SELECT district, count(*) FROM iceberg.zoning.documents GROUP BY district";
    for _ in 0..3 {
        dashboard.client.query(q).await.unwrap();
    }
    // Names the table in its text but reads only a metadata table: not a read of it.
    dashboard
        .client
        .query("SELECT count(*) FROM iceberg.zoning.\"documents$snapshots\" -- documents")
        .await
        .unwrap();
    let reader_user = user("history_reader");
    let reader = lake(&lab().trino_url(), &reader_user, "floe");
    let got = reader.table_queries(&docs).await.unwrap();
    assert!(
        lab().real_queries_of(&reader_user).await.is_empty(),
        "read from the coordinator's query list: no statement"
    );
    // Where the list is not served (a proxy answering 404), the statement gives the same.
    let nolist_user = user("history_nolist");
    lab()
        .real_faults(
            &nolist_user,
            serde_json::json!([{"kind": "status", "status": 404, "on": "queries", "count": null}]),
        )
        .await;
    let nolist = lake(&lab().proxy_url(), &nolist_user, "floe");
    let by_statement = nolist.table_queries(&docs).await.unwrap();
    lab().clear_real_faults(&nolist_user).await;
    let statements = lab().real_queries_of(&nolist_user).await;
    assert_eq!(statements.len(), 1, "{statements:#?}");
    assert!(
        statements[0]["sql"]
            .as_str()
            .unwrap_or("")
            .contains("system.runtime.queries")
    );
    let of_u = |t: &TableQueries| {
        let mut ids: Vec<String> = t
            .runs()
            .iter()
            .filter(|r| r.user == u)
            .map(|r| r.query_id.clone())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(of_u(&by_statement), of_u(&got), "the same three runs");
    let TableQueries::Runs { runs, .. } = &got else {
        panic!("the real coordinator keeps its queries: {got:?}");
    };
    let mine: Vec<_> = runs.iter().filter(|r| r.user == u).collect();
    assert_eq!(
        mine.len(),
        3,
        "the three reads, not the metadata one: {runs:#?}"
    );
    for r in &mine {
        assert_eq!(r.state, QueryState::Finished);
        assert_eq!(r.source.as_deref(), Some(source.as_str()));
        assert_eq!(r.query, q);
        assert!(r.elapsed_ms.is_some() && r.cpu_ms.is_some(), "{r:?}");
        assert!(r.splits.unwrap_or(0) > 0, "{r:?}");
        assert!(r.physical_input_bytes.unwrap_or(0) > 0, "{r:?}");
        assert!(r.created.is_some());
    }
    let now = chrono::Utc::now();
    let only_mine = TableQueries::Runs {
        runs: mine.into_iter().cloned().collect(),
        unconfirmed: 0,
    };
    let lines = query_history::lines(&only_mine, "documents", now, 5);
    assert!(
        lines[0].starts_with(&format!("queries: the {source} query on documents took ")),
        "{lines:?}"
    );
    assert!(
        lines[0].contains("splits; its median over the last "),
        "{lines:?}"
    );
    assert!(lines[0].contains("(3 runs)"), "{lines:?}");
}

#[tokio::test]
async fn a_coordinator_without_the_record_or_a_user_denied_it_is_said_plainly() {
    let docs = TableRef::new("iceberg", "zoning", "documents");
    // The stand-in keeps no system.runtime.queries, as a gateway or an older server.
    let none = lake(&lab().stand_in_url(), &user("history_none"), "floe");
    match none.table_queries(&docs).await.unwrap() {
        TableQueries::Unavailable { reason } => {
            assert!(reason.contains("keeps no query history"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    let denied = lab().stand_in()["denied_user"]
        .as_str()
        .unwrap()
        .to_string();
    let no = lake(&lab().stand_in_url(), &denied, "floe");
    match no.table_queries(&docs).await.unwrap() {
        TableQueries::Unavailable { reason } => assert!(
            reason.starts_with(&format!(
                "user {denied} may not read the coordinator's query history"
            )),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
}

/// `floe report TABLE` (the real binary, the lab's Trino, no Airflow): the postmortem's
/// `## Queries` section and its JSON.
fn report(table: &str, format: &str) -> std::process::Output {
    let home = std::env::temp_dir().join(format!("floe-history-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "--trino",
            &lab().trino_url(),
            "--user",
            "floe",
            "report",
            table,
            "--format",
            format,
        ])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .output()
        .expect("run floe")
}

#[tokio::test]
async fn the_postmortem_tells_what_the_queries_suffered_in_inert_text() {
    let u = user("history_report");
    let source = format!("report{}", std::process::id());
    let dashboard = lake(&lab().trino_url(), &u, &source);
    // Query text is hostile text: an escape sequence and a fake markdown cell in a comment.
    let q = "SELECT count(*) FROM iceberg.zoning.documents -- \u{1b}[2J | **x** [l](http://e)";
    dashboard.client.query(q).await.unwrap();
    let out = report("zoning.documents", "markdown");
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(floe::text::is_inert(&md), "{md}");
    let section = md
        .split("## Queries\n\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no queries section: {md}"))
        .split("\n## ")
        .next()
        .unwrap();
    assert!(
        section.starts_with("From the coordinator's own record: "),
        "{section}"
    );
    let row = section
        .lines()
        .find(|l| l.contains(&format!("| {source} (")))
        .unwrap_or_else(|| panic!("no row of {u}: {section}"));
    assert!(row.contains("| `FINISHED` |"), "{row}");
    assert!(
        row.ends_with(r"-- \x1b[2J \| **x** [l](http://e)` |"),
        "the pipe cannot open a cell: {row}"
    );
    assert!(!row.contains('\u{1b}'));
    let out = report("zoning.documents", "json");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["queries"]["history"], "runs");
    let runs = doc["queries"]["runs"].as_array().unwrap();
    let mine = runs.iter().find(|r| r["user"] == u.as_str()).unwrap();
    assert_eq!(mine["query"], q, "JSON keeps the real text, escaped");
    assert!(mine["splits"].as_u64().unwrap() > 0);
}
