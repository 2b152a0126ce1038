//! Sizes and durations as operators write them in config files and flags. Below both
//! the settings loader and the domain: a maintenance plan speaks in [`Bytes`] without
//! depending on how the config file is read.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::fmt::{human_bytes, human_duration};

/// A size or a duration that does not read: the text as written, and what is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum UnitError {
    #[error("empty size")]
    EmptySize,
    #[error("invalid size {0:?}: expected a number with an optional unit like 128MB")]
    SizeNumber(String),
    #[error("invalid size {text:?}: unknown unit {unit:?} (use B, kB, MB, GB, TB)")]
    SizeUnit { text: String, unit: String },
    #[error("invalid size {0:?}: out of range")]
    SizeRange(String),
    #[error("invalid duration {text:?}: {reason} (examples: 30s, 36h, 7d)")]
    Duration {
        text: String,
        reason: humantime::DurationError,
    },
}

/// A size in bytes. Parses `134217728`, `"128MB"`, `"128 MiB"`, `"1.5GB"`; units are binary
/// (1 MB = 1024 KB) as in Trino's and Iceberg's configuration, and `MiB` spellings are
/// accepted as synonyms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

impl Bytes {
    pub fn parse(text: &str) -> Result<Self, UnitError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(UnitError::EmptySize);
        }
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let value: f64 = num
            .parse()
            .map_err(|_| UnitError::SizeNumber(text.to_string()))?;
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            "p" | "pb" | "pib" => 1 << 50,
            other => {
                return Err(UnitError::SizeUnit {
                    text: text.to_string(),
                    unit: other.to_string(),
                });
            }
        };
        let bytes = value * mult as f64;
        if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
            return Err(UnitError::SizeRange(text.to_string()));
        }
        Ok(Bytes(bytes.round() as u64))
    }

    /// Trino's data-size literal for this value (`'96MB'`, or exact bytes `'1234B'`), as
    /// accepted by procedure arguments such as `file_size_threshold`.
    pub fn trino_literal(self) -> String {
        for (unit, shift) in [("PB", 50), ("TB", 40), ("GB", 30), ("MB", 20), ("kB", 10)] {
            let m = 1u64 << shift;
            if self.0 >= m && self.0.is_multiple_of(m) {
                return format!("{}{unit}", self.0 / m);
            }
        }
        format!("{}B", self.0)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&human_bytes(self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(Bytes(n)),
            Raw::Text(s) => Bytes::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.trino_literal())
    }
}

/// A duration written as `"30s"`, `"36h"`, `"7d"`, `"1h 30m"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(pub Duration);

impl Dur {
    pub fn parse(text: &str) -> Result<Self, UnitError> {
        humantime::parse_duration(text.trim())
            .map(Dur)
            .map_err(|reason| UnitError::Duration {
                text: text.to_string(),
                reason,
            })
    }

    pub fn secs(self) -> u64 {
        self.0.as_secs()
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Dur::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&human_duration(self.0.as_secs() as i64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(Bytes::parse("128MB").unwrap(), Bytes(134_217_728));
        assert_eq!(Bytes::parse("128 MiB").unwrap(), Bytes(134_217_728));
        assert_eq!(Bytes::parse("1.5GB").unwrap(), Bytes(1_610_612_736));
        assert_eq!(Bytes::parse("4096").unwrap(), Bytes(4096));
        assert_eq!(Bytes::parse("2kb").unwrap(), Bytes(2048));
        assert!(
            Bytes::parse("12 parsecs")
                .unwrap_err()
                .to_string()
                .contains("unknown unit")
        );
        assert!(Bytes::parse("").is_err());
        assert!(Bytes::parse("MB").is_err());
    }

    #[test]
    fn trino_literal_is_exact() {
        assert_eq!(Bytes(100 << 20).trino_literal(), "100MB");
        assert_eq!(Bytes(96 << 20).trino_literal(), "96MB");
        assert_eq!(Bytes((96 << 20) + 1).trino_literal(), "100663297B");
        assert_eq!(Bytes(1 << 30).trino_literal(), "1GB");
        assert_eq!(Bytes(0).trino_literal(), "0B");
    }

    #[test]
    fn durations() {
        assert_eq!(Dur::parse("36h").unwrap().secs(), 36 * 3600);
        assert_eq!(Dur::parse("7d").unwrap().secs(), 7 * 86_400);
        assert!(Dur::parse("soon").is_err());
    }
}
