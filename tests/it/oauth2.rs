//! Trino's OAuth2 external authentication against the lab's OAuth2 listener
//! (`trino.oauth2_url` in lab.json): `floe login` with the real binary, the test playing the
//! operator's browser; the token cache; `floe check` under cron; expiry, revocation and
//! re-login; the token never shown.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::lab;
use floe::config::{Auth, OAuth2Settings};
use floe::trino::{Client, LoginEvent, LoginPrompt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The lab's OAuth2 settings are global to its server: one test at a time.
static LAB_OAUTH2: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn oauth2_url() -> String {
    lab().stand_in()["oauth2_url"]
        .as_str()
        .expect("lab.json has trino.oauth2_url (a lab started from this tree)")
        .to_string()
}

fn control_url() -> String {
    lab().stand_in()["oauth2_control_url"]
        .as_str()
        .expect("lab.json has trino.oauth2_control_url")
        .to_string()
}

fn http() -> reqwest::Client {
    crate::common::http_builder()
        .timeout(Duration::from_secs(30))
        .no_proxy()
        .build()
        .unwrap()
}

async fn control(body: Value) -> Value {
    let r = http().post(control_url()).json(&body).send().await.unwrap();
    assert!(r.status().is_success(), "{body}: {}", r.status());
    r.json().await.unwrap()
}

async fn counters() -> Value {
    http()
        .get(control_url())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The operator's browser: visiting the login URL logs them in.
async fn browse(url: &str) -> (u16, String) {
    let r = http().get(url).send().await.expect("the login URL answers");
    let status = r.status().as_u16();
    (status, r.text().await.unwrap_or_default())
}

/// A home of its own: config, state (the log), cache (the tokens).
struct Home {
    dir: PathBuf,
    /// Everything floe printed, to prove no token was.
    printed: Vec<String>,
}

impl Home {
    fn new(name: &str) -> Home {
        let dir = std::env::temp_dir().join(format!("floe-oauth2-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Home {
            dir,
            printed: Vec::new(),
        }
    }

    fn cache_dir(&self) -> PathBuf {
        self.dir.join("cache/floe/oauth2")
    }

    fn cache_file(&self, user: &str) -> PathBuf {
        let u: url::Url = oauth2_url().parse().unwrap();
        self.cache_dir().join(format!(
            "http_{}_{}_{user}.json",
            u.host_str().unwrap(),
            u.port().unwrap()
        ))
    }

    fn cached_token(&self, user: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.cache_file(user)).ok()?;
        let v: Value = serde_json::from_str(&text).unwrap();
        Some(v["token"].as_str().unwrap().to_string())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("state/floe/floe.log")).unwrap_or_default()
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let url = oauth2_url();
        let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_floe"));
        c.args(args)
            .args(["--trino", &url, "--user", "carol", "--auth", "oauth2"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .env("XDG_CONFIG_HOME", self.dir.join("config"))
            .env("XDG_STATE_HOME", self.dir.join("state"))
            .env("XDG_CACHE_HOME", self.dir.join("cache"))
            .env("USER", "carol")
            .env("FLOE_LOG", "floe=trace")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    /// `floe check` (text); exit code and stdout.
    async fn check(&mut self, extra: &[&str]) -> (i32, String) {
        let mut args = vec!["check"];
        args.extend_from_slice(extra);
        let out = tokio::time::timeout(Duration::from_secs(120), self.command(&args).output())
            .await
            .expect("floe check never waits for a human")
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        self.printed.push(stdout.clone());
        self.printed
            .push(String::from_utf8_lossy(&out.stderr).into_owned());
        (out.status.code().unwrap(), stdout)
    }

    /// `floe login`, the test acting as the browser with `query` added to the login URL:
    /// exit code, stdout, stderr, the URL printed.
    async fn login(&mut self, query: &str) -> (i32, String, String, Option<String>) {
        let mut child = self.command(&["login"]).spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut err_text = String::new();
        let mut url = None;
        let run = async {
            while let Some(line) = stderr.next_line().await.unwrap() {
                err_text.push_str(&line);
                err_text.push('\n');
                let t = line.trim();
                if url.is_none() && t.starts_with("http") {
                    url = Some(t.to_string());
                    let (status, body) = browse(&format!("{t}{query}")).await;
                    err_text.push_str(&format!("[browser: {status} {body}]\n"));
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(120), run)
            .await
            .expect("floe login ends");
        let out = child.wait_with_output().await.unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        self.printed.push(stdout.clone());
        self.printed.push(err_text.clone());
        (out.status.code().unwrap(), stdout, err_text, url)
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn seed_schema_args() -> Vec<String> {
    let mut s: Vec<String> = lab().expected["tables"]
        .as_object()
        .unwrap()
        .values()
        .map(|t| t["schema"].as_str().unwrap().to_string())
        .collect();
    s.sort();
    s.dedup();
    s.into_iter()
        .flat_map(|x| ["--schema".to_string(), x])
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_cache_check_expiry_and_relogin_end_to_end() {
    let _one = LAB_OAUTH2.lock().await;
    control(json!({"reset": true})).await;
    let mut home = Home::new("e2e");
    let schemas = seed_schema_args();
    let schemas: Vec<&str> = schemas.iter().map(String::as_str).collect();
    let mut tokens = Vec::new();

    // No token: check says to log in, at once.
    let (code, out) = home.check(&schemas).await;
    assert_eq!(code, 3, "{out}");
    assert!(
        out.starts_with("UNKNOWN") && out.contains("run floe login"),
        "{out}"
    );
    assert_eq!(counters().await["logins"], 0);

    // floe login: the URL on stderr, the browser logs in, the token is cached privately.
    let (code, out, err, url) = home.login("").await;
    assert_eq!(code, 0, "{out}\n{err}");
    let url = url.expect("floe login prints the login URL on stderr");
    assert!(
        url.starts_with(&format!("{}/oauth2/authorize/", oauth2_url())),
        "{url}"
    );
    assert!(
        !err.contains("\x1b]8;;"),
        "no hyperlink escape off a terminal"
    );
    assert!(
        err.contains("Logged in to the lab's Trino as carol"),
        "{err}"
    );
    let file = home.cache_file("carol");
    assert!(
        out.contains(&format!("Token cached in {}", file.display())) && out.contains("until"),
        "{out}"
    );
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&home.cache_dir()), 0o700);
    tokens.push(home.cached_token("carol").unwrap());
    let c = counters().await;
    assert_eq!(
        (c["logins"].as_u64(), c["token_deletes"].as_u64()),
        (Some(1), Some(1)),
        "{c}"
    );

    // floe check reuses it: no new challenge, no new login, a real report.
    let before = counters().await;
    let (code, out) = home.check(&schemas).await;
    assert!(code != 3, "{out}");
    assert!(!out.contains("run floe login"), "{out}");
    let after = counters().await;
    assert_eq!(after["challenges"], before["challenges"], "{after}");
    assert_eq!(after["logins"], 1);
    assert!(after["accepted"].as_u64() > before["accepted"].as_u64());

    // A short-lived token expires: check exits 3 saying to log in, and drops it.
    control(json!({"token_lifetime_s": 3})).await;
    let (code, out, err, _) = home.login("").await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("exp claim"), "the expiry is the JWT's: {out}");
    tokens.push(home.cached_token("carol").unwrap());
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (code, out) = home.check(&schemas).await;
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("run floe login"), "{out}");
    assert!(!file.exists(), "the expired token is dropped");

    // floe login again works.
    control(json!({"token_lifetime_s": 3600})).await;
    let (code, out, err, _) = home.login("").await;
    assert_eq!(code, 0, "{out}\n{err}");
    tokens.push(home.cached_token("carol").unwrap());
    let (code, out) = home.check(&schemas).await;
    assert!(code != 3, "{out}");

    // The coordinator refuses the cached token (revoked): check drops it and says so.
    control(json!({"revoke": true})).await;
    let (code, out) = home.check(&schemas).await;
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("refused the cached token") && out.contains("run floe login"),
        "{out}"
    );
    assert!(!file.exists(), "the refused token is dropped");

    // A refused login fails with the identity provider's reason.
    let (code, out, err, _) = home.login("?deny=1").await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("access_denied"), "{err}");
    assert!(!file.exists());

    // Never printed, never logged.
    let log = home.log();
    assert!(log.contains("OAuth2 login done"), "the log records logins");
    for t in &tokens {
        assert!(!log.contains(t.as_str()), "a token in the log");
        for p in &home.printed {
            assert!(!p.contains(t.as_str()), "a token printed: {p}");
        }
    }
    control(json!({"reset": true})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_cached_token_is_dropped_and_reacquired_by_an_interactive_client() {
    let _one = LAB_OAUTH2.lock().await;
    control(json!({"reset": true})).await;
    let home = Home::new("client");
    let mut cfg = lab().config(&oauth2_url(), "carol");
    cfg.auth = Auth::OAuth2(OAuth2Settings {
        cache_dir: home.cache_dir(),
        login_timeout: Duration::from_secs(60),
        token_lifetime: Duration::from_secs(3600),
    });
    // The "browser" visits whatever URL the client shows; the events are kept.
    let events: Arc<Mutex<Vec<LoginEvent>>> = Arc::default();
    let seen = events.clone();
    let rt = tokio::runtime::Handle::current();
    let prompt: LoginPrompt = Arc::new(move |e: &LoginEvent| {
        seen.lock().unwrap().push(e.clone());
        if let LoginEvent::Open { url, .. } = e {
            let url = url.to_string();
            rt.spawn(async move { browse(&url).await });
        }
    });
    let client = Client::new(cfg.clone()).unwrap().with_oauth2_prompt(prompt);

    // Concurrent statements, one login.
    let runs = futures::future::join_all((0..3).map(|i| {
        let c = client.clone();
        async move { c.query(&format!("SELECT {i}")).await }
    }))
    .await;
    for r in runs {
        r.expect("the statement runs after the login");
    }
    assert_eq!(
        counters().await["logins"],
        1,
        "one login for concurrent requests"
    );
    let first = home.cached_token("carol").expect("cached");
    assert!(matches!(
        events.lock().unwrap().as_slice(),
        [LoginEvent::Open { .. }, LoginEvent::Done { .. }]
    ));

    // A non-interactive client (floe check) reuses the cached token.
    let plain = Client::new(cfg.clone()).unwrap();
    plain
        .query("SELECT 1")
        .await
        .expect("the cached token works");
    assert_eq!(counters().await["logins"], 1);

    // Revoked on the server: the interactive client drops it and logs in again.
    control(json!({"revoke": true})).await;
    let fresh_client = Client::new(cfg.clone())
        .unwrap()
        .with_oauth2_prompt(Arc::new({
            let rt = tokio::runtime::Handle::current();
            move |e: &LoginEvent| {
                if let LoginEvent::Open { url, .. } = e {
                    let url = url.to_string();
                    rt.spawn(async move { browse(&url).await });
                }
            }
        }));
    fresh_client
        .query("SELECT 2")
        .await
        .expect("re-acquired after the refusal");
    let c = counters().await;
    assert_eq!(c["logins"], 2, "{c}");
    assert!(c["rejected"].as_u64().unwrap() >= 1, "{c}");
    let second = home.cached_token("carol").expect("cached again");
    assert_ne!(first, second);

    // The non-interactive client's own copy is now refused: an error to log in, no wait.
    let e = plain.query("SELECT 3").await.unwrap_err().to_string();
    assert!(
        e.contains("refused the cached token") && e.contains("run floe login"),
        "{e}"
    );
    assert!(!e.contains(&first) && !e.contains(&second));
    control(json!({"reset": true})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_server_off_the_coordinators_origin_over_http_is_refused() {
    let Some(alias) = lab().stand_in()["alias_host"].as_str() else {
        return; // no second loopback address to point at
    };
    let _one = LAB_OAUTH2.lock().await;
    control(json!({"reset": true})).await;
    control(json!({"challenge_host": alias})).await;
    let mut home = Home::new("origin");
    let (code, out, err, url) = home.login("").await;
    control(json!({"reset": true})).await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(url.is_none(), "no URL is shown for a refused flow: {err}");
    assert!(
        err.contains("refusing the OAuth2 token server")
            && err.contains("neither on the coordinator's origin"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_nobody_completes_ends_at_its_timeout() {
    let _one = LAB_OAUTH2.lock().await;
    control(json!({"reset": true})).await;
    let home = Home::new("timeout");
    let cfg = home.dir.join("config.toml");
    std::fs::write(&cfg, "[trino]\noauth2_login_timeout = \"2s\"\n").unwrap();
    let started = std::time::Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        home.command(&["login", "--config", cfg.to_str().unwrap()])
            .output(),
    )
    .await
    .expect("the login gives up")
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("Waiting up to 2s") && err.contains("not completed within 2s"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let c = counters().await;
    assert_eq!(
        (c["logins"].as_u64(), c["pending"].as_u64()),
        (Some(0), Some(1)),
        "{c}"
    );
    assert!(!home.cache_file("carol").exists());
    control(json!({"reset": true})).await;
}
