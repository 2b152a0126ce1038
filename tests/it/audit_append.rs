//! Two floe processes appending to one audit log never interleave a line: each record is
//! one write(2) on an O_APPEND file. The test binary runs itself twice as the writers.

use floe::mutation::audit::{Action, AuditLog, Outcome, Record};

const WRITER: &str = "FLOE_TEST_AUDIT_WRITER";
const RECORDS: usize = 400;

/// A writer when run with `FLOE_TEST_AUDIT_WRITER=<path>:<name>`; nothing otherwise.
#[test]
fn writer() {
    let Ok(spec) = std::env::var(WRITER) else {
        return;
    };
    let (path, name) = spec.rsplit_once(':').unwrap();
    let log = AuditLog::new(path);
    // Records of a few kilobytes: long enough to be split by a loop of partial writes.
    let statement = format!(
        "ALTER TABLE \"{name}\" EXECUTE optimize -- {}",
        "x".repeat(5000)
    );
    for i in 0..RECORDS {
        let mut r = Record::now("lab", "floe", "http://h/", Action::Optimize, &statement);
        r.outcome = if i % 2 == 0 {
            Outcome::Started
        } else {
            Outcome::Succeeded
        };
        r.query_id = Some(format!("{name}-{i}"));
        log.append(&r).unwrap();
    }
}

#[test]
fn two_processes_appending_at_once_leave_only_whole_records() {
    if std::env::var(WRITER).is_ok() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("floe-audit-procs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("audit.jsonl");
    let me = std::env::current_exe().unwrap();
    let children: Vec<_> = ["a", "b"]
        .iter()
        .map(|name| {
            std::process::Command::new(&me)
                .args(["--exact", "audit_append::writer", "--test-threads", "1"])
                .env(WRITER, format!("{}:{name}", path.display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2 * RECORDS);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a line that is not one record ({e}): {line:.200}"));
        assert!(v["statement"].as_str().unwrap().len() > 5000);
    }
    let log = AuditLog::new(&path);
    assert_eq!(log.read_all().len(), 2 * RECORDS);
    assert_eq!(log.read().len(), RECORDS, "started records are apart");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
