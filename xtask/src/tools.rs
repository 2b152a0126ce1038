//! The release tools `cargo xtask dist` builds with, pinned and installed once into the
//! cache (`$FLOE_CACHE_DIR/tools`), never into the user's own cargo or Python: zig from
//! PyPI's `ziglang` wheel (the linker that targets an old glibc), cargo-zigbuild (drives
//! cargo through it), cargo-deb and cargo-generate-rpm (the packages).

use std::path::PathBuf;
use std::process::Command;

use crate::{cache_dir, run};

/// PyPI's `ziglang` wheel: zig's own release, packaged for pip.
pub const ZIG: &str = "0.15.2";
pub const ZIGBUILD: &str = "0.24.1";
pub const DEB: &str = "3.8.0";
pub const RPM: &str = "0.21.1";

pub fn tools_dir() -> PathBuf {
    cache_dir().join("tools")
}

/// zig, installed with `pip install --target` when missing.
pub fn zig() -> Result<PathBuf, String> {
    let dir = tools_dir().join(format!("ziglang-{ZIG}"));
    let zig = dir.join("ziglang/zig");
    if !zig.exists() {
        eprintln!(
            "xtask: installing zig {ZIG} (PyPI ziglang) into {}",
            dir.display()
        );
        let _ = std::fs::remove_dir_all(&dir);
        run(
            Command::new("python3")
                .args(["-m", "pip", "install", "--quiet", "--no-deps", "--target"])
                .arg(&dir)
                .arg(format!("ziglang=={ZIG}")),
            "pip install ziglang",
        )?;
    }
    if !zig.exists() {
        return Err(format!("the ziglang wheel has no {}", zig.display()));
    }
    Ok(zig)
}

/// A cargo subcommand, installed with `cargo install --locked` into its own root when
/// missing (its build in the cache's own target dir, not the project's).
pub fn cargo_tool(krate: &str, version: &str) -> Result<PathBuf, String> {
    let root = tools_dir().join(format!("{krate}-{version}"));
    let bin = root.join("bin").join(krate);
    if bin.exists() {
        return Ok(bin);
    }
    eprintln!(
        "xtask: installing {krate} {version} into {}",
        root.display()
    );
    run(
        Command::new(env!("CARGO"))
            .args([
                "install",
                "--locked",
                "--quiet",
                krate,
                "--version",
                version,
                "--root",
            ])
            .arg(&root)
            .env("CARGO_TARGET_DIR", tools_dir().join("build")),
        &format!("cargo install {krate} {version}"),
    )?;
    if !bin.exists() {
        return Err(format!("cargo install {krate} left no {}", bin.display()));
    }
    Ok(bin)
}

/// cargo-zigbuild with what it needs in its environment: the zig above and caches of
/// its own (zig's and cargo-zigbuild's) under the tools dir.
pub fn zigbuild() -> Result<Command, String> {
    let zig = zig()?;
    let bin = cargo_tool("cargo-zigbuild", ZIGBUILD)?;
    let mut c = Command::new(bin);
    c.arg("zigbuild")
        .env("CARGO_ZIGBUILD_ZIG_PATH", &zig)
        .env(
            "CARGO_ZIGBUILD_CACHE_DIR",
            tools_dir().join("zigbuild-cache"),
        )
        .env("ZIG_GLOBAL_CACHE_DIR", tools_dir().join("zig-cache"))
        .env("ZIG_LOCAL_CACHE_DIR", tools_dir().join("zig-cache"));
    Ok(c)
}
