//! What the operator's terminal can show, read from the environment once at start. Pure:
//! the environment is a function, so every case is a unit test.
//!
//! - **Characters**: UTF-8 when the locale says so, in the C library's precedence — the
//!   first of `LC_ALL`, `LC_CTYPE`, `LANG` that is set and not empty names the character
//!   set; none set is the C locale. Anything else is ASCII mode (`ui::ascii`). `--ascii`
//!   or `ascii = true` forces ASCII, `ascii = false` forces UTF-8.
//! - **Colours**: none with `NO_COLOR` set and not empty (no-color.org); the full palette
//!   when the terminal says it has 256 colours or more (`TERM=*-256color`, `*-direct`,
//!   `COLORTERM=truecolor|24bit`); else the 16 ANSI colours (`TERM=linux`, `screen`,
//!   `vt220`, plain `xterm`…), written as SGR 30-37/90-97 only.

/// How many colours floe may write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colours {
    /// `NO_COLOR`: no colour SGR at all; labels and reverse video carry the meaning.
    None,
    /// The 16 ANSI colours as SGR 30-37, 40-47, 90-97, 100-107: no 38;5 or 38;2.
    Ansi16,
    /// 256 colours and 24-bit RGB pass through.
    Full,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    pub ascii: bool,
    pub colours: Colours,
}

impl Caps {
    /// From the environment `env`; `ascii` is the flag or config key when given.
    pub fn detect(env: &dyn Fn(&str) -> Option<String>, ascii: Option<bool>) -> Caps {
        Caps {
            ascii: ascii.unwrap_or_else(|| !utf8_locale(env)),
            colours: colours(env),
        }
    }

    pub fn from_env(ascii: Option<bool>) -> Caps {
        Caps::detect(&|k| std::env::var(k).ok(), ascii)
    }
}

/// The locale variable that decides the character set, and its value (`None`: no locale
/// is set, which is the C locale).
pub fn ctype_locale(env: &dyn Fn(&str) -> Option<String>) -> Option<(&'static str, String)> {
    ["LC_ALL", "LC_CTYPE", "LANG"]
        .into_iter()
        .find_map(|k| env(k).filter(|v| !v.is_empty()).map(|v| (k, v)))
}

/// Whether the locale's character set is UTF-8 (`en_US.UTF-8`, `C.utf8`).
pub fn utf8_locale(env: &dyn Fn(&str) -> Option<String>) -> bool {
    ctype_locale(env).is_some_and(|(_, v)| {
        let v = v.to_ascii_lowercase();
        v.contains("utf-8") || v.contains("utf8")
    })
}

pub fn colours(env: &dyn Fn(&str) -> Option<String>) -> Colours {
    if env("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return Colours::None;
    }
    let term = env("TERM").unwrap_or_default();
    let colorterm = env("COLORTERM").unwrap_or_default();
    if colorterm == "truecolor"
        || colorterm == "24bit"
        || term.contains("256color")
        || term.ends_with("-direct")
    {
        Colours::Full
    } else {
        Colours::Ansi16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn ascii(vars: &[(&str, &str)]) -> bool {
        Caps::detect(&env(vars), None).ascii
    }

    #[test]
    fn the_locale_decides_in_the_c_library_order() {
        assert!(!ascii(&[("LANG", "en_US.UTF-8")]));
        assert!(!ascii(&[("LANG", "C.utf8")]));
        assert!(ascii(&[("LANG", "C")]));
        assert!(ascii(&[]), "no locale at all is the C locale");
        assert!(ascii(&[("LANG", "en_US.ISO-8859-1")]));
        // LC_ALL over LC_CTYPE over LANG; an empty one does not count.
        assert!(ascii(&[("LC_ALL", "C"), ("LANG", "en_US.UTF-8")]));
        assert!(!ascii(&[
            ("LC_ALL", ""),
            ("LC_CTYPE", "de_DE.UTF-8"),
            ("LANG", "C")
        ]));
        assert!(ascii(&[("LC_CTYPE", "POSIX"), ("LANG", "en_US.UTF-8")]));
        assert!(!ascii(&[("LC_ALL", "en_GB.UTF-8"), ("LC_CTYPE", "C")]));
    }

    #[test]
    fn the_flag_or_the_config_key_wins_over_the_locale() {
        assert!(Caps::detect(&env(&[("LANG", "en_US.UTF-8")]), Some(true)).ascii);
        assert!(!Caps::detect(&env(&[("LANG", "C")]), Some(false)).ascii);
    }

    #[test]
    fn colours_from_no_color_term_and_colorterm() {
        let c = |vars: &[(&str, &str)]| colours(&env(vars));
        assert_eq!(c(&[("TERM", "linux")]), Colours::Ansi16);
        assert_eq!(c(&[("TERM", "screen")]), Colours::Ansi16);
        assert_eq!(c(&[("TERM", "vt220")]), Colours::Ansi16);
        assert_eq!(c(&[]), Colours::Ansi16);
        assert_eq!(c(&[("TERM", "xterm-256color")]), Colours::Full);
        assert_eq!(c(&[("TERM", "screen-256color")]), Colours::Full);
        assert_eq!(
            c(&[("TERM", "xterm"), ("COLORTERM", "truecolor")]),
            Colours::Full
        );
        assert_eq!(
            c(&[("TERM", "xterm-256color"), ("NO_COLOR", "1")]),
            Colours::None
        );
        // no-color.org: set but empty is not set.
        assert_eq!(c(&[("TERM", "linux"), ("NO_COLOR", "")]), Colours::Ansi16);
    }
}
