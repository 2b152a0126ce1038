//! The layer order of [`crate::LAYERS`], checked against the sources: every `crate::`
//! path outside comments and test code names a module of the same layer or below.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Test code: a file of tests, or under a folder of them.
fn is_test_file(rel: &Path) -> bool {
    rel.components().any(|c| {
        let c = c.as_os_str().to_string_lossy();
        c == "tests"
            || c == "tests.rs"
            || c == "testing"
            || c == "testing.rs"
            || c.ends_with("_tests.rs")
    }) || rel == Path::new("layers.rs")
}

/// The modules `text` names through `crate::`: `crate::a::…` and each top-level name of
/// `use crate::{a::…, b, …}`.
fn named(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => {
                        out.push(item.trim().split("::").next().unwrap_or("").to_string());
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                item.push(c);
            }
            out.push(item.trim().split("::").next().unwrap_or("").to_string());
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

/// The code of `text` that is not a comment nor a trailing `#[cfg(test)] mod … { … }`.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|n| n.trim_start().starts_with("mod ") && n.trim_end().ends_with('{'))
        {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(l);
        out.push('\n');
    }
    out
}

#[test]
fn every_module_uses_only_its_own_layer_and_those_below() {
    let layer: HashMap<&str, usize> = crate::LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, g)| g.iter().map(move |m| (*m, i)))
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    let mut declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    let mut listed: Vec<&str> = layer.keys().copied().collect();
    declared.sort();
    listed.sort();
    assert_eq!(declared, listed, "every module of lib.rs in one layer");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut upward = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap();
        if is_test_file(rel) {
            continue;
        }
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs");
        let Some(&own) = layer.get(module) else {
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap();
        for name in named(&code_of(&text)) {
            if layer.get(name.as_str()).is_some_and(|&l| l > own) {
                upward.push(format!("{}: {module} uses {name}", rel.display()));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn a_use_group_names_each_of_its_modules() {
    assert_eq!(
        named("use crate::{app::state::State, ui, fmt::{a, b}};\nlet x = crate::text::clean(y);"),
        ["app", "ui", "fmt", "text"]
    );
    assert!(
        code_of("// crate::ui\nfn a() {}\n#[cfg(test)]\nmod tests {\n use crate::ui;\n}\n")
            .find("crate::ui")
            .is_none()
    );
}
