//! The lab, as integration tests see it: `.lab/lab.json` (or `$FLOE_LAB_DIR/lab.json`),
//! written by `cargo xtask lab up`. A missing lab is a failure, never a skip.
//!
//! The real Trino the tests read is the lab's primary (`trino`), or with
//! `FLOE_LAB_TRINO=<version>` the lab's real Trino of that version (`trinos.<version>`):
//! `cargo xtask test` runs the version-sensitive subjects once more on each other version
//! the lab runs. A version the lab does not run is a failure.

pub mod driver;
pub mod pty;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use floe::config::{Auth, TlsSettings};
use floe::trino::{Client, ClientConfig, RetryPolicy};
use serde_json::{Value, json};

pub struct Lab {
    pub dir: PathBuf,
    pub v: Value,
    pub expected: Value,
}

pub fn lab() -> &'static Lab {
    static LAB: OnceLock<Lab> = OnceLock::new();
    LAB.get_or_init(|| {
        let dir = std::env::var_os("FLOE_LAB_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".lab"));
        let path = dir.join("lab.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: the lab is not running (start it with `cargo xtask lab up`)",
                path.display()
            )
        });
        let mut v: Value = serde_json::from_str(&text).expect("lab.json parses");
        if let Some(version) = std::env::var("FLOE_LAB_TRINO")
            .ok()
            .filter(|s| !s.is_empty())
        {
            let real = v["trinos"][&version].clone();
            assert!(
                real.is_object(),
                "FLOE_LAB_TRINO={version}: the lab runs no real Trino {version} (trinos: {}); \
                 start it with `cargo xtask lab up --trino 476,483`",
                v["trinos"]
            );
            v["trino"] = real;
        }
        let exp_path = v["scenario"]["expected"]
            .as_str()
            .expect("lab.json names the scenario's expected.json");
        let expected =
            serde_json::from_str(&std::fs::read_to_string(exp_path).expect("expected.json"))
                .expect("expected.json parses");
        Lab { dir, v, expected }
    })
}

impl Lab {
    /// The real Trino coordinator of the lab (what every test reads by default).
    pub fn trino_url(&self) -> String {
        self.v["trino"]["url"].as_str().unwrap().to_string()
    }

    /// The release of the real Trino the tests read (`trino_url`): 476, 483.
    pub fn trino_version(&self) -> u32 {
        let v = &self.v["trino"]["version"];
        v.as_str()
            .and_then(|s| s.parse().ok())
            .or_else(|| v.as_u64().map(|n| n as u32))
            .unwrap_or_else(|| panic!("lab.json trino.version is not a release number: {v}"))
    }

    /// The real Trino the tests read, over HTTPS with Trino's password file authenticator:
    /// (URL, CA file, user, password).
    pub fn trino_tls(&self) -> (String, PathBuf, String, String) {
        let t = &self.v["trino"];
        let field = |k: &str| {
            t[k].as_str()
                .unwrap_or_else(|| {
                    panic!("lab.json trino has no {k} (the real Trino's HTTPS listener)")
                })
                .to_string()
        };
        (
            field("https_url"),
            PathBuf::from(field("ca_file")),
            field("tls_user"),
            field("tls_password"),
        )
    }

    /// The lab's Trino-protocol stand-in (`lab.json` `stand_in`): the server for what a real
    /// coordinator cannot do on demand (injected faults, scan counts, older personalities,
    /// TLS/password/JWT/OAuth2 listeners, the engine's control endpoint).
    pub fn stand_in(&self) -> &Value {
        let s = &self.v["stand_in"];
        if s.is_null() { &self.v["trino"] } else { s }
    }

    /// The stand-in's plain-HTTP URL: tests that inject faults or read `queries_of` use it.
    pub fn stand_in_url(&self) -> String {
        self.stand_in()["url"].as_str().unwrap().to_string()
    }

    /// The lab's second cluster (`labctl up` starts it unless `--no-second`): the stand-in
    /// over a copy of the seed's catalog.
    pub fn second_url(&self) -> String {
        self.v["second"]["url"]
            .as_str()
            .unwrap_or_else(|| {
                panic!("lab.json has no second cluster: the lab was started with --no-second")
            })
            .to_string()
    }

    pub fn listener(&self, name: &str) -> String {
        self.stand_in()["listeners"][name]
            .as_str()
            .unwrap_or_else(|| panic!("no listener {name}"))
            .to_string()
    }

    pub fn https_url(&self) -> String {
        self.stand_in()["https_url"].as_str().unwrap().to_string()
    }

    pub fn ca_file(&self) -> PathBuf {
        PathBuf::from(self.stand_in()["ca_file"].as_str().unwrap())
    }

    pub fn control_url(&self) -> String {
        self.stand_in()["control_url"]
            .as_str()
            .unwrap()
            .trim_end_matches('/')
            .to_string()
    }

    /// expected.json facts of `schema.table`.
    pub fn table(&self, key: &str) -> &Value {
        let t = &self.expected["tables"][key];
        assert!(!t.is_null(), "expected.json has no table {key}");
        t
    }

    pub fn config(&self, url: &str, user: &str) -> ClientConfig {
        ClientConfig {
            url: url.parse().unwrap(),
            user: user.to_string(),
            source: "floe-test".into(),
            catalog: Some("iceberg".into()),
            schema: None,
            auth: Auth::None,
            tls: TlsSettings {
                ca_file: None,
                insecure_skip_verify: false,
            },
            session: Default::default(),
            client_tags: vec![],
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            query_timeout: Some(Duration::from_secs(120)),
        }
    }

    pub fn client(&self, user: &str) -> Client {
        Client::new(self.config(&self.trino_url(), user)).unwrap()
    }

    fn http() -> reqwest::Client {
        http_builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap()
    }

    /// The list a lab control endpoint answers at `url`: under `key`, or the whole answer.
    async fn list(url: &str, key: &str) -> Vec<Value> {
        let v: Value = Self::http()
            .get(url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        let list = v.get(key).cloned().unwrap_or(v);
        list.as_array().cloned().unwrap_or_default()
    }

    pub async fn post(&self, path: &str, body: Value) -> Value {
        let url = format!("{}/{}", self.control_url(), path.trim_start_matches('/'));
        let r = Self::http()
            .post(&url)
            .json(&body)
            .send()
            .await
            .expect("lab control endpoint");
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "POST {url} {body}: {status} {v}");
        v
    }

    pub async fn faults(&self, user: &str, rules: Value) {
        self.post("faults", json!({"user": user, "rules": rules}))
            .await;
    }

    pub async fn clear_faults(&self, user: &str) {
        let url = format!("{}/faults?user={user}", self.control_url());
        Self::http().delete(&url).send().await.unwrap();
    }

    pub async fn page_size(&self, user: &str, n: u64) {
        self.post("config", json!({"user": user, "page_size": n}))
            .await;
    }

    /// Queries the lab saw from `user`, oldest first.
    pub async fn queries_of(&self, user: &str) -> Vec<Value> {
        Self::list(&format!("{}/queries", self.control_url()), "queries")
            .await
            .into_iter()
            .filter(|q| q["user"] == user)
            .collect()
    }

    /// Queries the real coordinator recorded from `user` (`system.runtime.queries`), oldest
    /// first, in the shape of [`Lab::queries_of`]: `id`, `user`, `sql`, `state`,
    /// `error_name` (Trino's error code name, e.g. `USER_CANCELED`), `source`.
    pub async fn real_queries_of(&self, user: &str) -> Vec<Value> {
        let sql = format!(
            "SELECT query_id, \"user\", query, state, error_code, source, to_unixtime(created) \
             FROM system.runtime.queries WHERE \"user\" = '{}' ORDER BY created, query_id",
            user.replace('\'', "''")
        );
        let rows = self.real_rows(&sql).await;
        rows.into_iter()
            .map(|r| {
                json!({"id": r[0], "user": r[1], "sql": r[2], "state": r[3],
                       "error_name": r[4], "source": r[5], "created": r[6]})
            })
            .collect()
    }

    /// Every row of `sql` on the real coordinator (as the lab's own user), through the
    /// client protocol with a plain HTTP client: independent of floe's Trino client.
    pub async fn real_rows(&self, sql: &str) -> Vec<Vec<Value>> {
        let http = Self::http();
        let mut page: Value = http
            .post(format!("{}/v1/statement", self.trino_url()))
            .header("X-Trino-User", "floe-lab")
            .header("X-Trino-Catalog", "iceberg")
            .body(sql.to_string())
            .send()
            .await
            .expect("the real Trino answers")
            .json()
            .await
            .expect("a QueryResults page");
        let mut rows = Vec::new();
        loop {
            if let Some(d) = page["data"].as_array() {
                rows.extend(d.iter().map(|r| r.as_array().cloned().unwrap_or_default()));
            }
            assert!(page["error"].is_null(), "{sql}: {}", page["error"]);
            let Some(next) = page["nextUri"].as_str().map(str::to_string) else {
                break;
            };
            page = http
                .get(&next)
                .header("X-Trino-User", "floe-lab")
                .send()
                .await
                .expect("the real Trino answers")
                .json()
                .await
                .expect("a QueryResults page");
        }
        rows
    }

    /// The fault proxy in front of the real Trino (`trino.proxy_url`): network faults for
    /// the real coordinator are injected there.
    pub fn proxy_url(&self) -> String {
        self.v["trino"]["proxy_url"]
            .as_str()
            .expect("lab.json trino has a proxy_url (the fault proxy in front of the real Trino)")
            .to_string()
    }

    fn proxy_control_url(&self) -> String {
        self.v["trino"]["proxy_control_url"]
            .as_str()
            .expect("lab.json trino has a proxy_control_url")
            .trim_end_matches('/')
            .to_string()
    }

    /// Add fault rules for `user`'s queries to the proxy in front of the real Trino.
    pub async fn real_faults(&self, user: &str, rules: Value) {
        let url = format!("{}/faults", self.proxy_control_url());
        Self::post_rules(
            &url,
            json!({"user": user, "rules": rules}),
            "the Trino fault proxy's control endpoint",
        )
        .await;
    }

    /// POST `body` to a fault proxy's `url`, which must accept it.
    async fn post_rules(url: &str, body: Value, what: &str) {
        let r = Self::http().post(url).json(&body).send().await.expect(what);
        let status = r.status();
        let text = r.text().await.unwrap_or_default();
        assert!(status.is_success(), "POST {url}: {status} {text}");
    }

    /// Clear `user`'s rules on the proxy in front of the real Trino.
    pub async fn clear_real_faults(&self, user: &str) {
        let url = format!("{}/faults?user={user}", self.proxy_control_url());
        Self::http().delete(&url).send().await.unwrap();
    }

    /// The requests the proxy in front of the real Trino saw from `user`, oldest first.
    pub async fn proxy_requests_of(&self, user: &str) -> Vec<Value> {
        Self::list(
            &format!("{}/requests", self.proxy_control_url()),
            "requests",
        )
        .await
        .into_iter()
        .filter(|q| q["user"] == user)
        .collect()
    }

    /// An isolated, mutable copy of a seed table (tests that change tables use these).
    pub async fn clone_table(&self, source: &str, target: &str) -> Value {
        self.post(
            "engine/clone_table",
            json!({"source": source, "target": target}),
        )
        .await
    }
}

impl Lab {
    /// A field of `lab.json`'s `airflow` (Airflow 3) or `airflow2` entry.
    pub fn airflow_field(&self, key: &str, name: &str) -> String {
        self.v[key][name]
            .as_str()
            .unwrap_or_else(|| panic!("lab.json {key} has no {name}"))
            .to_string()
    }

    /// The fault proxy's control URL in front of `airflow` or `airflow2`.
    pub fn proxy_control(&self, key: &str) -> String {
        self.airflow_field(key, "proxy_control_url")
            .trim_end_matches('/')
            .to_string()
    }

    /// Add rules to the Airflow fault proxy of `key` (`airflow` or `airflow2`).
    pub async fn proxy_faults(&self, key: &str, rules: Value) {
        let url = format!("{}/faults", self.proxy_control(key));
        Self::post_rules(&url, json!({ "rules": rules }), "proxy control endpoint").await;
    }

    /// Clear every rule of the Airflow fault proxy of `key`, and forget its requests.
    pub async fn proxy_clear(&self, key: &str) {
        let base = self.proxy_control(key);
        Self::http()
            .delete(format!("{base}/faults"))
            .send()
            .await
            .unwrap();
        Self::http()
            .delete(format!("{base}/requests"))
            .send()
            .await
            .unwrap();
    }

    /// The requests the Airflow fault proxy of `key` saw, oldest first.
    pub async fn proxy_requests(&self, key: &str) -> Vec<Value> {
        Self::list(&format!("{}/requests", self.proxy_control(key)), "requests").await
    }
}

/// The lab's Python (its venv, keyed by the lock's hash, as labctl builds it): the
/// official `trino` client among its packages.
pub fn lab_python() -> std::path::PathBuf {
    let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lab/requirements.lock");
    let out = std::process::Command::new("sha256sum")
        .arg(&lock)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let hash = &text.split_whitespace().next().unwrap()[..12];
    let cache = std::env::var_os("FLOE_CACHE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/floe")
        });
    cache.join(format!("venvs/lab-{hash}/bin/python"))
}

/// A user name unique to this test process and test, so faults and page sizes scoped
/// to it touch nobody else.
pub fn user(test: &str) -> String {
    format!("t_{test}_{}", std::process::id())
}

/// What bash completes with floe's completion script `script` sourced, for the line
/// `words` with the cursor on word `cword`: what `_floe_profiles` offers, one per line,
/// and bash's stderr.
pub fn bash_completes(script: &std::path::Path, words: &str, cword: usize) -> (String, String) {
    let probe = format!(
        "source {}\nCOMP_WORDS=({words})\nCOMP_CWORD={cword}\n_floe_profiles\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Debian's Prometheus server and promtool, as lab.json names them (`prometheus`), else
/// as `tests/lab/prometheus.py ensure` unpacks them (a lab started before labctl wrote
/// them): `(prometheus, promtool)`. Missing is a failure.
pub fn prometheus() -> (PathBuf, PathBuf) {
    static PROM: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    PROM.get_or_init(|| {
        let mut v = lab().v["prometheus"].clone();
        if !v.is_object() {
            let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lab/prometheus.py");
            let out = std::process::Command::new("python3")
                .arg(&script)
                .arg("ensure")
                .output()
                .expect("python3 runs tests/lab/prometheus.py");
            assert!(
                out.status.success(),
                "tests/lab/prometheus.py ensure failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            v = serde_json::from_slice(&out.stdout).expect("prometheus.py prints JSON");
        }
        let path =
            |k: &str| PathBuf::from(v[k].as_str().unwrap_or_else(|| panic!("prometheus.{k}")));
        (path("prometheus"), path("promtool"))
    })
    .clone()
}

/// A port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A reqwest client builder for the tests' own HTTP: the process' TLS crypto installed
/// first, as floe's own clients have it (reqwest has no provider of its own).
pub fn http_builder() -> reqwest::ClientBuilder {
    floe::net::install_crypto();
    reqwest::Client::builder()
}
