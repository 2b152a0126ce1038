//! The operator's extras of the binary: completion scripts (parsed by each shell that is
//! installed), the man page (rendered by `man -l` where it exists), the completion helper.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn floe(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("USER", "floe")
        .output()
        .expect("run floe")
}

fn home(name: &str) -> PathBuf {
    let h = std::env::temp_dir().join(format!("floe-extras-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    h
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

/// The installed program of that name, if any.
fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// `shell -n` over the script (syntax only), from stdin.
fn parses(shell: &Path, script: &str) -> Output {
    let mut child = Command::new(shell)
        .arg("-n")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the shell");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn every_shell_gets_a_script_each_installed_shell_parses() {
    let h = home("shells");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&floe(&["completions", shell], &h));
        assert!(script.contains("floe"), "{shell}: {script}");
        for sub in ["check", "maintain", "doctor", "completions"] {
            assert!(script.contains(sub), "{shell} completes {sub}");
        }
        let program = if shell == "powershell" { "pwsh" } else { shell };
        if let Some(sh) = which(program).filter(|_| shell != "powershell" && shell != "elvish") {
            let out = parses(&sh, &script);
            assert!(
                out.status.success(),
                "{shell} -n: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    assert!(which("bash").is_some(), "bash is needed for this test");
}

#[test]
fn profiles_complete_from_the_config_file() {
    let h = home("profiles");
    let config = h.join("floe.toml");
    std::fs::write(
        &config,
        "[profiles.prod]\nreadonly = true\n[profiles.staging.trino]\nurl = \"http://x:8080\"\n",
    )
    .unwrap();
    let listed = stdout(&floe(
        &[
            "--config",
            config.to_str().unwrap(),
            "__complete",
            "profiles",
        ],
        &h,
    ));
    assert_eq!(listed, "prod\nstaging\n");
    // No config file: nothing, and no error.
    let none = floe(&["__complete", "profiles"], &h);
    assert_eq!(stdout(&none), "");

    // The bash script asks floe for them after --profile (honouring --config).
    let script = h.join("floe.bash");
    std::fs::write(&script, stdout(&floe(&["completions", "bash"], &h))).unwrap();
    let (completed, stderr) = common::bash_completes(
        &script,
        &format!(
            "{} --config {} --profile st",
            env!("CARGO_BIN_EXE_floe"),
            config.display()
        ),
        4,
    );
    assert_eq!(completed, "staging\n", "{stderr}");
    // Elsewhere the generated completion runs: subcommands after `floe`.
    let probe = format!(
        "source {script}\nCOMP_WORDS=(floe mai)\nCOMP_CWORD=1\n_floe_profiles floe mai floe\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script = script.display(),
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "maintain\n");

    let zsh = stdout(&floe(&["completions", "zsh"], &h));
    assert!(zsh.contains(":NAME:_floe_profiles'"), "{zsh}");
    assert!(zsh.contains("_floe_profiles() {"));
    let fish = stdout(&floe(&["completions", "fish"], &h));
    assert!(fish.contains("-l profile -x -a '(floe __complete profiles"));
}

#[test]
fn the_man_page_names_every_subcommand_and_renders() {
    let h = home("man");
    let roff = stdout(&floe(&["man"], &h));
    assert!(roff.contains(".TH FLOE 1"), "{roff}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH COMMANDS"] {
        assert!(roff.contains(section), "{section}");
    }
    for sub in [
        "floe check",
        "floe maintain",
        "floe maintain optimize",
        "floe maintain expire\\-snapshots",
        "floe config",
        "floe config schema",
        "floe doctor",
        "floe completions",
        "floe man",
    ] {
        assert!(roff.contains(&format!(".SS \"{sub}\"")), "{sub}");
    }
    assert!(!roff.contains("__complete"), "the helper stays hidden");
    if let Some(man) = which("man") {
        let page = h.join("floe.1");
        std::fs::write(&page, &roff).unwrap();
        let out = Command::new(man)
            .arg("-l")
            .arg(&page)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("NAME"), "{text}");
        assert!(text.contains("floe maintain optimize"), "{text}");
        assert!(text.contains("--insecure-skip-verify"), "{text}");
    }
}

// ---- the config file's JSON Schema ----

use serde_json::Value;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn schema() -> Value {
    serde_json::from_str(&floe::config::json_schema()).expect("the schema is JSON")
}

/// Follow a `$ref` into `$defs`, and name the definition it reached.
fn resolve<'a>(root: &'a Value, node: &'a Value) -> (&'a Value, Option<String>) {
    match node.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r
                .strip_prefix("#/$defs/")
                .unwrap_or_else(|| panic!("unsupported $ref {r}"));
            let def = root["$defs"]
                .get(name)
                .unwrap_or_else(|| panic!("no definition {name}"));
            (def, Some(name.to_string()))
        }
        None => (node, None),
    }
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "null" => v.is_null(),
        other => panic!("unsupported type {other}"),
    }
}

/// A validator for the part of JSON Schema the generated schema uses; any other keyword
/// fails the test, so the schema cannot grow past what is checked here unnoticed.
fn validate(root: &Value, node: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let (node, _) = resolve(root, node);
    let obj = node.as_object().expect("a schema is an object");
    for key in obj.keys() {
        assert!(
            [
                "$schema",
                "$defs",
                "$ref",
                "title",
                "description",
                "format",
                "type",
                "properties",
                "additionalProperties",
                "required",
                "enum",
                "items",
                "minimum",
            ]
            .contains(&key.as_str()),
            "the validator does not know the keyword {key} (at {at})"
        );
    }
    if let Some(t) = obj.get("type") {
        let ok = match t {
            Value::String(t) => type_matches(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_matches(t.as_str().unwrap(), v)),
            _ => panic!("bad type at {at}"),
        };
        if !ok {
            errors.push(format!("{at}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(Value::Array(allowed)) = obj.get("enum")
        && !allowed.contains(v)
    {
        errors.push(format!("{at}: {v} is not one of {allowed:?}"));
    }
    if let (Some(min), Some(n)) = (obj.get("minimum").and_then(Value::as_f64), v.as_f64())
        && n < min
    {
        errors.push(format!("{at}: {n} is below {min}"));
    }
    if let (Some(items), Value::Array(values)) = (obj.get("items"), v) {
        for (i, item) in values.iter().enumerate() {
            validate(root, items, item, &format!("{at}[{i}]"), errors);
        }
    }
    if let Value::Object(map) = v {
        let props = obj.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = obj.get("required") {
            for r in required {
                if !map.contains_key(r.as_str().unwrap()) {
                    errors.push(format!("{at}: missing required key {r}"));
                }
            }
        }
        for (k, val) in map {
            let path = format!("{at}.{k}");
            match (
                props.and_then(|p| p.get(k)),
                obj.get("additionalProperties"),
            ) {
                (Some(sub), _) => validate(root, sub, val, &path, errors),
                (None, Some(Value::Bool(false))) => errors.push(format!("{path}: unknown key")),
                (None, Some(sub)) if sub.is_object() => validate(root, sub, val, &path, errors),
                (None, _) => {}
            }
        }
    }
}

fn errors_of(config: &str) -> Vec<String> {
    let root = schema();
    let value: Value = toml::from_str(config).expect("TOML");
    let mut errors = Vec::new();
    validate(&root, &root, &value, "$", &mut errors);
    errors
}

#[test]
fn the_shipped_schema_is_the_generated_one() {
    let shipped = std::fs::read_to_string(repo("assets/config.schema.json")).unwrap();
    assert!(
        shipped == floe::config::json_schema(),
        "assets/config.schema.json is stale: `floe config schema > assets/config.schema.json`"
    );
    let h = home("schema");
    assert_eq!(stdout(&floe(&["config", "schema"], &h)), shipped);
    let example = std::fs::read_to_string(repo("config.example.toml")).unwrap();
    assert_eq!(
        example.lines().next(),
        Some("#:schema ./assets/config.schema.json"),
        "editors find the schema through the first line"
    );
}

#[test]
fn the_example_validates_and_the_validator_rejects() {
    let example = std::fs::read_to_string(repo("config.example.toml")).unwrap();
    assert_eq!(errors_of(&example), Vec::<String>::new());
    // The validator does reject what floe rejects.
    let bad = errors_of(
        "mystery = 1\n[trino]\nauth = \"kerberos\"\nurl = 8080\n[[maintenance]]\ntable = \"t\"\n[profiles.x]\nrefresh = 5\n[keys]\nquit = 3\n",
    );
    for expected in [
        "$.mystery: unknown key",
        "$.trino.auth: \"kerberos\" is not one of",
        "$.trino.url: 8080 is not of type",
        "$.maintenance[0]: missing required key \"dag_id\"",
        "$.profiles.x.refresh: 5 is not of type",
        "$.keys.quit: 3 is not of type",
    ] {
        assert!(
            bad.iter().any(|e| e.starts_with(expected)),
            "{expected} in {bad:#?}"
        );
    }
}

/// Every key the schema knows is shown in the example (set, or commented out with its
/// value), and every key the example shows — commented ones included — is in the schema.
#[test]
fn the_example_shows_every_key_of_the_schema() {
    let root = schema();
    let example = std::fs::read_to_string(repo("config.example.toml")).unwrap();
    // definition name (or "root") -> keys the example shows for it
    let mut shown: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    let mut section: Vec<String> = Vec::new();
    let mut unknown = Vec::new();
    for line in example.lines() {
        let t = line.trim();
        let path: Vec<String> = if let Some(h) = t.strip_prefix('[') {
            // A section header shows each of its names as a key of its parent.
            let h = h.trim_start_matches('[').trim_end_matches(']');
            section = h.split('.').map(|s| s.trim().to_string()).collect();
            section.clone()
        } else {
            let body = t.strip_prefix('#').map(str::trim_start).unwrap_or(t);
            let Some((key, _)) = body.split_once('=') else {
                continue;
            };
            let key = key.trim();
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                continue;
            }
            section.iter().cloned().chain([key.to_string()]).collect()
        };
        // Walk the schema down the path, noting each name under the definition holding it.
        let mut node = &root;
        let mut def = "root".to_string();
        for (i, seg) in path.iter().enumerate() {
            let (n, _) = resolve(&root, node);
            let next = match n.get("properties").and_then(Value::as_object) {
                Some(props) => {
                    shown.entry(def.clone()).or_default().insert(seg.clone());
                    props.get(seg)
                }
                None => n.get("additionalProperties").filter(|a| a.is_object()),
            };
            let Some(next) = next else {
                unknown.push(path[..=i].join("."));
                break;
            };
            let (n, name) = resolve(&root, next);
            let (n, name) = match n.get("items") {
                Some(items) if n.get("type") == Some(&Value::from("array")) => {
                    resolve(&root, items)
                }
                _ => (n, name),
            };
            node = n;
            if let Some(name) = name {
                def = name;
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "keys of the example unknown to the schema: {unknown:?}"
    );
    let mut missing = Vec::new();
    let defs = root["$defs"].as_object().unwrap();
    let objects = std::iter::once(("root".to_string(), &root))
        .chain(defs.iter().map(|(k, v)| (k.clone(), v)));
    for (name, def) in objects {
        let Some(props) = def.get("properties").and_then(Value::as_object) else {
            continue;
        };
        for key in props.keys() {
            if !shown.get(&name).is_some_and(|s| s.contains(key)) {
                missing.push(format!("{name}.{key}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "keys of the schema config.example.toml does not show: {missing:?}"
    );
}

/// `floe 0.1.0 (3532db1 2026-12-03, x86_64-unknown-linux-gnu, glibc 2.36)`.
#[test]
fn the_version_names_the_commit_the_build_date_the_target_and_the_glibc() {
    let h = home("version");
    let v = stdout(&floe(&["--version"], &h));
    let rest = v
        .trim_end()
        .strip_prefix(&format!("floe {} (", env!("CARGO_PKG_VERSION")))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{v}"));
    let parts: Vec<&str> = rest.split(", ").collect();
    let [build, target, glibc] = parts[..] else {
        panic!("not (commit date, target, glibc): {v}");
    };
    let (commit, date) = build.split_once(' ').unwrap_or_else(|| panic!("{v}"));
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{v}"
    );
    let d: Vec<&str> = date.split('-').collect();
    assert!(
        d.len() == 3 && d[0].len() == 4 && d.iter().all(|p| p.parse::<u32>().is_ok()),
        "{v}"
    );
    assert!(target.contains("-linux-"), "{v}");
    let glibc = glibc
        .strip_prefix("glibc ")
        .unwrap_or_else(|| panic!("{v}"));
    if target.ends_with("-gnu") {
        // This test binary is built natively: the glibc of the machine that built it,
        // which is the one running it here.
        let host = std::process::Command::new("getconf")
            .arg("GNU_LIBC_VERSION")
            .output()
            .unwrap();
        let host = String::from_utf8_lossy(&host.stdout);
        assert_eq!(Some(glibc), host.trim().strip_prefix("glibc "), "{v}");
    } else {
        assert_eq!(glibc, "none", "{v}");
    }
}

#[test]
fn maintain_completes_the_tables_the_config_names() {
    let h = home("tables");
    let config = h.join("floe.toml");
    std::fs::write(
        &config,
        "[trino]\ntables = [\"zoning.*\", \"finance.ledger\"]\n[[maintenance]]\ntable = \"iceberg.zoning.documents\"\ndag_id = \"compact_documents\"\n[profiles.prod.trino]\ntables = [\"audit.events\"]\n",
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let listed = stdout(&floe(&["--config", cfg, "__complete", "tables"], &h));
    assert_eq!(listed, "audit.events\nfinance.ledger\nzoning.documents\n");
    let script = h.join("floe.bash");
    std::fs::write(&script, stdout(&floe(&["completions", "bash"], &h))).unwrap();
    let probe = format!(
        "source {script}\nCOMP_WORDS=({bin} --config {cfg} maintain optimize zon)\nCOMP_CWORD=5\n_floe_profiles\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script = script.display(),
        bin = env!("CARGO_BIN_EXE_floe"),
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "zoning.documents\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
