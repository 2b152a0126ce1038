//! The whole story in the lab, end to end, on Airflow 3 and on Airflow 2: from the first
//! screen to a verified fix in the real binary — the slow query on the incident, the
//! connection fixed, the DAG triggered and watched, the table read again healthy — then
//! `floe report` telling the sequence with its times.
//!
//! The seed's incident (`compact_documents`, `trino_documents`) is shared: other tests rely
//! on it failing. This story runs on a private copy of it: the lab's `compact_loop` DAG
//! (tests/lab/airflow/dags/compact_loop.py) compacts `iceberg.loop_af<major>.documents`
//! through its own connection `trino_loop`. Each run puts everything back first: the table
//! cloned again from the seed's documents, the connection pointed at a dead host, the DAG's
//! runs deleted and one failing run made.

use crate::common;
use crate::common::pty;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{lab, user};
use floe::trino::Client;
use serde_json::{Value, json};

const DAG: &str = "compact_loop";
const CONN: &str = "trino_loop";
const DEAD_HOST: &str = "trino-loop-old.internal";

/// One of the lab's Airflows, through its REST API as its admin (a plain client,
/// independent of floe's).
struct Airflow {
    which: &'static str,
    base: String,
    api: String,
    user: String,
    password: String,
    http: reqwest::Client,
}

impl Airflow {
    fn of(which: &'static str) -> Airflow {
        let a = &lab().v[which];
        assert!(!a.is_null(), "lab.json has no {which}");
        let s = |k: &str| {
            a[k].as_str()
                .unwrap_or_else(|| panic!("{which}.{k}"))
                .to_string()
        };
        Airflow {
            which,
            base: s("url").trim_end_matches('/').to_string(),
            api: s("api"),
            user: s("user"),
            password: s("password"),
            http: crate::common::http_builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
        }
    }

    fn major(&self) -> u32 {
        if self.api == "v2" { 3 } else { 2 }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}/api/{}{path}", self.base, self.api);
        let mut req = self.http.request(method.clone(), &url);
        if self.api == "v2" {
            let tok: Value = self
                .http
                .post(format!("{}/auth/token", self.base))
                .json(&json!({"username": self.user, "password": self.password}))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{}: POST /auth/token: {e}", self.which))
                .json()
                .await
                .unwrap();
            req = req.bearer_auth(tok["access_token"].as_str().unwrap());
        } else {
            req = req.basic_auth(&self.user, Some(&self.password));
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{}: {method} {url}: {e}", self.which));
        let status = r.status().as_u16();
        let v = r.json().await.unwrap_or(Value::Null);
        (status, v)
    }

    async fn get(&self, path: &str) -> Value {
        let (status, v) = self.call(reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "{}: GET {path}: {v}", self.which);
        v
    }

    /// The lab's Airflow has parsed compact_loop.py (it rescans its DAG folder every 10 s).
    async fn wait_for_dag(&self) {
        let start = Instant::now();
        loop {
            let (status, v) = self
                .call(reqwest::Method::GET, &format!("/dags/{DAG}"), None)
                .await;
            if status == 200 {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "{}: the lab's Airflow has no DAG {DAG} (tests/lab/airflow/dags/compact_loop.py \
                 not parsed yet?): {status} {v}",
                self.which
            );
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }

    async fn runs(&self) -> Vec<Value> {
        let v = self.get(&format!("/dags/{DAG}/dagRuns?limit=100")).await;
        v["dag_runs"].as_array().cloned().unwrap_or_default()
    }

    /// The DAG unpaused with no runs, its connection at `host:port` (no password: the
    /// lab's Trino takes none over http): at a dead host, the private incident is back.
    async fn reset(&self, schema: &str, host: &str, port: u16) {
        self.wait_for_dag().await;
        let (status, v) = self
            .call(
                reqwest::Method::PATCH,
                &format!("/dags/{DAG}?update_mask=is_paused"),
                Some(json!({"is_paused": false})),
            )
            .await;
        assert_eq!(status, 200, "{}: unpause {DAG}: {v}", self.which);
        for r in self.runs().await {
            let id = r["dag_run_id"].as_str().unwrap();
            let (status, v) = self
                .call(
                    reqwest::Method::DELETE,
                    &format!("/dags/{DAG}/dagRuns/{}", floe::airflow::encode_segment(id)),
                    None,
                )
                .await;
            assert!(
                status == 204 || status == 404,
                "{}: delete run {id}: {status} {v}",
                self.which
            );
        }
        self.call(
            reqwest::Method::DELETE,
            &format!("/connections/{CONN}"),
            None,
        )
        .await;
        let (status, v) = self
            .call(
                reqwest::Method::POST,
                "/connections",
                Some(json!({
                    "connection_id": CONN, "conn_type": "trino",
                    "description": "Trino for the loop test's documents compaction",
                    "host": host, "port": port, "login": "etl", "schema": schema,
                    "extra": "{\"catalog\": \"iceberg\", \"protocol\": \"http\"}"
                })),
            )
            .await;
        assert!(
            status == 200 || status == 201,
            "{}: create {CONN}: {status} {v}",
            self.which
        );
    }

    async fn trigger(&self) -> String {
        let body = if self.api == "v2" {
            json!({"logical_date": null})
        } else {
            json!({})
        };
        let (status, v) = self
            .call(
                reqwest::Method::POST,
                &format!("/dags/{DAG}/dagRuns"),
                Some(body),
            )
            .await;
        assert_eq!(status, 200, "{}: trigger {DAG}: {v}", self.which);
        v["dag_run_id"].as_str().unwrap().to_string()
    }

    /// Wait for a run to end; its state.
    async fn finished(&self, run_id: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let v = self
                .get(&format!(
                    "/dags/{DAG}/dagRuns/{}",
                    floe::airflow::encode_segment(run_id)
                ))
                .await;
            let state = v["state"].as_str().unwrap_or_default().to_string();
            if state == "success" || state == "failed" {
                return state;
            }
            assert!(
                start.elapsed() < timeout,
                "{}: run {run_id} still {state} after {timeout:?}",
                self.which
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// floe's configuration for the story: the private schema only, the lab-loop DAG only,
/// the audit log and exports in the test's own directory.
fn config(dir: &std::path::Path, schema: &str, af: &Airflow) -> PathBuf {
    let cfg = dir.join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"start_tab = "triage"
refresh = "10s"
audit_log = "{audit}"
export_dir = "{exports}"

[trino]
url = "{trino}"
user = "floe"
schemas = ["{schema}"]

[airflow]
url = "{airflow}"
user = "{user}"
password_env = "LOOP_AIRFLOW_PASSWORD"
dag_tags = ["lab-loop"]
"#,
            audit = dir.join("audit.jsonl").display(),
            exports = dir.join("exports").display(),
            trino = lab().trino_url(),
            airflow = af.base,
            user = af.user,
        ),
    )
    .unwrap();
    cfg
}

fn the_story_from_the_first_screen_to_the_verified_fix(which: &'static str) {
    let rt = rt();
    let af = Airflow::of(which);
    // As deployed, Airflow tests no connection (`[core] test_connection` Disabled): the
    // story is told from the failing task's error, and the fix proven by the DAG's run.
    let tests = lab().v[which]["test_connection"] != "Disabled";
    let schema = format!("loop_af{}", af.major());
    let table = format!("{schema}.documents");
    let trino = url::Url::parse(&lab().trino_url()).unwrap();
    let (host, port) = (trino.host_str().unwrap().to_string(), trino.port().unwrap());

    // The private incident, from scratch: the seed's documents as they are, its
    // compaction DAG failing on the dead host once.
    rt.block_on(async {
        lab()
            .post(
                "engine/clone_table",
                json!({"source": "zoning.documents", "target": table, "replace": true}),
            )
            .await;
        af.reset(&schema, DEAD_HOST, 8080).await;
        let failed = af.trigger().await;
        assert_eq!(
            af.finished(&failed, Duration::from_secs(240)).await,
            "failed",
            "{which}: the run on the dead host fails"
        );
        // A dashboard's query on the table, in the coordinator's history.
        let mut cfg = lab().config(&lab().trino_url(), &user(&format!("loop_dash_{schema}")));
        cfg.source = "dashboard".into();
        Client::new(cfg)
            .unwrap()
            .query(&format!(
                "SELECT district, count(*) FROM iceberg.{table} GROUP BY district"
            ))
            .await
            .unwrap();
    });

    let dir = std::env::temp_dir().join(format!("floe-loop-{which}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = config(&dir, &schema, &af);
    let cfg_s = cfg.to_str().unwrap().to_string();
    let started = Instant::now();
    let mut pty = pty::Pty::spawn_env(
        &["--config", &cfg_s],
        &[("LOOP_AIRFLOW_PASSWORD", af.password.as_str())],
        160,
        48,
    );
    let mut keys: Vec<&str> = Vec::new();
    let mut frames: Vec<(String, String)> = Vec::new();
    let mut press = |pty: &mut pty::Pty, label: &'static str, bytes: &[u8]| {
        keys.push(label);
        if label == "y" {
            // A confirmation, answered once it has been on screen (confirm_dwell).
            pty.answer(bytes);
        } else {
            pty.send(bytes);
        }
    };

    // The first screen: the incident, with what the dashboard query suffered.
    let s = pty.wait_for(
        "the incident with the slow query",
        Duration::from_secs(300),
        |s| {
            let headline = if tests {
                format!("DAG {DAG} last run failed (connection {CONN} → {DEAD_HOST}:8080, fails its test)")
            } else {
                format!(
                    "DAG {DAG} last run failed (connection {CONN} → {DEAD_HOST}:8080, the host the failing task could not resolve"
                )
            };
            s.contains(&headline)
                && s.contains(" query on documents took ")
                && s.contains(&format!("F fix Airflow connection {CONN}"))
        },
    );
    frames.push(("the first screen".into(), s));
    eprintln!(
        "{which}: first screen after {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // F: where the connection should point.
    press(&mut pty, "F", b"F");
    // The lab's Trino is at 127.0.0.1: floe's own loopback address is never offered.
    pty.wait_for("the prompt, empty", Duration::from_secs(10), |s| {
        s.contains(&format!(
            "point Airflow connection {CONN} at (host:port or trino:// URI): █  type where the workers reach Trino"
        ))
    });
    press(&mut pty, "host:port", format!("{host}:{port}").as_bytes());
    press(&mut pty, "enter", b"\r");
    let s = pty.wait_for("the change as a diff", Duration::from_secs(30), |s| {
        s.contains("confirm fix_connection")
            && s.contains(&format!("- host: {DEAD_HOST}"))
            && s.contains(&format!("+ host: {host}"))
    });
    frames.push(("F, enter: the diff".into(), s));
    press(&mut pty, "y", b"y");
    let s = pty.wait_for("the connection's new test", Duration::from_secs(60), |s| {
        if tests {
            s.contains(&format!(
                "connection {CONN} → {host}:{port}; its test passes"
            ))
        } else {
            // The incident says the connection was fixed and what proves it.
            s.contains(&format!("(connection {CONN} → {host}:{port}, fixed "))
                && s.contains("Airflow does not test connections here: the DAG's next run")
        }
    });
    frames.push(("y: the connection fixed and tested".into(), s));

    // t: trigger the DAG from the incident, y: confirmed; then watched to its end.
    press(&mut pty, "t", b"t");
    pty.wait_for("the trigger's confirmation", Duration::from_secs(10), |s| {
        s.contains(&format!("trigger a run of {DAG} now"))
    });
    press(&mut pty, "y", b"y");
    let s = pty.wait_for("the run watched", Duration::from_secs(60), |s| {
        s.contains(&format!("watching {DAG} manual__"))
    });
    frames.push(("t, y: the run watched".into(), s));
    // enter on the watched run's incident: its running task's log, from its end.
    pty.wait_for(
        "the compaction task running",
        Duration::from_secs(240),
        |s| s.contains("enter: the log of task compact, running (its tail)"),
    );
    press(&mut pty, "enter", b"\r");
    let s = pty.wait_for("the running task's log", Duration::from_secs(60), |s| {
        s.contains("EXECUTE optimize") && s.contains(&format!("running on {host}:{port}"))
    });
    frames.push(("enter: the running task's log tail".into(), s));
    press(&mut pty, "esc", b"\x1b");
    pty.wait_for("back on the incident", Duration::from_secs(10), |s| {
        s.contains("evidence: ")
    });
    pty.wait_for(
        "the run's end and the table read again",
        Duration::from_secs(600),
        |s| {
            s.contains(&format!("{DAG} manual__"))
                && s.contains(" succeeded in ")
                && s.contains("small files no longer waiting")
        },
    );
    // Healthy again: no incident of the DAG, its connection or the table is critical any
    // more (the DAG's facts are read again at the run's end). The lab's other failing
    // connections (the seed's `trino_documents`…) stay on screen: they are Airflow's.
    let s = pty.wait_for("the incident resolved", Duration::from_secs(60), |s| {
        !s.lines().any(|l| {
            l.starts_with("CRIT")
                && (l.contains(DAG) || l.contains(CONN) || l.contains("→ documents"))
        }) && s.contains("small files no longer waiting")
    });
    frames.push(("the run's end: the table read again".into(), s));
    // The dashboard runs its query again (floe reruns nothing): its next run is shown.
    rt.block_on(async {
        let mut cfg = lab().config(&lab().trino_url(), &user(&format!("loop_dash_{schema}")));
        cfg.source = "dashboard".into();
        Client::new(cfg)
            .unwrap()
            .query(&format!(
                "SELECT district, count(*) FROM iceberg.{table} GROUP BY district"
            ))
            .await
            .unwrap();
    });
    let s = pty.wait_for("the query's next run", Duration::from_secs(90), |s| {
        s.contains("the dashboard query on documents since the run: ")
    });
    frames.push(("the dashboard query's next run".into(), s));
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "{which}: first screen to the verified fix: {} keys ({}), {secs:.1}s",
        keys.len(),
        keys.join(" ")
    );
    assert!(keys.len() <= 12, "{keys:?}");
    pty.send(b"q");
    assert!(pty.wait_exit(Duration::from_secs(10)).success());
    pty.assert_restored();
    for (what, f) in &frames {
        eprintln!("--- {which}: {what}\n{f}");
    }

    // What Airflow and Trino say, independently of floe.
    rt.block_on(async {
        let c = af.get(&format!("/connections/{CONN}")).await;
        assert_eq!(c["host"], host.as_str(), "{c}");
        assert_eq!(c["port"], port, "{c}");
        let runs = af.runs().await;
        assert_eq!(runs.len(), 2, "{runs:?}");
        let states: Vec<&str> = runs.iter().map(|r| r["state"].as_str().unwrap()).collect();
        assert!(
            states.contains(&"failed") && states.contains(&"success"),
            "{states:?}"
        );
    });

    // The postmortem tells the sequence with its times.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(["--config", &cfg_s, "report", &table])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &dir)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("LOOP_AIRFLOW_PASSWORD", &af.password)
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    // Nagios codes: the small files are gone, the seed's 47 snapshots past retention are
    // not (a compaction expires nothing), so the table is a WARNING (1), no longer CRITICAL.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{md}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        md.contains("**WARNING**") && md.contains("snapshot"),
        "{md}"
    );
    let seq: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("## Sequence"))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| 20"))
        .collect();
    eprintln!("{which}: the sequence\n{}", seq.join("\n"));
    for step in ["symptom", "cause", "fix", "run", "result"] {
        assert!(
            seq.iter().any(|l| l.contains(&format!("| {step} |"))),
            "{which}: no {step} in the sequence:\n{md}"
        );
    }
    // In the order it happened: the trigger before the run it started (which Airflow
    // stamps before floe writes the trigger's outcome), the run before its compaction.
    let row = |what: &dyn Fn(&str) -> bool| seq.iter().position(|l| what(l));
    let md_dag = DAG.replace('_', "\\_");
    let trigger = row(&|l| l.contains(&format!("| run | trigger {md_dag}")));
    let run = row(&|l| l.contains("| run | run manual\\_\\_") && l.contains("succeeded"));
    let compaction = row(&|l| l.contains("| result | compaction "));
    assert!(
        trigger.is_some() && trigger < run && run < compaction,
        "{which}: trigger {trigger:?}, run {run:?}, compaction {compaction:?}:\n{}",
        seq.join("\n")
    );
    // The header says what the compaction did to the files, not "360 → 360".
    let header = md.lines().find(|l| l.starts_with("> ")).unwrap_or_default();
    let files: Vec<u64> = header
        .split("files ")
        .nth(1)
        .unwrap_or_default()
        .split(" → ")
        .map(|n| n.trim().replace(',', "").parse().unwrap_or(0))
        .collect();
    assert!(files.len() == 2 && files[0] > files[1], "{which}: {header}");
    // The coordinator's record: the dashboard's reads, and the DAG's optimize said to be
    // a write that is not floe's.
    assert!(
        md.contains("| read |") && md.contains("| write: not floe's |"),
        "{which}: {md}"
    );

    // Leave nothing failing for other tests' screens: no runs, the connection where floe
    // pointed it (the next run makes the incident again).
    rt.block_on(af.reset(&schema, &host, port));
}

#[test]
fn airflow_3_from_the_first_screen_to_the_verified_fix() {
    the_story_from_the_first_screen_to_the_verified_fix("airflow");
}

#[test]
fn airflow_2_from_the_first_screen_to_the_verified_fix() {
    the_story_from_the_first_screen_to_the_verified_fix("airflow2");
}
