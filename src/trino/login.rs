//! `floe login`: Trino's OAuth2 login on its own, for a terminal that may have no browser
//! (a bastion): the URL goes to stderr, to be opened anywhere; the token goes to the cache,
//! never to the screen.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use chrono::Utc;

use super::client::Client;
use super::oauth2::{LoginEvent, LoginPrompt};
use crate::config::{Auth, Settings};
use crate::text::sanitize;

/// Run the login; exit 0 with where the token is cached and until when, else 1.
pub fn cli(settings: &Settings) -> ExitCode {
    if !matches!(settings.trino.auth, Auth::OAuth2(_)) {
        eprintln!(
            "floe: floe login is for Trino's OAuth2 authentication: set trino.auth = \"oauth2\" in the config file or pass --auth oauth2"
        );
        return ExitCode::from(1);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("floe: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let hyperlinks = std::io::stderr().is_terminal();
    let prompt: LoginPrompt = Arc::new(move |e: &LoginEvent| {
        if matches!(e, LoginEvent::Failed(_)) {
            return; // the error itself is printed below
        }
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(describe(e, hyperlinks).as_bytes());
        let _ = err.flush();
    });
    let client = match Client::from_settings(&settings.trino, settings.query_timeout) {
        Ok(c) => c.with_oauth2_prompt(prompt),
        Err(e) => {
            eprintln!("floe: {}", sanitize(&e.to_string()));
            return ExitCode::from(1);
        }
    };
    match rt.block_on(client.oauth2_login()) {
        Ok(o) => {
            let left = (o.expires_at - Utc::now()).to_std().unwrap_or_default();
            let left = std::time::Duration::from_secs(left.as_secs());
            println!(
                "Logged in to Trino at {} as {}.\nToken cached in {} until {} (in {}{}).",
                settings.trino.url,
                settings.trino.user,
                o.cache_file.display(),
                o.expires_at.format("%Y-%m-%d %H:%M:%S UTC"),
                humantime::format_duration(left),
                if o.from_jwt {
                    ", from the token's exp claim"
                } else {
                    ", trino.oauth2_token_lifetime"
                }
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            // The token server's answer is in the error: inert on the terminal.
            eprintln!("floe: login failed: {}", sanitize(&e.to_string()));
            ExitCode::from(1)
        }
    }
}

/// What the operator reads on stderr. The URL stands alone on its line (easy to copy);
/// on a terminal it is also an OSC 8 hyperlink.
pub fn describe(e: &LoginEvent, hyperlinks: bool) -> String {
    match e {
        LoginEvent::Open {
            url,
            coordinator,
            user,
            timeout,
        } => {
            // A URL parsed by `url` is percent-encoded: no control character reaches the
            // terminal.
            let shown = if hyperlinks {
                format!("\x1b]8;;{url}\x1b\\{url}\x1b]8;;\x1b\\")
            } else {
                url.to_string()
            };
            format!(
                "Trino at {coordinator} asks for an OAuth2 login (user {user}).\nOpen this URL in a browser, on any machine, and log in:\n\n  {shown}\n\nWaiting up to {} for the login…\n",
                humantime::format_duration(*timeout)
            )
        }
        LoginEvent::Done { .. } => "Login done.\n".to_string(),
        LoginEvent::Failed(why) => format!("Login failed: {}\n", sanitize(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_url_stands_alone_and_is_a_hyperlink_only_on_a_terminal() {
        let e = LoginEvent::Open {
            url: "https://trino.example:8443/oauth2/token/initiate/abc?x=1"
                .parse()
                .unwrap(),
            coordinator: "https://trino.example:8443/".parse().unwrap(),
            user: "carol".into(),
            timeout: Duration::from_secs(300),
        };
        let plain = describe(&e, false);
        assert!(
            plain
                .lines()
                .any(|l| l.trim() == "https://trino.example:8443/oauth2/token/initiate/abc?x=1"),
            "{plain}"
        );
        assert!(plain.contains("Waiting up to 5m"), "{plain}");
        assert!(!plain.contains('\x1b'));
        let linked = describe(&e, true);
        assert!(
            linked.contains(
                "\x1b]8;;https://trino.example:8443/oauth2/token/initiate/abc?x=1\x1b\\https://trino.example:8443/oauth2/token/initiate/abc?x=1\x1b]8;;\x1b\\"
            ),
            "{linked:?}"
        );
    }
}
