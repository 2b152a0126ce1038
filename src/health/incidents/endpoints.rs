//! Endpoints (`host:port`) and words named in server text (error lines, findings).

/// `host:port` endpoints named in `text`, in order: `host:port` tokens (URLs included, and
/// the `host:port: reason` of socket and dial errors) and urllib3's `host='h', port=p`. A
/// host has a letter or is a dotted IPv4 address and is not a timestamp's date and hour, so
/// times (`10:00:00`, `2026-11-30T10:30`) and positions (`line 1:15`) are not endpoints.
pub fn endpoints(text: &str) -> Vec<String> {
    let mut found: Vec<(usize, String)> = Vec::new();
    let is_host = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_';
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        if c != ':' {
            continue;
        }
        // host: the run of host characters before the colon
        let mut start = k;
        while start > 0 && is_host(chars[start - 1].1) {
            start -= 1;
        }
        let host = &text[chars.get(start).map(|x| x.0).unwrap_or(i)..i];
        // port: digits after the colon, not followed by more host characters or a colon
        let mut end = k + 1;
        while end < chars.len() && chars[end].1.is_ascii_digit() {
            end += 1;
        }
        if end == k + 1 || end - k - 1 > 5 {
            continue;
        }
        // What follows the port ends it, whatever the punctuation (`host:port: reason` of
        // Python's socket errors and Go's dial errors included), unless it goes on as a
        // clock time (`10:00:00`) or a version (`1.2.3`).
        let digit_at = |j: usize| chars.get(j).is_some_and(|x| x.1.is_ascii_digit());
        if let Some(&(_, next)) = chars.get(end)
            && (next.is_ascii_alphanumeric() || (next == ':' || next == '.') && digit_at(end + 1))
        {
            continue;
        }
        if start > 0 && chars[start - 1].1 == ':' {
            continue;
        }
        let port = &text[chars[k + 1].0..chars.get(end).map(|x| x.0).unwrap_or(text.len())];
        if valid_endpoint(host, port) {
            found.push((start, format!("{host}:{port}")));
        }
    }
    // urllib3: host='trino-old.internal', port=8080
    let mut rest = text;
    let mut base = 0;
    while let Some(p) = rest.find("host='") {
        let after = &rest[p + 6..];
        if let Some(q) = after.find('\'') {
            let host = &after[..q];
            let tail = &after[q + 1..];
            if let Some(port_text) = tail.strip_prefix(", port=") {
                let port: String = port_text
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                if valid_endpoint(host, &port) {
                    found.push((base + p, format!("{host}:{port}")));
                }
            }
        }
        base += p + 6;
        rest = &rest[p + 6..];
    }
    found.sort_by_key(|(i, _)| *i);
    let mut out: Vec<String> = Vec::new();
    for (_, e) in found {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

fn valid_endpoint(host: &str, port: &str) -> bool {
    let Ok(p) = port.parse::<u32>() else {
        return false;
    };
    if !(1..=65_535).contains(&p)
        || host.is_empty()
        || host.starts_with(['.', '-'])
        || date_and_hour(host)
    {
        return false;
    }
    let dotted_ip = host.split('.').count() == 4
        && host
            .split('.')
            .all(|o| !o.is_empty() && o.len() <= 3 && o.chars().all(|c| c.is_ascii_digit()));
    dotted_ip || host.chars().any(|c| c.is_ascii_alphabetic())
}

/// `2026-11-30T10` (or `…t10`): the date and hour of a timestamp, whose minutes follow the
/// colon (`2026-11-30T10:30 the run failed`), not a host.
fn date_and_hour(host: &str) -> bool {
    let b = host.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let hour = match b.len() {
        12 | 13 => 11..b.len(),
        _ => return false,
    };
    digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && matches!(b[10], b'T' | b't')
        && digits(hour)
}

/// Whether `word` occurs in `text` with no identifier character on either side.
pub(super) fn contains_word(text: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}
