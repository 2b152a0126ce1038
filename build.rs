//! Build facts for `floe --version`: the git commit (`unknown` outside a checkout), the
//! build date (from `SOURCE_DATE_EPOCH` when set, for reproducible builds; else today), the
//! target triple and the glibc the binary was linked for (the oldest it starts on).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Days since 1970-01-01 as a proleptic Gregorian date.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The glibc a gnu target is linked for: `FLOE_BUILD_GLIBC` (set by `cargo xtask dist`),
/// else the version cargo-zigbuild was asked for (`x86_64-linux-gnu.2.17`), else the build
/// host's own (a native build needs at least the glibc it was built on). `none` off glibc.
fn glibc(target: &str) -> String {
    if !target.ends_with("-gnu") {
        return "none".into();
    }
    if let Some(v) = std::env::var("FLOE_BUILD_GLIBC")
        .ok()
        .filter(|v| !v.is_empty())
    {
        return v;
    }
    if let Some(v) = std::env::var("CARGO_ZIGBUILD_TARGET")
        .ok()
        .and_then(|t| t.rsplit_once("-gnu.").map(|(_, v)| v.to_string()))
        .filter(|v| !v.is_empty())
    {
        return v;
    }
    // `getconf GNU_LIBC_VERSION` says "glibc 2.36".
    Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            let s = String::from_utf8(o.stdout).ok()?;
            s.trim().strip_prefix("glibc ").map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".into())
}

fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=FLOE_TARGET={target}");
    println!("cargo:rustc-env=FLOE_GLIBC={}", glibc(&target));
    println!("cargo:rerun-if-env-changed=FLOE_BUILD_GLIBC");
    println!("cargo:rerun-if-env-changed=CARGO_ZIGBUILD_TARGET");
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0)
        });
    let (y, m, d) = civil(epoch.div_euclid(86_400));
    println!("cargo:rustc-env=FLOE_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=FLOE_BUILD_DATE={y:04}-{m:02}-{d:02}");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-changed=build.rs");
    // A new commit or branch changes HEAD or the ref it names (loose or packed).
    for path in [
        git(&["rev-parse", "--git-path", "HEAD"]),
        git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r])),
        git(&["rev-parse", "--git-path", "packed-refs"]),
    ]
    .into_iter()
    .flatten()
    {
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
