//! What a Linux binary asks of the host it starts on, read from its ELF file: the shared
//! libraries it needs (`DT_NEEDED`), its interpreter (`PT_INTERP`) and the symbol versions
//! it needs of each (`.gnu.version_r`). Only 64-bit little-endian files (x86_64, aarch64):
//! the targets `cargo xtask dist` builds.

use std::collections::BTreeSet;

#[derive(Debug, Default, PartialEq)]
pub struct Needs {
    pub interpreter: Option<String>,
    pub libraries: Vec<String>,
    /// (library, version), e.g. ("libc.so.6", "GLIBC_2.17").
    pub versions: BTreeSet<(String, String)>,
}

const SHT_DYNAMIC: u32 = 6;
const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
const PT_INTERP: u32 = 3;
const DT_NEEDED: u64 = 1;

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn slice(&self, at: u64, len: u64) -> Result<&[u8], String> {
        let (at, len) = (usize::try_from(at), usize::try_from(len));
        let (Ok(at), Ok(len)) = (at, len) else {
            return Err("an offset past the address space".into());
        };
        at.checked_add(len)
            .and_then(|end| self.0.get(at..end))
            .ok_or_else(|| format!("{len} bytes at {at} are past the file's end"))
    }
    fn u16(&self, at: u64) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.slice(at, 2)?.try_into().unwrap()))
    }
    fn u32(&self, at: u64) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.slice(at, 4)?.try_into().unwrap()))
    }
    fn u64(&self, at: u64) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.slice(at, 8)?.try_into().unwrap()))
    }
    /// The NUL-terminated string at `at`.
    fn cstr(&self, at: u64) -> Result<String, String> {
        let start = usize::try_from(at).map_err(|_| "a string past the address space")?;
        let rest = self.0.get(start..).ok_or("a string past the file's end")?;
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or("an unterminated string")?;
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    }
}

struct Section {
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
}

pub fn read(file: &[u8]) -> Result<Needs, String> {
    let b = Bytes(file);
    if b.slice(0, 4)? != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if b.slice(4, 2)? != [2, 1] {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let (phoff, shoff) = (b.u64(0x20)?, b.u64(0x28)?);
    let (phentsize, phnum) = (u64::from(b.u16(0x36)?), u64::from(b.u16(0x38)?));
    let (shentsize, shnum) = (u64::from(b.u16(0x3a)?), u64::from(b.u16(0x3c)?));
    let mut needs = Needs::default();
    for i in 0..phnum {
        let p = phoff + i * phentsize;
        if b.u32(p)? == PT_INTERP {
            needs.interpreter = Some(b.cstr(b.u64(p + 0x08)?)?);
        }
    }
    let mut sections = Vec::new();
    for i in 0..shnum {
        let s = shoff + i * shentsize;
        sections.push(Section {
            kind: b.u32(s + 0x04)?,
            offset: b.u64(s + 0x18)?,
            size: b.u64(s + 0x20)?,
            link: b.u32(s + 0x28)?,
            info: b.u32(s + 0x2c)?,
        });
    }
    let strings = |s: &Section| -> Result<u64, String> {
        sections
            .get(s.link as usize)
            .map(|t| t.offset)
            .ok_or_else(|| format!("section link {} names no section", s.link))
    };
    for s in &sections {
        match s.kind {
            SHT_DYNAMIC => {
                let str_at = strings(s)?;
                for e in 0..s.size / 16 {
                    let at = s.offset + e * 16;
                    if b.u64(at)? == DT_NEEDED {
                        needs.libraries.push(b.cstr(str_at + b.u64(at + 8)?)?);
                    }
                }
            }
            SHT_GNU_VERNEED => {
                let str_at = strings(s)?;
                let mut need = s.offset;
                for _ in 0..s.info {
                    let file = b.cstr(str_at + u64::from(b.u32(need + 4)?))?;
                    let mut aux = need + u64::from(b.u32(need + 8)?);
                    for _ in 0..b.u16(need + 2)? {
                        let name = b.cstr(str_at + u64::from(b.u32(aux + 8)?))?;
                        needs.versions.insert((file.clone(), name));
                        aux += u64::from(b.u32(aux + 12)?);
                    }
                    need += u64::from(b.u32(need + 12)?);
                }
            }
            _ => {}
        }
    }
    Ok(needs)
}

/// `GLIBC_2.17` → (2, 17); other version names → None.
pub fn glibc_version(name: &str) -> Option<(u32, u32)> {
    let (major, minor) = name.strip_prefix("GLIBC_")?.split_once('.')?;
    let minor = minor.split('.').next()?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The libraries a binary for any glibc system may need: glibc's own (before 2.34
/// libpthread, libdl and librt are libraries of their own; since, stubs kept for old
/// binaries), and the GCC runtime every glibc system has.
pub const ALLOWED_LIBRARIES: [&str; 7] = [
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
];

/// What a binary meant for glibc `max` needs that such a host may not have; empty when
/// nothing.
pub fn violations(needs: &Needs, max: (u32, u32)) -> Vec<String> {
    let mut out = Vec::new();
    for lib in &needs.libraries {
        if !ALLOWED_LIBRARIES.contains(&lib.as_str()) {
            out.push(format!("needs {lib}, which is not part of glibc"));
        }
    }
    for (lib, v) in &needs.versions {
        if let Some(have) = glibc_version(v)
            && have > max
        {
            out.push(format!(
                "needs {v} of {lib}, newer than GLIBC_{}.{}",
                max.0, max.1
            ));
        }
    }
    match needs.interpreter.as_deref() {
        Some("/lib64/ld-linux-x86-64.so.2" | "/lib/ld-linux-aarch64.so.1") | None => {}
        Some(other) => out.push(format!("its interpreter is {other}")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_versions_are_read_and_others_are_not() {
        assert_eq!(glibc_version("GLIBC_2.17"), Some((2, 17)));
        assert_eq!(glibc_version("GLIBC_2.2.5"), Some((2, 2)));
        assert_eq!(glibc_version("GLIBC_PRIVATE"), None);
        assert_eq!(glibc_version("GCC_3.0"), None);
        assert!(glibc_version("GLIBC_2.34") > glibc_version("GLIBC_2.17"));
    }

    #[test]
    fn a_newer_symbol_or_a_foreign_library_is_a_violation() {
        let mut needs = Needs {
            interpreter: Some("/lib64/ld-linux-x86-64.so.2".into()),
            libraries: vec!["libc.so.6".into(), "libdl.so.2".into()],
            versions: [("libc.so.6".into(), "GLIBC_2.17".into())].into(),
        };
        assert!(violations(&needs, (2, 17)).is_empty());
        needs.libraries.push("libssl.so.3".into());
        needs
            .versions
            .insert(("libc.so.6".into(), "GLIBC_2.34".into()));
        let v = violations(&needs, (2, 17));
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(
            v[0].contains("libssl.so.3") && v[1].contains("GLIBC_2.34"),
            "{v:?}"
        );
    }

    /// The running test binary is an ELF file of this host: its reading agrees with what
    /// the host's own libc says of itself.
    #[test]
    fn this_test_binary_reads_as_a_dynamically_linked_glibc_program() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let needs = read(&exe).unwrap();
        assert!(
            needs.libraries.iter().any(|l| l == "libc.so.6"),
            "{needs:?}"
        );
        assert!(needs.interpreter.is_some(), "{needs:?}");
        assert!(
            needs
                .versions
                .iter()
                .any(|(l, v)| l == "libc.so.6" && glibc_version(v).is_some()),
            "{needs:?}"
        );
    }

    #[test]
    fn a_file_that_is_not_elf_or_is_cut_short_is_an_error_not_a_panic() {
        assert!(read(b"#!/bin/sh\n").is_err());
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        for cut in [5, 64, 200, exe.len() / 2] {
            let _ = read(&exe[..cut]);
        }
    }
}
