//! The writer under the terminal backend: holds each frame's bytes until the backend
//! flushes, and rewrites its colour escapes (SGR, `ESC [ … m`) for what the terminal has
//! (`ui::caps::Colours`). crossterm writes even the 16 ANSI colours as `38;5;N`, which a
//! Linux console or an old screen does not read: in 16-colour mode they become 30-37 /
//! 90-97 (and 40-47 / 100-107), and a 256-colour or RGB one becomes its nearest of the 16;
//! under `NO_COLOR` every colour parameter is dropped. Everything else passes unchanged.

use std::io::{self, Write};

use crate::ui::caps::Colours;

pub struct SgrFilter<W: Write> {
    inner: W,
    colours: Colours,
    pending: Vec<u8>,
}

impl<W: Write> SgrFilter<W> {
    pub fn new(inner: W, colours: Colours) -> SgrFilter<W> {
        SgrFilter {
            inner,
            colours,
            pending: Vec::new(),
        }
    }
}

impl<W: Write> Write for SgrFilter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.colours == Colours::Full {
            return self.inner.write(buf);
        }
        self.pending.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let (out, used) = rewrite(&self.pending, self.colours);
            self.inner.write_all(&out)?;
            self.pending.drain(..used);
        }
        self.inner.flush()
    }
}

/// `bytes` with every complete SGR rewritten, and how many bytes were used: an escape
/// cut off at the end is kept for the next flush.
pub fn rewrite(bytes: &[u8], colours: Colours) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != 0x1b {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        if i + 1 >= bytes.len() {
            return (out, i);
        }
        if bytes[i + 1] != b'[' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        // CSI: parameter bytes 0x30-0x3f, intermediates 0x20-0x2f, a final 0x40-0x7e.
        let mut j = i + 2;
        while j < bytes.len() && (0x20..=0x3f).contains(&bytes[j]) {
            j += 1;
        }
        if j >= bytes.len() {
            return (out, i);
        }
        let params = &bytes[i + 2..j];
        if bytes[j] == b'm' && params.iter().all(|b| b.is_ascii_digit() || *b == b';') {
            let kept = sgr(std::str::from_utf8(params).unwrap_or(""), colours);
            if let Some(p) = kept {
                out.extend_from_slice(b"\x1b[");
                out.extend_from_slice(p.as_bytes());
                out.push(b'm');
            }
        } else {
            out.extend_from_slice(&bytes[i..=j]);
        }
        i = j + 1;
    }
    (out, i)
}

/// One SGR's parameters for `colours`; `None` when nothing is left to send (an empty
/// SGR would be a reset).
fn sgr(params: &str, colours: Colours) -> Option<String> {
    if params.is_empty() {
        return Some(String::new());
    }
    let p: Vec<u32> = params.split(';').map(|n| n.parse().unwrap_or(0)).collect();
    let mut out: Vec<u32> = Vec::new();
    let mut k = 0;
    while k < p.len() {
        let code = p[k];
        let (base, bright) = match code {
            38 => (30, 90),
            48 => (40, 100),
            _ => (0, 0),
        };
        if base != 0 {
            let index = match p.get(k + 1) {
                Some(5) => {
                    let n = p.get(k + 2).copied().unwrap_or(0);
                    k += 3;
                    if n < 16 { n } else { nearest(indexed_rgb(n)) }
                }
                Some(2) => {
                    let c = |o| p.get(k + o).copied().unwrap_or(0).min(255);
                    let rgb = (c(2), c(3), c(4));
                    k += 5;
                    nearest(rgb)
                }
                _ => {
                    k += 1;
                    continue;
                }
            };
            if colours == Colours::Ansi16 {
                out.push(if index < 8 {
                    base + index
                } else {
                    bright + index - 8
                });
            }
            continue;
        }
        let is_colour = matches!(code, 30..=37 | 40..=47 | 90..=97 | 100..=107);
        if !(is_colour && colours == Colours::None) {
            out.push(code);
        }
        k += 1;
    }
    if out.is_empty() {
        return None;
    }
    Some(out.iter().map(u32::to_string).collect::<Vec<_>>().join(";"))
}

/// xterm's 256-colour palette: the 6x6x6 cube from 16, the grey ramp from 232.
fn indexed_rgb(n: u32) -> (u32, u32, u32) {
    if n >= 232 {
        let g = 8 + 10 * (n - 232);
        return (g, g, g);
    }
    let n = n - 16;
    let level = |v: u32| if v == 0 { 0 } else { 55 + 40 * v };
    (level(n / 36), level(n / 6 % 6), level(n % 6))
}

/// The nearest of the 16 ANSI colours (xterm's defaults), as its index 0-15.
fn nearest((r, g, b): (u32, u32, u32)) -> u32 {
    const PALETTE: [(u32, u32, u32); 16] = [
        (0, 0, 0),
        (205, 0, 0),
        (0, 205, 0),
        (205, 205, 0),
        (0, 0, 238),
        (205, 0, 205),
        (0, 205, 205),
        (229, 229, 229),
        (127, 127, 127),
        (255, 0, 0),
        (0, 255, 0),
        (255, 255, 0),
        (92, 92, 255),
        (255, 0, 255),
        (0, 255, 255),
        (255, 255, 255),
    ];
    let d = |(pr, pg, pb): (u32, u32, u32)| {
        let sq = |a: u32, b: u32| a.abs_diff(b).pow(2);
        sq(r, pr) + sq(g, pg) + sq(b, pb)
    };
    (0..16u32)
        .min_by_key(|&i| d(PALETTE[i as usize]))
        .unwrap_or(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(s: &str, c: Colours) -> String {
        let (out, used) = rewrite(s.as_bytes(), c);
        assert_eq!(used, s.len());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn sixteen_colours_become_classic_sgr() {
        let c = Colours::Ansi16;
        assert_eq!(re("\x1b[38;5;1mx", c), "\x1b[31mx");
        assert_eq!(re("\x1b[38;5;9m", c), "\x1b[91m");
        assert_eq!(re("\x1b[48;5;3m", c), "\x1b[43m");
        assert_eq!(re("\x1b[48;5;11m", c), "\x1b[103m");
        assert_eq!(re("\x1b[38;2;250;10;10m", c), "\x1b[91m");
        assert_eq!(re("\x1b[38;5;196m", c), "\x1b[91m");
        assert_eq!(re("\x1b[1;38;5;2;7m", c), "\x1b[1;32;7m");
        assert_eq!(re("\x1b[39m\x1b[49m\x1b[0m", c), "\x1b[39m\x1b[49m\x1b[0m");
    }

    #[test]
    fn no_color_drops_every_colour_and_keeps_the_rest() {
        let c = Colours::None;
        assert_eq!(re("\x1b[38;5;1mx\x1b[1m", c), "x\x1b[1m");
        assert_eq!(re("\x1b[1;31;7m", c), "\x1b[1;7m");
        assert_eq!(re("\x1b[38;2;1;2;3m\x1b[m", c), "\x1b[m");
    }

    #[test]
    fn other_escapes_and_text_pass_and_a_cut_escape_waits() {
        let c = Colours::Ansi16;
        assert_eq!(
            re("\x1b[?1049h\x1b[2;3H\x1b]52;c;eA==\x07é", c),
            "\x1b[?1049h\x1b[2;3H\x1b]52;c;eA==\x07é"
        );
        let (out, used) = rewrite(b"ab\x1b[38;5", c);
        assert_eq!((out.as_slice(), used), (&b"ab"[..], 2));
        let mut w = SgrFilter::new(Vec::new(), c);
        w.write_all(b"\x1b[38;").unwrap();
        w.flush().unwrap();
        w.write_all(b"5;4mz").unwrap();
        w.flush().unwrap();
        assert_eq!(w.inner, b"\x1b[34mz");
    }
}
