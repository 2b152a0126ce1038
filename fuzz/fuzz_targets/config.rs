//! The config file (TOML, every section, profiles, `[keys]` bindings) loaded from text as
//! a file would be, and key specs (`ctrl-s`, `<C-d>`, `shift-tab`, `F5`) one per line.
//! Files naming a `*_command` are skipped: loading runs that command.
#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use floe::config::keys::{Key, bind};
use floe::config::{Dirs, KeySpec, Overrides, load_from_str};
use libfuzzer_sys::fuzz_target;

fn names_a_command(v: &toml::Value) -> bool {
    match v {
        toml::Value::Table(t) => t
            .iter()
            .any(|(k, v)| k.contains("command") || names_a_command(v)),
        toml::Value::Array(a) => a.iter().any(names_a_command),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    for line in &lines {
        if let Ok(k) = Key::parse(line) {
            let _ = k.to_string();
        }
    }
    let mut overrides = BTreeMap::new();
    overrides.insert("quit".to_string(), KeySpec::Many(lines));
    let _ = bind(&overrides);

    let Ok(doc) = text.parse::<toml::Table>() else {
        return;
    };
    if names_a_command(&toml::Value::Table(doc)) {
        return;
    }
    let dirs = Dirs {
        config: PathBuf::from("/nonexistent/floe-fuzz/config"),
        state: PathBuf::from("/nonexistent/floe-fuzz/state"),
        data: PathBuf::from("/nonexistent/floe-fuzz/data"),
        cache: PathBuf::from("/nonexistent/floe-fuzz/cache"),
    };
    let env = |_: &str| None;
    match load_from_str(
        text,
        Path::new("/nonexistent/floe-fuzz/config.toml"),
        &Overrides::default(),
        &env,
        &dirs,
    ) {
        Ok(settings) => {
            let _ = format!("{settings:?}");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
