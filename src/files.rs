//! Files floe writes whole: the stats cache, reports, check outputs, OAuth2 tokens.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Write `bytes` to a temporary file created with `mode` (before the umask) next to
/// `path`, synced, then renamed over `path`: a reader sees the old file or the new one,
/// never a part, and a private file is never readable by others, not even while written.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("floe"),
        std::process::id()
    ));
    // A leftover of a crashed write would keep its own mode: start afresh.
    let _ = std::fs::remove_file(&tmp);
    let r = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn replaces_the_file_whole_with_its_mode_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("floe-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.txt");
        std::fs::write(&path, "old").unwrap();
        write_atomic(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(write_atomic(&dir.join("missing/out.txt"), b"x", 0o600).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
