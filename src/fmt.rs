//! How numbers, sizes and durations read to people: compact forms for tables and reports.

/// `2.0 MB`, `96 MB`, `512 B`: binary units, one decimal below 10, compact for tables.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KB", "MB", "GB", "TB", "PB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if v >= 9.95 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// Thousands separators: `18,000`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A compact age or duration: `45s`, `12m`, `3h`, `15d`, `2d4h` below three days.
pub fn human_duration(secs: i64) -> String {
    let neg = secs < 0;
    let s = secs.unsigned_abs();
    let text = if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m", s / 60)
    } else if s < 86_400 {
        let h = s / 3600;
        let m = (s % 3600) / 60;
        if h < 10 && m > 0 {
            format!("{h}h{m}m")
        } else {
            format!("{h}h")
        }
    } else {
        let d = s / 86_400;
        let h = (s % 86_400) / 3600;
        if d < 3 && h > 0 {
            format!("{d}d{h}h")
        } else {
            format!("{d}d")
        }
    };
    if neg { format!("-{text}") } else { text }
}

/// A byte count the way the config file writes one (`32 MiB`, `9.5 MiB`).
pub fn fmt_size(n: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    let (unit, size) = if n >= MIB {
        ("MiB", MIB)
    } else if n >= KIB {
        ("KiB", KIB)
    } else {
        return format!("{n} bytes");
    };
    if n.is_multiple_of(size) {
        format!("{} {unit}", n / size)
    } else {
        format!("{:.1} {unit}", n as f64 / size as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_forms() {
        assert_eq!(human_bytes(2 * 1024 * 1024), "2.0 MB");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(300 * 1024 * 1024 * 1024), "300 GB");
        assert_eq!(human_duration(45), "45s");
        assert_eq!(human_duration(15 * 86_400 + 3600), "15d");
        assert_eq!(human_duration(86_400 + 2 * 3600), "1d2h");
        assert_eq!(human_duration(3 * 3600 + 20 * 60), "3h20m");
        assert_eq!(human_duration(-120), "-2m");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(18_000), "18,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn sizes_read_like_the_config_file() {
        assert_eq!(fmt_size(32 * 1024 * 1024), "32 MiB");
        assert_eq!(fmt_size(9 * 1024 * 1024 + 512 * 1024), "9.5 MiB");
        assert_eq!(fmt_size(64 * 1024), "64 KiB");
        assert_eq!(fmt_size(1000), "1000 bytes");
    }
}
