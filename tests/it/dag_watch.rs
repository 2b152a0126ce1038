//! The TUI runtime's watch of a DAG run against the lab's real Airflow 3 and 2: a run
//! Airflow does not know (deleted, or asked of another Airflow) is answered 404 and not
//! polled again.

use crate::common;

use std::time::Duration;

use common::lab;
use floe::airflow::AirflowError;
use floe::app::action::{Action, Effect};
use floe::app::dags::DagMsg;
use floe::config::{self, AirflowApi, AirflowSettings, Overrides, TlsSettings};
use floe::runtime::Runtime;
use secrecy::SecretString;
use tokio::sync::mpsc;

fn airflow(key: &str) -> AirflowSettings {
    let l = lab();
    AirflowSettings {
        url: l.airflow_field(key, "url").parse().unwrap(),
        user: Some(l.airflow_field(key, "user")),
        password: Some(SecretString::from(l.airflow_field(key, "password"))),
        token: None,
        api: if key == "airflow" {
            AirflowApi::V2
        } else {
            AirflowApi::V1
        },
        tls: TlsSettings {
            ca_file: None,
            insecure_skip_verify: false,
        },
        dag_tags: vec!["maintenance".into()],
        dag_ids: vec![],
        runs: 25,
        test_connections: false,
        max_response_size: floe::config::DEFAULT_MAX_RESPONSE_SIZE,
        max_log_size: floe::config::DEFAULT_MAX_LOG_SIZE,
    }
}

/// A config on the lab's Trino, the audit log in the test's own directory.
fn overrides(name: &str) -> Overrides {
    let dir = std::env::temp_dir().join(format!("floe-watch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let text = format!(
        "audit_log = {audit:?}\n[trino]\nurl = {url:?}\nuser = \"floe\"\ncatalog = \"iceberg\"\nschemas = [\"zoning\"]\n",
        audit = dir.join("audit.jsonl").display().to_string(),
        url = lab().trino_url(),
    );
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    Overrides {
        config: Some(path),
        ..Default::default()
    }
}

/// The next `Watched` the runtime sends within `within`, if any.
async fn watched(
    rx: &mut mpsc::UnboundedReceiver<Action>,
    within: Duration,
) -> Option<Result<(), AirflowError>> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let a = tokio::time::timeout_at(deadline, rx.recv()).await.ok()??;
        if let Action::Dags(DagMsg::Watched { result, .. }) = a {
            return Some(result.map(|_| ()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_airflow_answers_404_about_is_not_polled_again() {
    for key in ["airflow", "airflow2"] {
        let over = overrides(key);
        let mut settings = config::load(&over).unwrap();
        settings.airflow = Some(airflow(key));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut rt = Runtime::new(settings, over, tx).unwrap();
        rt.run(vec![Effect::WatchRun {
            dag_id: "compact_documents".into(),
            run_id: format!("manual__never_triggered_{}", std::process::id()),
            tables: vec![],
        }]);
        let first = watched(&mut rx, Duration::from_secs(60))
            .await
            .unwrap_or_else(|| panic!("{key}: the watch reports its first poll"));
        let e = first.expect_err("no such run");
        assert!(e.is_not_found(), "{key}: {e}");
        // It polled once: nothing more comes, not a poll every 2 s.
        let next = watched(&mut rx, floe::app::dags::watch::POLL * 3).await;
        assert!(next.is_none(), "{key}: polled again after a 404: {next:?}");
    }
}
