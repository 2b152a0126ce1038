//! `floe serve` scraped by a real Prometheus (Debian's package, started and stopped here)
//! over the lab's two clusters and a dead one, with the shipped alert rules loaded: they
//! fire for the seed's `documents` and `compact_documents`, and end after the fix
//! (connection, trigger, compaction) within two refreshes. The fix runs on a private copy
//! of the incident (tests/lab/airflow/dags/compact_serve.py: `iceberg.serve_af3.documents`
//! through the connection `trino_serve`), since other tests rely on the seed's failing.
//! And `promtool` checks the rules, runs their unit tests, and the rules, their tests and
//! the dashboard use only the metric names floe emits.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, lab, prometheus};
use serde_json::{Value, json};

const DAG: &str = "compact_serve";
const CONN: &str = "trino_serve";
const DEAD_HOST: &str = "trino-serve-old.internal";
const SCHEMA: &str = "serve_af3";
/// floe's refresh period in the test (the shortest the config takes).
const REFRESH: Duration = Duration::from_secs(5);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A process this test started, stopped by its PID (SIGTERM, then SIGKILL) when dropped.
struct Proc {
    child: Child,
    what: &'static str,
}

impl Proc {
    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success(), "kill {sig} {}", self.what);
    }

    /// SIGTERM, and the exit status within `within`.
    fn stop(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        if let Ok(Some(s)) = self.child.try_wait() {
            return Some(s);
        }
        self.signal("-TERM");
        let start = Instant::now();
        while start.elapsed() < within {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.stop(Duration::from_secs(10));
    }
}

/// Every sample name floe emits, from `floe serve --list-metrics`.
fn floe_metric_names() -> BTreeSet<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(["serve", "--list-metrics"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let names: BTreeSet<String> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect();
    assert!(names.len() > 20, "{text}");
    names
}

/// The `floe_…` names `text` uses.
fn names_used(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("floe_") {
        let name: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[i + name.len()..];
        out.insert(name);
    }
    out
}

#[test]
fn the_shipped_rules_pass_promtool_and_use_only_floes_metric_names() {
    let (_, promtool) = prometheus();
    let dir = repo().join("assets/prometheus");
    let run = |args: &[&str]| {
        let out = Command::new(&promtool)
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "promtool {args:?}:\n{text}");
        text
    };
    let checked = run(&["check", "rules", "floe-rules.yml"]);
    assert!(checked.contains("SUCCESS: 8 rules found"), "{checked}");
    let tested = run(&["test", "rules", "floe-rules.test.yml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");

    let emitted = floe_metric_names();
    // Connection/endpoint label values of the fixtures are not names; floe_ in prose
    // (`floe_up == 0`) is a name and checked.
    for file in [
        "assets/prometheus/floe-rules.yml",
        "assets/prometheus/floe-rules.test.yml",
        "assets/grafana/floe.json",
    ] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        let used = names_used(&text);
        assert!(!used.is_empty(), "{file} uses no floe metric");
        let unknown: Vec<&String> = used.difference(&emitted).collect();
        assert!(
            unknown.is_empty(),
            "{file} uses metrics floe does not emit: {unknown:?} (floe serve --list-metrics)"
        );
    }
    // Every alert of the rules has a unit test.
    let rules = std::fs::read_to_string(dir.join("floe-rules.yml")).unwrap();
    let tests = std::fs::read_to_string(dir.join("floe-rules.test.yml")).unwrap();
    for line in rules
        .lines()
        .filter(|l| l.trim_start().starts_with("- alert: "))
    {
        let name = line.trim_start().trim_start_matches("- alert: ").trim();
        assert!(
            tests.contains(&format!("alertname: {name}\n")),
            "no unit test for {name}"
        );
    }
    // The dashboard: importable JSON, the datasource a variable every panel uses.
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("assets/grafana/floe.json")).unwrap(),
    )
    .unwrap();
    assert!(
        dash["schemaVersion"].as_u64().unwrap() >= 39,
        "{}",
        dash["schemaVersion"]
    );
    let vars = dash["templating"]["list"].as_array().unwrap();
    assert!(
        vars.iter()
            .any(|v| v["type"] == "datasource" && v["name"] == "datasource")
    );
    for p in dash["panels"].as_array().unwrap() {
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{}", p["title"]);
    }
}

/// The lab's Airflow 3 through its REST API as its admin (independent of floe's client).
struct Airflow {
    base: String,
    user: String,
    password: String,
    http: reqwest::Client,
}

impl Airflow {
    fn new() -> Airflow {
        let f = |k: &str| lab().airflow_field("airflow", k);
        assert_eq!(f("api"), "v2", "the lab's `airflow` is Airflow 3");
        Airflow {
            base: f("url").trim_end_matches('/').to_string(),
            user: f("user"),
            password: f("password"),
            http: crate::common::http_builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let tok: Value = self
            .http
            .post(format!("{}/auth/token", self.base))
            .json(&json!({"username": self.user, "password": self.password}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let url = format!("{}/api/v2{path}", self.base);
        let mut req = self
            .http
            .request(method.clone(), &url)
            .bearer_auth(tok["access_token"].as_str().unwrap());
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// The DAG unpaused, without runs, its connection at `host:port`.
    async fn reset(&self, host: &str, port: u16) {
        let start = Instant::now();
        loop {
            let (status, v) = self
                .call(reqwest::Method::GET, &format!("/dags/{DAG}"), None)
                .await;
            if status == 200 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "the lab's Airflow has no DAG {DAG}: tests/lab/airflow/dags/compact_serve.py is \
                 not in the DAG folder the lab's Airflow reads (a lab started before it was \
                 added): {status} {v}"
            );
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        let (status, v) = self
            .call(
                reqwest::Method::PATCH,
                &format!("/dags/{DAG}?update_mask=is_paused"),
                Some(json!({"is_paused": false})),
            )
            .await;
        assert_eq!(status, 200, "unpause {DAG}: {v}");
        let (_, runs) = self
            .call(
                reqwest::Method::GET,
                &format!("/dags/{DAG}/dagRuns?limit=100"),
                None,
            )
            .await;
        for r in runs["dag_runs"].as_array().cloned().unwrap_or_default() {
            let id = floe::airflow::encode_segment(r["dag_run_id"].as_str().unwrap());
            self.call(
                reqwest::Method::DELETE,
                &format!("/dags/{DAG}/dagRuns/{id}"),
                None,
            )
            .await;
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
                    "description": "Trino for floe serve's test compaction",
                    "host": host, "port": port, "login": "etl", "schema": SCHEMA,
                    "extra": "{\"catalog\": \"iceberg\", \"protocol\": \"http\"}"
                })),
            )
            .await;
        assert!(
            status == 200 || status == 201,
            "create {CONN}: {status} {v}"
        );
    }

    /// The connection pointed at `host:port` (the fix).
    async fn point(&self, host: &str, port: u16) {
        let (status, v) = self
            .call(
                reqwest::Method::PATCH,
                &format!("/connections/{CONN}?update_mask=host&update_mask=port"),
                Some(json!({"connection_id": CONN, "conn_type": "trino", "host": host, "port": port})),
            )
            .await;
        assert_eq!(status, 200, "point {CONN}: {v}");
    }

    /// A run triggered and waited for; its end state.
    async fn run(&self) -> String {
        let (status, v) = self
            .call(
                reqwest::Method::POST,
                &format!("/dags/{DAG}/dagRuns"),
                Some(json!({"logical_date": null})),
            )
            .await;
        assert_eq!(status, 200, "trigger {DAG}: {v}");
        let id = floe::airflow::encode_segment(v["dag_run_id"].as_str().unwrap());
        let start = Instant::now();
        loop {
            let (_, v) = self
                .call(
                    reqwest::Method::GET,
                    &format!("/dags/{DAG}/dagRuns/{id}"),
                    None,
                )
                .await;
            let state = v["state"].as_str().unwrap_or_default().to_string();
            if state == "success" || state == "failed" {
                return state;
            }
            assert!(
                start.elapsed() < Duration::from_secs(300),
                "run {id} still {state}"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// The lab's two clusters (the real Trino with Airflow 3, the stand-in with Airflow 2)
/// and a coordinator nothing listens on.
fn config(home: &Path) -> PathBuf {
    let af = |key: &str, field: &str| lab().airflow_field(key, field);
    let text = format!(
        r#"all = true
refresh = "{refresh}s"
[trino]
user = "floe"
[profiles.lab.trino]
url = "{real}"
tables = ["zoning.*", "{SCHEMA}.*"]
[profiles.lab.airflow]
url = "{af3}"
user = "{af3_user}"
password_env = "FLOE_TEST_AF3_PASSWORD"
dag_tags = ["maintenance", "lab-serve"]
[profiles.second.trino]
url = "{stand_in}"
tables = ["zoning.*"]
[profiles.second.airflow]
url = "{af2}"
user = "{af2_user}"
password_env = "FLOE_TEST_AF2_PASSWORD"
[profiles.down.trino]
url = "http://127.0.0.1:{port}"
"#,
        refresh = REFRESH.as_secs(),
        real = lab().trino_url(),
        stand_in = lab().stand_in_url(),
        af3 = af("airflow", "url"),
        af3_user = af("airflow", "user"),
        af2 = af("airflow2", "url"),
        af2_user = af("airflow2", "user"),
        port = free_port(),
    );
    let path = home.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn start_floe(home: &Path, cfg: &Path, port: u16) -> Proc {
    let child = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(["--config", cfg.to_str().unwrap(), "serve", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env(
            "FLOE_TEST_AF3_PASSWORD",
            lab().airflow_field("airflow", "password"),
        )
        .env(
            "FLOE_TEST_AF2_PASSWORD",
            lab().airflow_field("airflow2", "password"),
        )
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(home.join("serve.stderr")).unwrap())
        .spawn()
        .unwrap();
    Proc {
        child,
        what: "floe serve",
    }
}

fn start_prometheus(home: &Path, floe_port: u16, port: u16) -> Proc {
    let (server, _) = prometheus();
    let rules = repo().join("assets/prometheus/floe-rules.yml");
    let cfg = home.join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [{rules}]\n\
             scrape_configs:\n  - job_name: floe\n    static_configs: [{{targets: ['127.0.0.1:{floe_port}']}}]\n",
            rules = rules.display()
        ),
    )
    .unwrap();
    let child = Command::new(server)
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            home.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(home.join("prometheus.stderr")).unwrap())
        .spawn()
        .unwrap();
    Proc {
        child,
        what: "prometheus",
    }
}

/// Prometheus' firing alerts, as `name profile key` strings (key: the table, DAG or
/// connection).
async fn firing(http: &reqwest::Client, prom: &str) -> BTreeSet<String> {
    let Ok(r) = http.get(format!("{prom}/api/v1/alerts")).send().await else {
        return BTreeSet::new();
    };
    let v: Value = r.json().await.unwrap_or(Value::Null);
    let mut out = BTreeSet::new();
    for a in v["data"]["alerts"].as_array().cloned().unwrap_or_default() {
        if a["state"] != "firing" {
            continue;
        }
        let l = &a["labels"];
        let s = |k: &str| l[k].as_str().unwrap_or("").to_string();
        let key = if l["table"].is_string() {
            format!("{}.{}", s("schema"), s("table"))
        } else if l["connection"].is_string() {
            s("connection")
        } else {
            s("dag_id")
        };
        out.insert(format!("{} {} {key}", s("alertname"), s("profile")));
    }
    out
}

/// One value of an instant query (`None`: no sample).
async fn query(http: &reqwest::Client, prom: &str, q: &str) -> Option<f64> {
    let v: Value = http
        .get(format!("{prom}/api/v1/query"))
        .query(&[("query", q)])
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

/// `floe serve`'s counter of the lab's refreshes, read from /metrics.
async fn refreshes(http: &reqwest::Client, floe: &str) -> u64 {
    let text = http
        .get(format!("{floe}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    sample(&text, "floe_refreshes_total{profile=\"lab\"}") as u64
}

fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series).map(|v| v.trim().parse().unwrap()))
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
}

async fn wait_until<F, Fut>(what: &str, within: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let start = Instant::now();
    loop {
        match f().await {
            Ok(()) => return,
            Err(e) if start.elapsed() > within => panic!("{what} not within {within:?}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

fn expect(set: &BTreeSet<String>, want: &[String]) -> Result<(), String> {
    let missing: Vec<&String> = want.iter().filter(|w| !set.contains(*w)).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("missing {missing:?}; firing {set:?}"))
    }
}

#[test]
fn a_real_prometheus_alerts_on_the_seed_and_the_alerts_end_after_the_fix() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let home = std::env::temp_dir().join(format!("floe-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let af = Airflow::new();
    let trino = url::Url::parse(&lab().trino_url()).unwrap();
    let (host, port) = (trino.host_str().unwrap().to_string(), trino.port().unwrap());

    // The private incident: the seed's documents cloned, the DAG failing on a dead host.
    rt.block_on(async {
        lab()
            .post(
                "engine/clone_table",
                json!({"source": "zoning.documents", "target": format!("{SCHEMA}.documents"), "replace": true}),
            )
            .await;
        af.reset(DEAD_HOST, 8080).await;
        assert_eq!(af.run().await, "failed", "the run on the dead host fails");
    });

    let cfg = config(&home);
    let (floe_port, prom_port) = (free_port(), free_port());
    let mut floe = start_floe(&home, &cfg, floe_port);
    let mut prom = start_prometheus(&home, floe_port, prom_port);
    let floe_url = format!("http://127.0.0.1:{floe_port}");
    let prom_url = format!("http://127.0.0.1:{prom_port}");
    let http = crate::common::http_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let started = Instant::now();

    let seed: Vec<String> = [
        "FloeSmallFilesWaitingCritical lab zoning.documents",
        "FloeSmallFilesWaitingCritical second zoning.documents",
        "FloeMaintenanceDagFailing lab compact_documents",
        "FloeAirflowConnectionFailing lab trino_documents",
    ]
    .map(String::from)
    .to_vec();
    let private: Vec<String> = [
        format!("FloeSmallFilesWaitingCritical lab {SCHEMA}.documents"),
        format!("FloeMaintenanceDagFailing lab {DAG}"),
        format!("FloeAirflowConnectionFailing lab {CONN}"),
    ]
    .to_vec();
    let all: Vec<String> = seed.iter().chain(&private).cloned().collect();
    rt.block_on(wait_until(
        "the alerts firing",
        Duration::from_secs(300),
        || async { expect(&firing(&http, &prom_url).await, &all) },
    ));
    eprintln!(
        "the seed's alerts firing after {:.1}s: {:?}",
        started.elapsed().as_secs_f64(),
        rt.block_on(firing(&http, &prom_url))
    );

    rt.block_on(served_as_expected(&http, &prom_url, &floe_url));

    // The fix: the connection pointed at the lab's Trino, a run triggered; it compacts.
    let (fixed_at, count_at_fix) = rt.block_on(async {
        af.point(&host, port).await;
        assert_eq!(af.run().await, "success", "the run after the fix compacts");
        (Instant::now(), refreshes(&http, &floe_url).await)
    });
    rt.block_on(wait_until(
        "the private alerts ending",
        Duration::from_secs(120),
        || async {
            let f = firing(&http, &prom_url).await;
            let still: Vec<&String> = private.iter().filter(|p| f.contains(*p)).collect();
            if still.is_empty() {
                Ok(())
            } else {
                Err(format!("still firing {still:?}"))
            }
        },
    ));
    let count_at_end = rt.block_on(refreshes(&http, &floe_url));
    eprintln!(
        "the alerts ended {:.1}s after the run's success, {} refreshes of the lab later",
        fixed_at.elapsed().as_secs_f64(),
        count_at_end - count_at_fix
    );
    // The refresh running at the fix may have read before it; two more end the alerts.
    assert!(
        count_at_end - count_at_fix <= 3,
        "{count_at_fix} → {count_at_end}"
    );
    // The seed's incident is still alerting (only the private copy was fixed).
    rt.block_on(async { expect(&firing(&http, &prom_url).await, &seed).unwrap() });

    // An idle exporter's cost: statements per refresh of the lab, nothing changing.
    rt.block_on(idle_statements(&http, &floe_url));

    // SIGHUP reloads (the same config: still served, the reload successful); SIGTERM
    // stops it, exit 0.
    floe.signal("-HUP");
    rt.block_on(async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let t = http
            .get(format!("{floe_url}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(
            sample(&t, "floe_config_last_reload_successful{profile=\"lab\"}"),
            1.0
        );
    });
    let status = floe
        .stop(Duration::from_secs(10))
        .expect("floe serve stops on SIGTERM");
    assert!(status.success(), "{status:?}");
    prom.stop(Duration::from_secs(20));
    // Nothing left failing for other tests: the connection where it works, no runs.
    rt.block_on(af.reset(&host, port));
    let _ = std::fs::remove_dir_all(&home);
}

/// The statements `user` started on the real coordinator after `since` (Unix seconds).
async fn statements_since(user: &str, since: f64) -> usize {
    lab()
        .real_queries_of(user)
        .await
        .iter()
        .filter(|q| q["created"].as_f64().is_some_and(|c| c > since))
        .count()
}

#[test]
fn an_idle_exporter_costs_the_coordinator_what_an_idle_tui_costs() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let home = std::env::temp_dir().join(format!("floe-serve-idle-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let (u_tui, u_serve) = (common::user("idle_tui"), common::user("idle_serve"));
    let cfg = |name: &str, user: &str| {
        let path = home.join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "refresh = \"{}s\"\n[trino]\nurl = \"{}\"\nuser = \"{user}\"\ntables = [\"zoning.*\"]\n",
                REFRESH.as_secs(),
                lab().proxy_url()
            ),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    // Through the fault proxy in front of the real Trino (no rule): an idle refresh sends
    // no statement (the writes come from the coordinator's query list, the rotation's
    // probe is rare over three tables), so its requests are what it costs.
    let (tui_cfg, serve_cfg) = (cfg("tui", &u_tui), cfg("serve", &u_serve));
    let port = free_port();
    let mut serve = start_floe(&home, Path::new(&serve_cfg), port);
    let mut tui = common::pty::Pty::spawn(&["--config", &tui_cfg], 160, 48);
    tui.wait_for("the tables", Duration::from_secs(120), |s| {
        s.contains("documents")
    });
    // Both past their first (full) refresh and a steady one; then an idle window.
    std::thread::sleep(REFRESH * 4);
    let since = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let window = REFRESH * 8;
    // The proxy keeps its last 1,000 requests (other subjects use it too): read them
    // every period, so none of the window's is lost.
    let mut seen: [std::collections::BTreeSet<String>; 2] = Default::default();
    let end = std::time::Instant::now() + window;
    while std::time::Instant::now() < end {
        std::thread::sleep(REFRESH.min(end - std::time::Instant::now()));
        for (i, u) in [&u_tui, &u_serve].into_iter().enumerate() {
            for r in rt.block_on(lab().proxy_requests_of(u)) {
                if r["time"].as_f64().is_some_and(|t| t > since) {
                    seen[i].insert(format!("{} {} {}", r["time"], r["method"], r["path"]));
                }
            }
        }
    }
    let (r_tui, r_serve) = (seen[0].len(), seen[1].len());
    let (n_tui, n_serve) = rt.block_on(async {
        (
            statements_since(&u_tui, since).await,
            statements_since(&u_serve, since).await,
        )
    });
    eprintln!(
        "idle over {window:?} ({} refresh periods): the TUI sent {r_tui} requests ({n_tui} statements), floe serve {r_serve} ({n_serve})",
        window.as_secs() / REFRESH.as_secs()
    );
    assert!(
        r_tui > 0 && r_serve > 0,
        "both refresh: TUI {r_tui} requests, serve {r_serve}"
    );
    // The same refresh: a period's phase may add one refresh's requests to either.
    assert!(
        r_serve <= r_tui + r_tui.div_ceil(4).max(3),
        "an idle exporter asks more of the coordinator than an idle TUI: {r_serve} > {r_tui} requests"
    );
    assert!(
        n_serve <= n_tui + 3,
        "an idle exporter costs more than an idle TUI: {n_serve} > {n_tui} statements"
    );
    tui.send(b"q");
    assert!(tui.wait_exit(Duration::from_secs(10)).success());
    let status = serve
        .stop(Duration::from_secs(10))
        .expect("floe serve stops");
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&home);
}

/// HTTPS with the lab's certificate for 127.0.0.1, a bearer token for /metrics (not for
/// /healthz), and SIGHUP: a profile added is served, a config that does not load keeps
/// what was served and says so.
#[test]
fn tls_a_bearer_token_and_sighup() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let home = std::env::temp_dir().join(format!("floe-serve-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let tls = lab().dir.join("trino-real-tls");
    let cfg = home.join("config.toml");
    let one = format!(
        "all = true\nrefresh = \"{}s\"\n[trino]\nuser = \"floe\"\n[profiles.parcels.trino]\nurl = \"{}\"\ntables = [\"zoning.parcels\"]\n",
        REFRESH.as_secs(),
        lab().trino_url()
    );
    std::fs::write(&cfg, &one).unwrap();
    std::fs::write(home.join("token"), "s3cret-token\n").unwrap();
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(["--config", cfg.to_str().unwrap(), "serve", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--tls-cert")
        .arg(tls.join("server.pem"))
        .arg("--tls-key")
        .arg(tls.join("server-key.pem"))
        .arg("--token-file")
        .arg(home.join("token"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_STATE_HOME", home.join("state"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(home.join("serve.stderr")).unwrap())
        .spawn()
        .unwrap();
    let mut floe = Proc {
        child,
        what: "floe serve",
    };
    let ca = reqwest::Certificate::from_pem(&std::fs::read(tls.join("ca.pem")).unwrap()).unwrap();
    let http = crate::common::http_builder()
        .add_root_certificate(ca)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let base = format!("https://127.0.0.1:{port}");
    let get = |path: &'static str, token: Option<&'static str>| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let mut req = http.get(format!("{base}{path}"));
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            match req.send().await {
                Ok(r) => Ok((r.status().as_u16(), r.text().await.unwrap_or_default())),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    rt.block_on(async {
        wait_until(
            "the first refresh served over TLS",
            Duration::from_secs(120),
            || async {
                match get("/metrics", Some("s3cret-token")).await {
                    Ok((200, t)) if t.contains("floe_up{profile=\"parcels\"} 1") => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
        assert_eq!(get("/metrics", None).await.unwrap().0, 401);
        assert_eq!(get("/metrics", Some("s3cret-tokem")).await.unwrap().0, 401);
        assert_eq!(get("/healthz", None).await.unwrap().0, 200);
        // Plain HTTP on the TLS port is refused.
        let plain = crate::common::http_builder()
            .build()
            .unwrap()
            .get(format!("http://127.0.0.1:{port}/metrics"))
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        assert!(plain.is_err() || plain.unwrap().status() != 200);
    });

    // A second profile, then SIGHUP: both served.
    let two = format!(
        "{one}[profiles.permits.trino]\nurl = \"{}\"\ntables = [\"zoning.permits\"]\n",
        lab().trino_url()
    );
    std::fs::write(&cfg, &two).unwrap();
    floe.signal("-HUP");
    rt.block_on(wait_until(
        "the added profile served",
        Duration::from_secs(120),
        || async {
            match get("/metrics", Some("s3cret-token")).await {
                Ok((200, t))
                    if t.contains("floe_up{profile=\"permits\"} 1")
                        && t.contains("floe_up{profile=\"parcels\"} 1") =>
                {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            }
        },
    ));
    // A config that does not load: everything served as it was, the reload said failed.
    std::fs::write(&cfg, "refresh = \"soonish\"\n").unwrap();
    floe.signal("-HUP");
    rt.block_on(wait_until(
        "the failed reload said",
        Duration::from_secs(20),
        || async {
            match get("/metrics", Some("s3cret-token")).await {
                Ok((200, t))
                    if t.contains("floe_config_last_reload_successful{profile=\"permits\"} 0")
                        && t.contains("floe_up{profile=\"parcels\"} 1") =>
                {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            }
        },
    ));
    let status = floe
        .stop(Duration::from_secs(10))
        .expect("floe serve stops on SIGTERM");
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&home);
}

/// What the scrape serves besides the alerts: the dead cluster UNKNOWN for itself and the
/// others served, OpenMetrics by the Accept header with every sample's profile, /healthz.
async fn served_as_expected(http: &reqwest::Client, prom_url: &str, floe_url: &str) {
    // The dead cluster is UNKNOWN for itself, the others served.
    assert_eq!(
        query(http, prom_url, "floe_up{profile=\"down\"}").await,
        Some(0.0)
    );
    assert_eq!(
        query(http, prom_url, "floe_up{profile=\"lab\"}").await,
        Some(1.0)
    );
    assert_eq!(
        query(http, prom_url, "floe_up{profile=\"second\"}").await,
        Some(1.0)
    );
    // OpenMetrics by the Accept header; every sample labelled by its profile.
    let r = http
        .get(format!("{floe_url}/metrics"))
        .header("Accept", "application/openmetrics-text;version=1.0.0")
        .send()
        .await
        .unwrap();
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let om = r.text().await.unwrap();
    assert!(
        om.ends_with("# EOF\n"),
        "{}",
        &om[om.len().saturating_sub(200)..]
    );
    for l in om.lines().filter(|l| !l.starts_with('#')) {
        assert!(l.contains("{profile=\""), "{l}");
    }
    let health = http
        .get(format!("{floe_url}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let health = health.text().await.unwrap();
    assert!(
        health.contains("down: down:") || health.contains("down: no refresh"),
        "{health}"
    );
}

/// The statements floe serve sent the lab over four refresh periods, nothing changing.
async fn idle_statements(http: &reqwest::Client, floe_url: &str) {
    let read = |t: String| {
        (
            sample(&t, "floe_statements_total{profile=\"lab\"}"),
            sample(&t, "floe_refreshes_total{profile=\"lab\"}"),
        )
    };
    let get = || async {
        http.get(format!("{floe_url}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let (s0, r0) = read(get().await);
    tokio::time::sleep(REFRESH * 4).await;
    let (s1, r1) = read(get().await);
    eprintln!(
        "idle: {} statements over {} refreshes of the lab ({:.1} per refresh)",
        s1 - s0,
        r1 - r0,
        (s1 - s0) / (r1 - r0).max(1.0)
    );
}
