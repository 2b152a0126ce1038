//! The connection: the coordinator's `/v1/info` (the header), its OAuth2 login (the status
//! line), and a switch to another profile (new clients, its cached state, a first refresh).

use super::action::{Effect, ProfileView};
use super::state::{Level, State};
use super::tables;
use crate::config::ConfigError;
use crate::trino::{LoginEvent, ServerInfo, TrinoError};

/// Results about the connection itself.
// A profile's view is the big variant, and a rare one: `Action` is as large already for
// `TablesMsg`'s stats, so boxing it would save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum ConnectionMsg {
    /// The coordinator's `/v1/info`.
    ServerInfo(Result<ServerInfo, TrinoError>),
    /// Trino's OAuth2 login: a URL to open in a browser, then its end.
    Login(LoginEvent),
    /// Another profile was loaded (or could not be).
    ProfileSwitched(Result<ProfileView, SwitchError>),
}

/// Why floe stays on its profile: the other's configuration, or its Trino client.
#[derive(Clone, Debug, thiserror::Error)]
pub enum SwitchError {
    #[error("profile {profile}: {source}")]
    Config {
        profile: String,
        source: Box<ConfigError>,
    },
    #[error("profile {profile}: {source}")]
    Client {
        profile: String,
        source: Box<TrinoError>,
    },
}

pub fn update(s: &mut State, msg: ConnectionMsg) -> Vec<Effect> {
    match msg {
        ConnectionMsg::ServerInfo(r) => {
            on_server_info(s, r);
            Vec::new()
        }
        ConnectionMsg::Login(e) => {
            on_login(s, e);
            Vec::new()
        }
        ConnectionMsg::ProfileSwitched(Ok(p)) => on_switched(s, p),
        ConnectionMsg::ProfileSwitched(Err(e)) => {
            s.set_status(Level::Error, e.to_string());
            Vec::new()
        }
    }
}

fn on_server_info(s: &mut State, r: Result<ServerInfo, TrinoError>) {
    match r {
        Ok(info) => {
            s.conn.info = Some(info);
            s.conn.info_at = Some(s.now);
            s.conn.info_error = None;
        }
        Err(e) => {
            s.conn.info_error = Some(e.to_string());
            s.set_status(Level::Error, format!("Trino: {e}"));
        }
    }
}

fn on_login(s: &mut State, e: LoginEvent) {
    match e {
        // Warn: it stays until the login ends (Info fades after a few seconds).
        LoginEvent::Open { url, timeout, .. } => s.set_status(
            Level::Warn,
            format!(
                "Trino login: open {url} in a browser (waiting up to {})",
                humantime::format_duration(timeout)
            ),
        ),
        LoginEvent::Done { expires_at } => s.set_status(
            Level::Info,
            format!(
                "Trino login done; token valid until {}",
                expires_at.format("%H:%M UTC")
            ),
        ),
        LoginEvent::Failed(why) => s.set_status(Level::Error, format!("Trino: {why}")),
    }
}

/// The new profile's settings on screen, its last known state painted until its first
/// refresh (started here) confirms it.
fn on_switched(s: &mut State, mut p: ProfileView) -> Vec<Effect> {
    let profile = p.profile.clone();
    let cached = std::mem::take(&mut p.cached);
    s.apply_profile(p);
    let revalidating = tables::warm_start(s, cached);
    let mut said = vec![format!("switched to profile {profile}")];
    said.extend(s.conn.warnings.iter().cloned());
    said.extend(revalidating.clone());
    let level = if s.conn.warnings.is_empty() && revalidating.is_none() {
        Level::Info
    } else {
        Level::Warn
    };
    s.set_status(level, said.join("; "));
    super::update::refresh_all(s)
}
