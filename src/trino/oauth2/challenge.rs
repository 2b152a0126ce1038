//! The `WWW-Authenticate` challenges of a 401 (RFC 9110 syntax) and the one Trino's
//! external authentication sends: where to send the operator, where to fetch the token.

use reqwest::header::HeaderMap;
use url::Url;

/// One challenge of a `WWW-Authenticate` header: its scheme and parameters (names
/// lower-cased, quoted values unescaped); a token68 is kept as a parameter named "".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub scheme: String,
    pub params: Vec<(String, String)>,
}

impl Challenge {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Every challenge of one or more `WWW-Authenticate` values (RFC 9110 §11.6.1: a value may
/// hold several challenges separated by commas, each `scheme [token68 | name=value, …]`,
/// values tokens or quoted strings). Unreadable rests are skipped, never an error.
pub fn parse_challenges<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<Challenge> {
    let mut out = Vec::new();
    for v in values {
        parse_one_value(v, &mut out);
    }
    out
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The comma-separated elements of a header value, commas inside quoted strings kept.
fn list_elements(v: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in v.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&v[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&v[start..]);
    out
}

/// The leading token of `s` and the rest.
fn leading_token(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !is_tchar(c)).unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// `name = (token | quoted-string)` filling all of `s`: the name (lower-cased) and the value.
fn auth_param(s: &str) -> Option<(String, String)> {
    let (name, rest) = leading_token(s.trim());
    if name.is_empty() {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let value = if let Some(q) = rest.strip_prefix('"') {
        let mut v = String::new();
        let mut chars = q.chars();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => v.push(chars.next()?),
                c => v.push(c),
            }
        }
        if !chars.as_str().trim().is_empty() {
            return None;
        }
        v
    } else {
        let (t, after) = leading_token(rest);
        if t.is_empty() || !after.trim().is_empty() {
            return None;
        }
        t.to_string()
    };
    Some((name.to_ascii_lowercase(), value))
}

fn parse_one_value(v: &str, out: &mut Vec<Challenge>) {
    // Whether the last challenge pushed may still take parameters.
    let mut open = false;
    for element in list_elements(v) {
        let e = element.trim_matches([' ', '\t']);
        if e.is_empty() {
            continue;
        }
        if let Some(param) = auth_param(e) {
            if open && let Some(ch) = out.last_mut() {
                ch.params.push(param);
            }
            continue;
        }
        let (scheme, rest) = leading_token(e);
        if scheme.is_empty() || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
            open = false;
            continue;
        }
        let rest = rest.trim();
        let mut ch = Challenge {
            scheme: scheme.to_string(),
            params: Vec::new(),
        };
        open = true;
        if !rest.is_empty() {
            match auth_param(rest) {
                Some(p) => ch.params.push(p),
                None => {
                    // token68: no more parameters follow.
                    ch.params.push((String::new(), rest.to_string()));
                    open = false;
                }
            }
        }
        out.push(ch);
    }
}

/// The external-authentication challenge of a 401: where to send the operator, where to
/// fetch the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalChallenge {
    pub redirect: Option<Url>,
    pub token: Url,
}

/// Trino's `Bearer x_token_server="…"` challenge among the answer's `WWW-Authenticate`
/// headers; `None` when the coordinator asks for something else.
pub fn external_challenge(headers: &HeaderMap) -> Option<ExternalChallenge> {
    let values = headers
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok());
    parse_challenges(values)
        .into_iter()
        .filter(|c| c.scheme.eq_ignore_ascii_case("bearer"))
        .find_map(|c| {
            let token = Url::parse(c.param("x_token_server")?).ok()?;
            let redirect = c
                .param("x_redirect_server")
                .and_then(|r| Url::parse(r).ok());
            Some(ExternalChallenge { redirect, token })
        })
}
