//! Quoting against a real SQL parser: every string of fuzz/sql_strings.json (the quoting
//! fuzz target's seeds and corpus: quotes, backslashes, comment markers, control and bidi
//! characters, NUL, astral characters) is sent to the lab's Trino as a `quote_string`
//! literal and as a `quote_ident` column alias, and must come back unchanged.

use crate::common;

use common::lab;
use floe::sql::{quote_ident, quote_string};
use floe::trino::{Client, Value};

fn strings() -> Vec<String> {
    let text = include_str!("../../fuzz/sql_strings.json");
    let strings: Vec<String> = serde_json::from_str(text).expect("sql_strings.json parses");
    assert!(strings.len() >= 200, "only {} strings", strings.len());
    strings
}

/// `SELECT <literal> AS <ident>, …` for a batch; on a failed batch each string alone, so
/// the failure names the string.
async fn check_batch(client: &Client, batch: &[String]) -> Vec<String> {
    let sql = |items: &[String]| {
        let cols: Vec<String> = items
            .iter()
            .map(|s| format!("{} AS {}", quote_string(s), quote_ident(s)))
            .collect();
        format!("SELECT {}", cols.join(", "))
    };
    let mut problems = Vec::new();
    match client.query(&sql(batch)).await {
        Ok(out) => {
            assert_eq!(out.rows.len(), 1);
            for (i, s) in batch.iter().enumerate() {
                match &out.rows[0].values[i] {
                    Value::Text(t) if t == s => {}
                    other => problems.push(format!("literal of {s:?} came back as {other:?}")),
                }
                let name = &out.columns[i].name;
                if name != s {
                    problems.push(format!("identifier {s:?} came back as {name:?}"));
                }
            }
        }
        Err(e) if batch.len() > 1 => {
            let _ = e;
            for s in batch {
                problems.extend(Box::pin(check_batch(client, std::slice::from_ref(s))).await);
            }
        }
        Err(e) => problems.push(format!("{s:?}: {e}", s = batch[0])),
    }
    problems
}

#[tokio::test]
async fn quoted_strings_and_identifiers_survive_the_sql_parser() {
    let client = lab().client("floe");
    // A zero-length delimited identifier is not SQL: the empty string is only a literal.
    let strings: Vec<String> = strings().into_iter().filter(|s| !s.is_empty()).collect();
    let mut problems = Vec::new();
    for batch in strings.chunks(60) {
        problems.extend(check_batch(&client, batch).await);
    }
    let out = client.query("SELECT ''").await.unwrap();
    assert_eq!(out.rows[0].values[0], Value::Text(String::new()));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
