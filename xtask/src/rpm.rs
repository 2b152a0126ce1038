//! What an `.rpm` holds, read from its header (no `rpm` tool needed): name, version,
//! architecture, the payload's compressor, the files it installs and what it requires.
//! The format: a 96-byte lead, the signature header (padded to 8 bytes), the main header,
//! then the payload; a header is a magic, an index of (tag, type, offset, count) entries
//! and their data, all big-endian.

use std::collections::BTreeMap;

const HEADER_MAGIC: [u8; 3] = [0x8e, 0xad, 0xe8];
const LEAD_MAGIC: [u8; 4] = [0xed, 0xab, 0xee, 0xdb];

const TAG_NAME: u32 = 1000;
const TAG_VERSION: u32 = 1001;
const TAG_ARCH: u32 = 1022;
const TAG_REQUIRENAME: u32 = 1049;
const TAG_DIRINDEXES: u32 = 1116;
const TAG_BASENAMES: u32 = 1117;
const TAG_DIRNAMES: u32 = 1118;
const TAG_PAYLOADCOMPRESSOR: u32 = 1125;

const TYPE_INT32: u32 = 4;
const TYPE_STRING: u32 = 6;
const TYPE_STRING_ARRAY: u32 = 8;
const TYPE_I18NSTRING: u32 = 9;

#[derive(Debug, Default, PartialEq)]
pub struct Package {
    pub name: String,
    pub version: String,
    pub arch: String,
    pub compressor: String,
    pub files: Vec<String>,
    pub requires: Vec<String>,
}

#[derive(Debug)]
enum Value {
    Strings(Vec<String>),
    Ints(Vec<u32>),
}

fn be32(b: &[u8], at: usize) -> Result<u32, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes(s.try_into().unwrap()))
        .ok_or_else(|| format!("the file ends before byte {}", at + 4))
}

/// One header at `at`: its entries by tag, and where the next part of the file starts.
fn header(b: &[u8], at: usize) -> Result<(BTreeMap<u32, Value>, usize), String> {
    if b.get(at..at + 3) != Some(&HEADER_MAGIC[..]) {
        return Err(format!("no header at byte {at}"));
    }
    let entries = be32(b, at + 8)? as usize;
    let data_len = be32(b, at + 12)? as usize;
    let index = at + 16;
    let data = index + entries * 16;
    let end = data + data_len;
    let store = b
        .get(data..end)
        .ok_or("a header runs past the file's end")?;
    let mut out = BTreeMap::new();
    for e in 0..entries {
        let p = index + e * 16;
        let (tag, kind) = (be32(b, p)?, be32(b, p + 4)?);
        let (offset, count) = (be32(b, p + 8)? as usize, be32(b, p + 12)? as usize);
        let value = match kind {
            TYPE_STRING | TYPE_STRING_ARRAY | TYPE_I18NSTRING => {
                let n = if kind == TYPE_STRING { 1 } else { count };
                let mut strings = Vec::with_capacity(n.min(1 << 16));
                let mut pos = offset;
                for _ in 0..n {
                    let rest = store.get(pos..).ok_or("a string past its header")?;
                    let len = rest
                        .iter()
                        .position(|&c| c == 0)
                        .ok_or("an unterminated string")?;
                    strings.push(String::from_utf8_lossy(&rest[..len]).into_owned());
                    pos += len + 1;
                }
                Value::Strings(strings)
            }
            TYPE_INT32 => Value::Ints(
                (0..count)
                    .map(|i| be32(store, offset + i * 4))
                    .collect::<Result<_, _>>()?,
            ),
            _ => continue,
        };
        out.insert(tag, value);
    }
    Ok((out, end))
}

pub fn read(b: &[u8]) -> Result<Package, String> {
    if b.get(..4) != Some(&LEAD_MAGIC[..]) {
        return Err("not an rpm file (no lead)".into());
    }
    let (_, sig_end) = header(b, 96)?;
    let (h, _) = header(b, sig_end.next_multiple_of(8))?;
    let strings = |tag| match h.get(&tag) {
        Some(Value::Strings(s)) => s.clone(),
        _ => Vec::new(),
    };
    let one = |tag| strings(tag).into_iter().next().unwrap_or_default();
    let dirs = strings(TAG_DIRNAMES);
    let index = match h.get(&TAG_DIRINDEXES) {
        Some(Value::Ints(i)) => i.clone(),
        _ => Vec::new(),
    };
    let files = strings(TAG_BASENAMES)
        .into_iter()
        .zip(index)
        .map(|(base, d)| {
            let dir = dirs.get(d as usize).map(String::as_str).unwrap_or("?/");
            format!("{dir}{base}")
        })
        .collect();
    Ok(Package {
        name: one(TAG_NAME),
        version: one(TAG_VERSION),
        arch: one(TAG_ARCH),
        compressor: one(TAG_PAYLOADCOMPRESSOR),
        files,
        requires: strings(TAG_REQUIRENAME),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header of `entries` (tag, type, data) as rpm writes one.
    fn header_bytes(entries: &[(u32, u32, u32, Vec<u8>)]) -> Vec<u8> {
        let mut index = Vec::new();
        let mut data: Vec<u8> = Vec::new();
        for (tag, kind, count, bytes) in entries {
            for v in [*tag, *kind, data.len() as u32, *count] {
                index.extend(v.to_be_bytes());
            }
            data.extend(bytes);
        }
        let mut h = vec![0x8e, 0xad, 0xe8, 1, 0, 0, 0, 0];
        h.extend((entries.len() as u32).to_be_bytes());
        h.extend((data.len() as u32).to_be_bytes());
        h.extend(index);
        h.extend(data);
        h
    }

    fn strs(s: &[&str]) -> Vec<u8> {
        s.iter().flat_map(|s| s.bytes().chain([0])).collect()
    }

    #[test]
    fn the_files_and_requirements_of_a_package_are_read_from_its_header() {
        let mut rpm = LEAD_MAGIC.to_vec();
        rpm.resize(96, 0);
        // A signature header of 5 bytes of data: the main header starts 8-aligned after it.
        rpm.extend(header_bytes(&[(1000, 7, 5, vec![1, 2, 3, 4, 5])]));
        while !rpm.len().is_multiple_of(8) {
            rpm.push(0);
        }
        let ints: Vec<u8> = [0u32, 1, 1].iter().flat_map(|i| i.to_be_bytes()).collect();
        rpm.extend(header_bytes(&[
            (TAG_NAME, TYPE_STRING, 1, strs(&["floe"])),
            (TAG_VERSION, TYPE_STRING, 1, strs(&["0.1.0"])),
            (TAG_ARCH, TYPE_STRING, 1, strs(&["x86_64"])),
            (TAG_PAYLOADCOMPRESSOR, TYPE_STRING, 1, strs(&["xz"])),
            (
                TAG_DIRNAMES,
                TYPE_STRING_ARRAY,
                2,
                strs(&["/usr/bin/", "/usr/share/man/man1/"]),
            ),
            (
                TAG_BASENAMES,
                TYPE_STRING_ARRAY,
                3,
                strs(&["floe", "floe.1.gz", "x.1.gz"]),
            ),
            (TAG_DIRINDEXES, TYPE_INT32, 3, ints),
            (
                TAG_REQUIRENAME,
                TYPE_STRING_ARRAY,
                2,
                strs(&["libc.so.6()(64bit)", "libc.so.6(GLIBC_2.17)(64bit)"]),
            ),
        ]));
        rpm.extend(b"\xfd7zXZ\0payload");
        let p = read(&rpm).unwrap();
        assert_eq!(
            (p.name.as_str(), p.version.as_str(), p.arch.as_str()),
            ("floe", "0.1.0", "x86_64")
        );
        assert_eq!(p.compressor, "xz");
        assert_eq!(
            p.files,
            [
                "/usr/bin/floe",
                "/usr/share/man/man1/floe.1.gz",
                "/usr/share/man/man1/x.1.gz"
            ]
        );
        assert_eq!(p.requires.len(), 2);
        assert!(read(&rpm[..150]).is_err());
        assert!(read(b"not an rpm").is_err());
    }
}
