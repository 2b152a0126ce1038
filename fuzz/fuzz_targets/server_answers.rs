//! The servers' answers the connection fix and the query history read: a coordinator's
//! query info document (`/v1/query/{id}`), an Airflow connection document (the read
//! before a fix and the write's answer, compared with what was sent), and the operator's
//! target text, through the diff and the finding they become.
#![no_main]

use floe::airflow::wire::decode_connection;
use floe::airflow::{ApiVersion, ConnectionTest};
use floe::mutation::connection::{Target, diff_lines, endpoint_text, parse_target, wrote_otherwise};
use floe::trino::client::query_info::{parse_data_size, parse_duration_ms, parse_query_info};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_duration_ms(text);
    let _ = parse_data_size(text);
    let _ = floe::config::uri::is_local_host(text);
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(text) {
        let _ = parse_query_info(&doc);
    }
    let sent = Target {
        host: "trino.internal".into(),
        port: 8443,
        ignored: Vec::new(),
    };
    if let Ok(c) = decode_connection(text) {
        let _ = wrote_otherwise(&c, &sent);
        for api in [ApiVersion::V1, ApiVersion::V2] {
            let _ = diff_lines(&c, &sent, api, "http://127.0.0.1:8080/");
        }
        let theirs = endpoint_text(&c);
        let floe_url = url::Url::parse("http://127.0.0.1:8443").unwrap();
        for test in [
            None,
            Some(ConnectionTest::Passed(theirs.clone())),
            Some(ConnectionTest::Failed(theirs.clone())),
        ] {
            let _ = floe::health::airflow::connection_finding(
                &c.connection_id,
                &theirs,
                &floe_url,
                test.as_ref(),
            );
        }
    }
    if let Ok(t) = parse_target(text) {
        let _ = floe::config::uri::is_local_host(&t.host);
    }
});
