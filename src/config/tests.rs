use super::*;
use crate::sql::split_table_name;
use secrecy::ExposeSecret;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

struct Fixture {
    dir: PathBuf,
    env: HashMap<String, String>,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let dir = std::env::temp_dir().join(format!("floe-config-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("xdg/floe")).unwrap();
        let mut env = HashMap::new();
        env.insert("HOME".into(), dir.display().to_string());
        env.insert(
            "XDG_CONFIG_HOME".into(),
            dir.join("xdg").display().to_string(),
        );
        env.insert("USER".into(), "operator".into());
        Fixture { dir, env }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn load(&self, over: &Overrides) -> Result<Settings, ConfigError> {
        let env = |k: &str| self.env.get(k).cloned();
        let dirs = Dirs::from_env(&env);
        load_with(over, &env, &dirs)
    }
}

fn flags(trino: &str) -> Overrides {
    Overrides {
        trino: Some(trino.into()),
        ..Default::default()
    }
}

#[test]
fn flags_alone_are_enough() {
    let f = Fixture::new("flags");
    let s = f.load(&flags("http://127.0.0.1:8080")).unwrap();
    assert_eq!(s.trino.url.as_str(), "http://127.0.0.1:8080/");
    assert_eq!(s.trino.user, "operator");
    assert_eq!(s.trino.catalog, "iceberg");
    assert_eq!(
        (s.trino.more_catalogs.clone(), s.trino.catalogs_by_default),
        (vec!["*".to_string()], true),
        "no catalog named: every one of the cluster's, iceberg first"
    );
    assert_eq!(s.refresh, Duration::from_secs(60));
    assert_eq!(s.max_concurrent_queries, 4);
    assert!(!s.readonly);
    assert!(s.airflow.is_none());
    assert!(matches!(s.trino.auth, Auth::None));
    assert_eq!(s.health.target_file_size, 128 << 20);
    assert_eq!(s.file, None);
}

#[test]
fn the_refresh_policy_has_defaults_bounds_and_a_cache_file() {
    let f = Fixture::new("policy");
    let s = f.load(&flags("http://127.0.0.1:8080")).unwrap();
    assert_eq!(
        (s.probe_batch, s.full_refresh_every, s.coordinator_budget),
        (
            10,
            Some(Duration::from_secs(3600)),
            Some(Duration::from_secs(2))
        )
    );
    assert_eq!(s.stats_cache, f.dir.join(".cache/floe/stats.json"));
    let ok = f.write(
        "ok.toml",
        "probe_batch = 10\nfull_refresh_every = \"15m\"\n",
    );
    let s = f
        .load(&Overrides {
            config: Some(ok),
            ..flags("http://127.0.0.1:8080")
        })
        .unwrap();
    assert_eq!(
        (s.probe_batch, s.full_refresh_every),
        (10, Some(Duration::from_secs(900)))
    );
    let never = f.write("never.toml", "full_refresh_every = \"0s\"\n");
    let s = f
        .load(&Overrides {
            config: Some(never),
            ..flags("http://127.0.0.1:8080")
        })
        .unwrap();
    assert_eq!(s.full_refresh_every, None);
    for (name, text, key) in [
        ("b0.toml", "probe_batch = 0\n", "probe_batch"),
        ("b1.toml", "probe_batch = 501\n", "probe_batch"),
        (
            "f0.toml",
            "full_refresh_every = \"30s\"\n",
            "full_refresh_every",
        ),
        ("f1.toml", "full_refresh_every = 10\n", "full_refresh_every"),
    ] {
        let p = f.write(name, text);
        let e = f
            .load(&Overrides {
                config: Some(p),
                ..flags("http://127.0.0.1:8080")
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{e}");
    }
}

#[test]
fn the_confirm_dwell_has_a_default_and_a_bound() {
    let f = Fixture::new("dwell");
    let s = f.load(&flags("http://127.0.0.1:8080")).unwrap();
    assert_eq!(s.confirm_dwell, Duration::from_millis(300));
    let zero = f.write("zero.toml", "confirm_dwell = \"0s\"\n");
    let s = f
        .load(&Overrides {
            config: Some(zero),
            ..flags("http://127.0.0.1:8080")
        })
        .unwrap();
    assert_eq!(s.confirm_dwell, Duration::ZERO);
    let long = f.write("long.toml", "confirm_dwell = \"1m\"\n");
    let e = f
        .load(&Overrides {
            config: Some(long),
            ..flags("http://127.0.0.1:8080")
        })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("confirm_dwell") && e.contains("long.toml"),
        "{e}"
    );
}

#[test]
fn missing_url_says_how_to_give_one() {
    let f = Fixture::new("nourl");
    let e = f.load(&Overrides::default()).unwrap_err().to_string();
    assert!(
        e.contains("--trino") && e.contains("FLOE_TRINO_URL") && e.contains("config.toml"),
        "{e}"
    );
}

#[test]
fn layering_defaults_file_env_flags() {
    let mut f = Fixture::new("layers");
    f.write(
        "xdg/floe/config.toml",
        r#"
refresh = "30s"
[trino]
url = "http://file:8080"
user = "from-file"
catalog = "lake"
schemas = ["a", "b"]
"#,
    );
    let s = f.load(&Overrides::default()).unwrap();
    assert_eq!(s.trino.url.host_str(), Some("file"));
    assert_eq!(s.trino.user, "from-file");
    assert_eq!(s.trino.schemas, vec!["a", "b"]);
    assert_eq!(s.refresh, Duration::from_secs(30));

    f.env
        .insert("FLOE_TRINO_URL".into(), "http://env:8080".into());
    f.env.insert("FLOE_TRINO_USER".into(), "from-env".into());
    f.env.insert("FLOE_REFRESH".into(), "45s".into());
    let s = f.load(&Overrides::default()).unwrap();
    assert_eq!(s.trino.url.host_str(), Some("env"));
    assert_eq!(s.trino.user, "from-env");
    assert_eq!(s.refresh, Duration::from_secs(45));

    let over = Overrides {
        trino: Some("http://flag:8080".into()),
        user: Some("from-flag".into()),
        schemas: vec!["z".into()],
        refresh: Some(Dur::parse("10s").unwrap()),
        ..Default::default()
    };
    let s = f.load(&over).unwrap();
    assert_eq!(s.trino.url.host_str(), Some("flag"));
    assert_eq!(s.trino.user, "from-flag");
    assert_eq!(s.trino.schemas, vec!["z"]);
    assert_eq!(s.refresh, Duration::from_secs(10));
    assert_eq!(
        s.trino.catalog, "lake",
        "file value survives where nothing overrides it"
    );
    assert!(
        s.trino.more_catalogs.is_empty() && !s.trino.catalogs_by_default,
        "a catalog named is read alone"
    );
}

#[test]
fn unknown_keys_name_the_key_and_the_file() {
    let f = Fixture::new("unknown");
    let p = f.write("c.toml", "[trino]\nurl = \"http://h:1\"\nuserr = \"x\"\n");
    let e = f
        .load(&Overrides {
            config: Some(p.clone()),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("userr"), "{e}");
    assert!(e.contains(&p.display().to_string()), "{e}");

    let p = f.write("d.toml", "refersh = \"30s\"\n");
    let e = f
        .load(&Overrides {
            config: Some(p),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("refersh"), "{e}");

    let p = f.write("e.toml", "[profiles.prod.trino]\nurll = \"x\"\n");
    let e = f
        .load(&Overrides {
            config: Some(p),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("urll"), "{e}");
}

#[test]
fn explicit_config_must_exist() {
    let mut f = Fixture::new("explicit");
    let e = f
        .load(&Overrides {
            config: Some(f.dir.join("nope.toml")),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("nope.toml") && e.contains("does not exist"),
        "{e}"
    );
    f.env.insert(
        "FLOE_CONFIG".into(),
        f.dir.join("gone.toml").display().to_string(),
    );
    let e = f.load(&flags("http://h:1")).unwrap_err().to_string();
    assert!(e.contains("gone.toml"), "{e}");
}

#[test]
fn profiles_select_and_merge() {
    let mut f = Fixture::new("profiles");
    let p = f.write(
        "c.toml",
        r#"
default_profile = "staging"
readonly = false
[trino]
catalog = "iceberg"
user = "shared"
[profiles.staging.trino]
url = "http://staging:8080"
[profiles.prod]
readonly = true
[profiles.prod.trino]
url = "trino://oncall@trino.prod:8443/lake?protocol=https"
[profiles.prod.airflow]
url = "https://airflow.prod"
user = "floe"
"#,
    );
    let base = Overrides {
        config: Some(p.clone()),
        ..Default::default()
    };
    let s = f.load(&base).unwrap();
    assert_eq!(s.profile, "staging");
    assert_eq!(s.trino.url.host_str(), Some("staging"));
    assert_eq!(s.trino.user, "shared");
    assert!(!s.readonly);
    assert_eq!(s.profiles, vec!["prod", "staging"]);

    let s = f
        .load(&Overrides {
            profile: Some("prod".into()),
            ..base.clone()
        })
        .unwrap();
    assert_eq!(s.profile, "prod");
    assert_eq!(s.trino.url.as_str(), "https://trino.prod:8443/");
    assert_eq!(
        s.trino.user, "oncall",
        "the URI's user wins over the shared section"
    );
    assert_eq!(s.trino.catalog, "lake");
    assert!(s.readonly);
    let a = s.airflow.unwrap();
    assert_eq!(a.url.as_str(), "https://airflow.prod/");
    assert_eq!(a.dag_tags, vec!["maintenance"]);

    f.env.insert("FLOE_PROFILE".into(), "prod".into());
    assert_eq!(f.load(&base).unwrap().profile, "prod");

    let e = f
        .load(&Overrides {
            profile: Some("qa".into()),
            ..base
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"qa\"") && e.contains("prod, staging"), "{e}");
}

#[test]
fn readonly_flag_wins() {
    let f = Fixture::new("ro");
    let p = f.write(
        "c.toml",
        "readonly = false\n[trino]\nurl = \"http://h:1\"\n",
    );
    let s = f
        .load(&Overrides {
            config: Some(p),
            readonly: true,
            ..Default::default()
        })
        .unwrap();
    assert!(s.readonly);
}

#[test]
fn secrets_from_env_and_command_never_in_debug() {
    let mut f = Fixture::new("secrets");
    f.env.insert("FLOE_TRINO_PASSWORD".into(), "s3cret".into());
    let s = f.load(&flags("https://h:8443")).unwrap();
    match &s.trino.auth {
        Auth::Basic { password } => assert_eq!(password.expose_secret(), "s3cret"),
        other => panic!("expected basic auth, got {other:?}"),
    }
    assert!(!format!("{s:?}").contains("s3cret"));

    let f = Fixture::new("secrets2");
    let p = f.write(
        "c.toml",
        "[trino]\nurl = \"https://h:8443\"\npassword_command = \"printf 'from-cmd\\n'\"\n",
    );
    let s = f
        .load(&Overrides {
            config: Some(p),
            ..Default::default()
        })
        .unwrap();
    match &s.trino.auth {
        Auth::Basic { password } => assert_eq!(password.expose_secret(), "from-cmd"),
        other => panic!("expected basic auth, got {other:?}"),
    }

    let p = f.write(
        "d.toml",
        "[trino]\nurl = \"https://h:8443\"\npassword_command = \"exit 3\"\n",
    );
    let e = f
        .load(&Overrides {
            config: Some(p.clone()),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("trino.password_command") && e.contains(&p.display().to_string()),
        "{e}"
    );

    let p = f.write(
        "e.toml",
        "[trino]\nurl = \"https://h:8443\"\npassword_env = \"NOT_SET_ANYWHERE\"\n",
    );
    let e = f
        .load(&Overrides {
            config: Some(p),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("NOT_SET_ANYWHERE") && e.contains("trino.password_env"),
        "{e}"
    );
}

#[test]
fn password_over_plain_http_is_refused() {
    let mut f = Fixture::new("plainpw");
    f.env.insert("FLOE_TRINO_PASSWORD".into(), "pw".into());
    let e = f.load(&flags("http://h:8080")).unwrap_err().to_string();
    assert!(e.contains("HTTPS"), "{e}");
}

#[test]
fn bearer_token() {
    let mut f = Fixture::new("bearer");
    f.env.insert("FLOE_TRINO_TOKEN".into(), "eyJ.x.y".into());
    let s = f.load(&flags("https://h:8443")).unwrap();
    assert!(matches!(s.trino.auth, Auth::Bearer { .. }));
}

#[test]
fn a_token_with_a_trailing_newline_is_trimmed() {
    let mut f = Fixture::new("tokentrim");
    f.env.insert("FLOE_TRINO_TOKEN".into(), "eyJ.x.y\n".into());
    let s = f.load(&flags("https://h:8443")).unwrap();
    let Auth::Bearer { token } = &s.trino.auth else {
        panic!("bearer expected")
    };
    assert_eq!(token.expose_secret(), "eyJ.x.y");
    // A password keeps its inner and leading spaces, but not the line ending.
    let mut f = Fixture::new("pwtrim");
    f.env
        .insert("FLOE_TRINO_PASSWORD".into(), " p w\r\n".into());
    let s = f.load(&flags("https://h:8443")).unwrap();
    let Auth::Basic { password } = &s.trino.auth else {
        panic!("basic expected")
    };
    assert_eq!(password.expose_secret(), " p w");
}

#[test]
fn tokens_and_airflow_passwords_over_plain_http_are_refused_except_to_loopback() {
    let mut f = Fixture::new("plaintoken");
    f.env.insert("FLOE_TRINO_TOKEN".into(), "eyJ.x.y".into());
    let e = f
        .load(&flags("http://trino.internal:8080"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("trino.url") && e.contains("plain HTTP"), "{e}");
    assert!(f.load(&flags("http://127.0.0.1:8080")).is_ok());
    assert!(f.load(&flags("http://localhost:8080")).is_ok());

    let mut f = Fixture::new("plainairflow");
    f.env.insert("FLOE_AIRFLOW_PASSWORD".into(), "pw".into());
    let with_airflow = |url: &str| Overrides {
        airflow: Some(url.into()),
        airflow_user: Some("admin".into()),
        ..flags("http://127.0.0.1:8080")
    };
    let e = f
        .load(&with_airflow("http://airflow.internal:8080"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("airflow.url") && e.contains("Airflow password") && e.contains("plain HTTP"),
        "{e}"
    );
    assert!(f.load(&with_airflow("http://127.0.0.1:28080")).is_ok());
    assert!(f.load(&with_airflow("https://airflow.internal")).is_ok());
}

#[test]
fn floe_config_shows_that_a_password_is_set_not_its_length() {
    let mut f = Fixture::new("describe");
    f.env
        .insert("FLOE_TRINO_PASSWORD".into(), "hunter22".into());
    let s = f.load(&flags("https://h:8443")).unwrap();
    let text = crate::run::describe(&s);
    assert!(text.contains("basic (password set)"), "{text}");
    assert!(
        !text.contains("8 chars") && !text.contains("hunter22"),
        "{text}"
    );
}

#[test]
fn verify_false_in_a_pasted_uri_is_a_visible_warning() {
    let f = Fixture::new("verifyfalse");
    let s = f
        .load(&flags(
            "trino://oncall@h:8443/iceberg?protocol=https&verify=false",
        ))
        .unwrap();
    let w = s.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("verification is OFF") && w[0].contains("https://h:8443/"));
    assert!(
        f.load(&flags("https://h:8443"))
            .unwrap()
            .warnings()
            .is_empty()
    );
}

#[test]
fn refresh_has_a_maximum() {
    let f = Fixture::new("refreshmax");
    let e = f
        .load(&Overrides {
            refresh: Some(Dur::parse("300000y").unwrap()),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("maximum of 1d"), "{e}");
}

#[test]
fn refresh_minimum_and_bad_values() {
    let f = Fixture::new("refresh");
    let e = f
        .load(&Overrides {
            refresh: Some(Dur::parse("2s").unwrap()),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("minimum of 5s"), "{e}");
    let p = f.write("c.toml", "refresh = \"soonish\"\n");
    let e = f
        .load(&Overrides {
            config: Some(p),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("soonish"), "{e}");
    let p = f.write("d.toml", "[health]\nsmall_file_ratio = 1.5\n");
    let e = f
        .load(&Overrides {
            config: Some(p),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("small_file_ratio"), "{e}");
    let p = f.write("e.toml", "[health]\ntarget_file_size = \"12 parsecs\"\n");
    let e = f
        .load(&Overrides {
            config: Some(p),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("parsecs"), "{e}");
}

#[test]
fn health_and_maintenance_sections() {
    let f = Fixture::new("health");
    let p = f.write(
        "c.toml",
        r#"
[trino]
url = "http://h:1"
[health]
target_file_size = "256MB"
min_small_files = 20
compaction_warn = "24h"
compaction_critical = "72h"
[[maintenance]]
table = "iceberg.zoning.documents"
dag_id = "compact_documents"
interval = "1d"
"#,
    );
    let s = f
        .load(&Overrides {
            config: Some(p),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(s.health.target_file_size, 256 << 20);
    assert_eq!(s.health.min_small_files, 20);
    assert_eq!(s.health.compaction_critical, Duration::from_secs(72 * 3600));
    assert_eq!(s.maintenance.len(), 1);
    assert_eq!(s.maintenance[0].dag_id, "compact_documents");
    assert_eq!(s.maintenance[0].interval, Some(Duration::from_secs(86_400)));

    let p = f.write(
        "d.toml",
        "[[maintenance]]\ntable = \"documents\"\ndag_id = \"x\"\n",
    );
    let e = f
        .load(&Overrides {
            config: Some(p),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("catalog.schema.table"), "{e}");
}

#[test]
fn bad_key_strings_are_config_errors() {
    let f = Fixture::new("keys");
    let p = f.write("c.toml", "[keys]\nquit = \"ctrl-bogus-key\"\n");
    let e = f
        .load(&Overrides {
            config: Some(p.clone()),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ctrl-bogus-key") && e.contains(&p.display().to_string()),
        "{e}"
    );
    let p = f.write("d.toml", "[keys]\nteleport = \"t\"\n");
    let e = f
        .load(&Overrides {
            config: Some(p),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("teleport"), "{e}");
    let p = f.write(
        "e.toml",
        "[keys]\nquit = [\"q\", \"ctrl-q\"]\nrefresh = \"F5\"\n",
    );
    f.load(&Overrides {
        config: Some(p),
        ..flags("http://h:1")
    })
    .unwrap();
}

#[test]
fn airflow_settings() {
    let mut f = Fixture::new("airflow");
    f.env.insert("FLOE_AIRFLOW_PASSWORD".into(), "pw".into());
    let s = f
        .load(&Overrides {
            airflow: Some("http://127.0.0.1:28080".into()),
            airflow_user: Some("admin".into()),
            ..flags("http://h:1")
        })
        .unwrap();
    let a = s.airflow.unwrap();
    assert_eq!(a.user.as_deref(), Some("admin"));
    assert_eq!(a.password.unwrap().expose_secret(), "pw");
    assert_eq!(a.api, AirflowApi::Auto);
    let e = f
        .load(&Overrides {
            airflow: Some("ftp://x".into()),
            ..flags("http://h:1")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("Airflow URL"), "{e}");
}

#[test]
fn table_names_split_with_quotes() {
    assert_eq!(
        split_table_name("iceberg.zoning.documents"),
        vec!["iceberg", "zoning", "documents"]
    );
    assert_eq!(
        split_table_name(r#"iceberg.finance."ledger ""q3"" it's.odd""#),
        vec!["iceberg", "finance", r#"ledger "q3" it's.odd"#]
    );
}

#[test]
fn example_config_parses_and_documents_every_key() {
    let text = include_str!("../../config.example.toml");
    let parsed: FileConfig = toml::from_str(text).expect("config.example.toml must parse");
    assert!(parsed.profiles.is_some());
    for key in [
        "default_profile",
        "readonly",
        "refresh",
        "max_concurrent_queries",
        "probe_batch",
        "full_refresh_every",
        "query_timeout",
        "audit_log",
        "export_dir",
        "mouse",
        "ascii",
        "confirm_dwell",
        "start_tab",
        "password_env",
        "password_command",
        "token_env",
        "token_command",
        "oauth2",
        "oauth2_login_timeout",
        "oauth2_token_lifetime",
        "--auth",
        "ca_file",
        "insecure_skip_verify",
        "client_tags",
        "dag_tags",
        "dag_ids",
        "test_connections",
        "max_response_size",
        "max_log_size",
        "target_file_size",
        "small_file_ratio",
        "min_small_files",
        "critical_small_files",
        "critical_partition_small_files",
        "compaction_warn",
        "compaction_critical",
        "snapshot_retention",
        "max_snapshots",
        "expirable_snapshots_warn",
        "pinned_files_warn",
        "delete_file_ratio_warn",
        "delete_file_ratio_critical",
        "equality_delete_weight",
        "delete_record_ratio_warn",
        "delete_record_ratio_critical",
        "large_file_ratio",
        "small_manifest_size",
        "max_small_manifests",
        "critical_manifests",
        "max_metadata_files",
        "dag_interval",
        "incremental_over",
        "incremental_share",
        "[[maintenance]]",
        "[keys]",
    ] {
        assert!(
            text.contains(key),
            "config.example.toml does not document {key}"
        );
    }
}

#[test]
fn oauth2_from_the_file_or_the_flag() {
    let f = Fixture::new("oauth2");
    let cfg = f.write(
        "c.toml",
        "[trino]\nurl = \"https://trino.example:8443\"\nauth = \"oauth2\"\noauth2_login_timeout = \"2m\"\noauth2_token_lifetime = \"20m\"\n",
    );
    let s = f
        .load(&Overrides {
            config: Some(cfg),
            ..Default::default()
        })
        .unwrap();
    let Auth::OAuth2(o) = &s.trino.auth else {
        panic!("oauth2 expected, got {:?}", s.trino.auth)
    };
    assert_eq!(o.login_timeout, Duration::from_secs(120));
    assert_eq!(o.token_lifetime, Duration::from_secs(1200));
    assert_eq!(o.cache_dir, f.dir.join(".cache/floe/oauth2"));
    // The flag wins over the file and over a token in the environment; defaults apply.
    let mut f = Fixture::new("oauth2flag");
    f.env.insert("FLOE_TRINO_TOKEN".into(), "eyJ.x.y".into());
    f.env.insert(
        "XDG_CACHE_HOME".into(),
        f.dir.join("cache").display().to_string(),
    );
    let s = f
        .load(&Overrides {
            auth: Some(AuthKind::OAuth2),
            ..flags("http://127.0.0.1:8080")
        })
        .unwrap();
    let Auth::OAuth2(o) = &s.trino.auth else {
        panic!("oauth2 expected")
    };
    assert_eq!(o.cache_dir, f.dir.join("cache/floe/oauth2"));
    assert_eq!(o.login_timeout, DEFAULT_OAUTH2_LOGIN_TIMEOUT);
    assert_eq!(o.token_lifetime, DEFAULT_OAUTH2_TOKEN_LIFETIME);
    // Over plain HTTP only to a loopback address.
    let e = f
        .load(&Overrides {
            auth: Some(AuthKind::OAuth2),
            ..flags("http://trino.internal:8080")
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("plain HTTP") && e.contains("OAuth2"), "{e}");
    assert_eq!(AuthKind::parse("OAuth2"), Ok(AuthKind::OAuth2));
    assert!(
        AuthKind::parse("kerberos")
            .unwrap_err()
            .to_string()
            .contains("oauth2")
    );
}

impl Fixture {
    fn select(&self, over: &Overrides, all: bool) -> Result<Selection, ConfigError> {
        let env = |k: &str| self.env.get(k).cloned();
        let dirs = Dirs::from_env(&env);
        load_selection_with(over, all, &env, &dirs)
    }
}

const FLEET: &str = r#"
readonly = false
[trino]
user = "oncall"
[profiles.prod-eu.trino]
url = "https://trino.eu.internal:8443"
[profiles.prod-us]
readonly = true
[profiles.prod-us.trino]
url = "https://trino.us.internal:8443"
[profiles.staging.trino]
url = "http://trino.staging.internal:8080"
"#;

fn fleet_names(sel: Selection) -> Vec<(String, String, bool)> {
    match sel {
        Selection::Fleet(v) => v
            .into_iter()
            .map(|s| (s.profile, s.trino.url.to_string(), s.readonly))
            .collect(),
        Selection::One(s) => panic!("one profile: {}", s.profile),
    }
}

#[test]
fn all_reads_every_profile_each_with_its_own_server_and_readonly() {
    let f = Fixture::new("fleet-all");
    let over = Overrides {
        config: Some(f.write("c.toml", FLEET)),
        ..Default::default()
    };
    assert_eq!(
        fleet_names(f.select(&over, true).unwrap()),
        vec![
            (
                "prod-eu".into(),
                "https://trino.eu.internal:8443/".into(),
                false
            ),
            (
                "prod-us".into(),
                "https://trino.us.internal:8443/".into(),
                true
            ),
            (
                "staging".into(),
                "http://trino.staging.internal:8080/".into(),
                false
            ),
        ]
    );
    // Without --all: the one default profile.
    let with_default = format!("default_profile = \"staging\"\n{FLEET}");
    let over = Overrides {
        config: Some(f.write("d.toml", &with_default)),
        ..Default::default()
    };
    match f.select(&over, false).unwrap() {
        Selection::One(s) => assert_eq!(s.profile, "staging"),
        Selection::Fleet(_) => panic!("a fleet without --all"),
    }
}

#[test]
fn all_in_the_file_and_groups_select_fleets_and_a_profile_flag_one_cluster() {
    let f = Fixture::new("fleet-file");
    let text = format!("all = true\ngroups = {{ prod = [\"prod-eu\", \"prod-us\"] }}\n{FLEET}");
    let path = f.write("c.toml", &text);
    let over = |profile: Option<&str>| Overrides {
        config: Some(path.clone()),
        profile: profile.map(str::to_string),
        ..Default::default()
    };
    assert_eq!(fleet_names(f.select(&over(None), false).unwrap()).len(), 3);
    let prod = fleet_names(f.select(&over(Some("prod")), false).unwrap());
    assert_eq!(
        prod.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
        ["prod-eu", "prod-us"]
    );
    match f.select(&over(Some("staging")), false).unwrap() {
        Selection::One(s) => assert_eq!(s.profile, "staging"),
        Selection::Fleet(_) => panic!("--profile staging read a fleet"),
    }
    let e = f
        .select(&over(Some("staging")), true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--all reads every profile; --profile \"staging\" names one"),
        "{e}"
    );
}

#[test]
fn a_fleet_refuses_what_would_point_every_profile_at_one_server() {
    let mut f = Fixture::new("fleet-refuse");
    let path = f.write("c.toml", FLEET);
    let over = Overrides {
        config: Some(path.clone()),
        trino: Some("http://127.0.0.1:8080".into()),
        ..Default::default()
    };
    let e = f.select(&over, true).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "--trino names one server, and 3 profiles are read at once (prod-eu, prod-us, staging)"
        ),
        "{e}"
    );
    f.env
        .insert("FLOE_AIRFLOW_URL".into(), "http://airflow:8080".into());
    let over = Overrides {
        config: Some(path),
        ..Default::default()
    };
    let e = f.select(&over, true).unwrap_err().to_string();
    assert!(e.starts_with("FLOE_AIRFLOW_URL names one server"), "{e}");
    // No profiles: nothing to read at once.
    let bare = Overrides {
        config: Some(f.write("bare.toml", "[trino]\nurl = \"http://x:8080\"\n")),
        ..Default::default()
    };
    let e = f.select(&bare, true).unwrap_err().to_string();
    assert!(e.contains("needs profiles ([profiles.NAME])"), "{e}");
    // A group naming a profile that does not exist.
    let bad = Overrides {
        config: Some(f.write(
            "bad.toml",
            &format!("groups = {{ prod = [\"prod-eu\", \"prod-asia\"] }}\n{FLEET}"),
        )),
        ..Default::default()
    };
    let e = f.select(&bad, false).unwrap_err().to_string();
    assert!(
        e.contains("groups.prod in ") && e.contains("profile \"prod-asia\" is not defined"),
        "{e}"
    );
}

/// An error carries what failed and where as data, not only as text: the key, the
/// profile and the file of a value out of its bounds, the variable of a bad flag value.
#[test]
fn errors_name_the_key_and_the_file_as_data() {
    let mut f = Fixture::new("typed");
    let refused = |f: &Fixture, p: &PathBuf| {
        f.load(&Overrides {
            config: Some(p.clone()),
            ..flags("http://127.0.0.1:8080")
        })
        .unwrap_err()
    };
    let p = f.write("c.toml", "probe_batch = 0\n");
    assert_eq!(
        refused(&f, &p),
        ConfigError::OutOfRange {
            key: "probe_batch",
            value: "0".into(),
            file: Some(p.clone()),
            expected: "1 to 500",
        }
    );
    let p = f.write("h.toml", "[health]\nsmall_file_ratio = 2.0\n");
    let e = refused(&f, &p);
    let ConfigError::Threshold { at, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(
        **at,
        At::Profile {
            key: "health.small_file_ratio".into(),
            profile: "default".into(),
            file: Some(p),
        }
    );
    f.env.insert("FLOE_READONLY".into(), "maybe".into());
    let e = f.load(&flags("http://127.0.0.1:8080")).unwrap_err();
    assert_eq!(e.to_string(), "FLOE_READONLY=maybe: expected true or false");
}
