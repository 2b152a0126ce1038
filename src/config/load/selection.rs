//! Which clusters a run reads: one profile, or a fleet (`--all`, `all = true`, a group),
//! each of its profiles loaded as if `--profile` named it.

use super::{Env, choose_file, env_nonempty, load_file};
use crate::config::settings::{Dirs, Overrides, Settings};
use crate::config::{At, ConfigError};

/// Which clusters a run reads: one profile, or several at once.
#[derive(Debug)]
pub enum Selection {
    One(Box<Settings>),
    /// Every profile (`--all`, `all = true`) or a group's (`--profile GROUP`), in the
    /// order the file lists them; each resolved as if `--profile` named it.
    Fleet(Vec<Settings>),
}

/// [`load_selection_with`] with the process environment.
pub fn load_selection(over: &Overrides, all: bool) -> Result<Selection, ConfigError> {
    let env = |k: &str| std::env::var(k).ok();
    load_selection_with(over, all, &env, &Dirs::system())
}

/// One profile, or a fleet: `all` (the `--all` flag) reads every profile of the file;
/// `--profile` (or `FLOE_PROFILE`) naming a group reads its members; the file's
/// `all = true` reads every profile unless `--profile` or `--trino` names one cluster.
pub fn load_selection_with(
    over: &Overrides,
    all: bool,
    env: Env,
    dirs: &Dirs,
) -> Result<Selection, ConfigError> {
    match load_each_with(over, all, env, dirs)? {
        Each::One(s) => Ok(Selection::One(s)),
        Each::Fleet(v) => v
            .into_iter()
            .map(|(_, s)| s)
            .collect::<Result<Vec<_>, _>>()
            .map(Selection::Fleet),
    }
}

/// The clusters a run reads, a fleet's profiles each resolved on its own: one whose
/// settings cannot be loaded (its secret's variable unset, a failing `password_command`)
/// is its name and its error, beside the others (`floe check --all` checks those).
#[derive(Debug)]
pub enum Each {
    One(Box<Settings>),
    Fleet(Vec<(String, Result<Settings, ConfigError>)>),
}

/// [`load_each_with`] with the process environment.
pub fn load_each(over: &Overrides, all: bool) -> Result<Each, ConfigError> {
    let env = |k: &str| std::env::var(k).ok();
    load_each_with(over, all, &env, &Dirs::system())
}

/// As [`load_selection_with`], a fleet's profiles each loaded on its own.
pub fn load_each_with(
    over: &Overrides,
    all: bool,
    env: Env,
    dirs: &Dirs,
) -> Result<Each, ConfigError> {
    let (file, file_path) = choose_file(over, env, dirs)?;
    let profiles: Vec<String> = file
        .profiles
        .as_ref()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let groups = file.groups.clone().unwrap_or_default();
    for (name, members) in &groups {
        if profiles.contains(name) {
            return Err(ConfigError::GroupIsProfile {
                group: name.clone(),
                file: file_path,
            });
        }
        if let Some(m) = members
            .iter()
            .find(|m| !profiles.contains(m) && m.as_str() != "default")
        {
            return Err(ConfigError::UnknownMember {
                group: name.clone(),
                member: m.clone(),
                file: file_path,
                known: profiles,
            });
        }
    }
    let wanted = over
        .profile
        .clone()
        .or_else(|| env_nonempty(env, "FLOE_PROFILE"));
    let members: Option<Vec<String>> = if all {
        if let Some(p) = &over.profile {
            return Err(ConfigError::AllAndProfile { profile: p.clone() });
        }
        Some(profiles.clone())
    } else if let Some(g) = wanted.as_ref().and_then(|w| groups.get(w)) {
        Some(g.clone())
    } else if file.all == Some(true) && wanted.is_none() && over.trino.is_none() {
        Some(profiles.clone())
    } else {
        None
    };
    let Some(members) = members else {
        return load_file(over, env, dirs, file, file_path).map(|s| Each::One(Box::new(s)));
    };
    if members.is_empty() {
        return Err(ConfigError::NoProfiles { file: file_path });
    }
    // A flag or variable that names one server would point every profile at it.
    let one_server = [
        over.trino.as_ref().map(|_| At::Flag("--trino")),
        over.airflow.as_ref().map(|_| At::Flag("--airflow")),
        env_nonempty(env, "FLOE_TRINO_URL").map(|_| At::Env("FLOE_TRINO_URL".into())),
        env_nonempty(env, "FLOE_AIRFLOW_URL").map(|_| At::Env("FLOE_AIRFLOW_URL".into())),
    ];
    if let Some(at) = one_server.into_iter().flatten().next() {
        return Err(ConfigError::OneServer {
            at: Box::new(at),
            profiles: members,
        });
    }
    Ok(Each::Fleet(
        members
            .into_iter()
            .map(|name| {
                let mut o = over.clone();
                o.profile = Some(name.clone());
                let s = load_file(&o, env, dirs, file.clone(), file_path.clone());
                (name, s)
            })
            .collect(),
    ))
}
