//! Everything the screen shows, and nothing that does IO.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::action::ProfileView;
use super::grid::Grid;
use super::keymap::Keymap;
use super::partitions::PartitionsView;
use super::prompt::Prompt;
use super::snapshots::SnapshotsView;
use super::tables::TablesView;
use crate::health::HealthConfig;
use crate::lakehouse::model::TableRef;
use crate::trino::ServerInfo;

pub use crate::tab::Tab;

/// Where a view's data stands.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Load {
    #[default]
    Idle,
    Loading,
    Loaded,
    /// The last attempt failed; rows already shown stay.
    Failed(LoadError),
}

/// Why a view's read failed: the server's error, as its client gave it (its Display names
/// what failed and where).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Trino(#[from] crate::trino::TrinoError),
    #[error(transparent)]
    Airflow(#[from] crate::airflow::AirflowError),
}

impl Load {
    pub fn is_loading(&self) -> bool {
        matches!(self, Load::Loading)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Popup {
    Help,
    /// The health breakdown of a table.
    Health(TableRef),
    /// A maintenance plan awaiting `y`.
    Confirm(Box<super::maintenance::Confirm>),
    /// Maintenance jobs and the outcome of each statement.
    Queue,
    /// A write to Airflow awaiting `y`.
    ConfirmDag(Box<super::dags::DagConfirm>),
    /// Quitting while jobs run: `y` cancels them on Trino first, `n` stays.
    QuitJobs {
        /// Drawn on screen since it opened (only then does it take a `y`).
        shown: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// What a status message is about, where something later must find it again (its
/// text is for the operator, not for matching).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusKind {
    /// Anything said once: it stays until replaced, Esc, or (INFO) it ages out.
    Note,
    /// The table list shows cached stats while the refresh revalidates them: cleared
    /// once every table is in.
    CachedStats,
    /// The watched DAG run's progress, said again at each poll.
    Watch,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StatusMsg {
    pub level: Level,
    pub kind: StatusKind,
    pub text: String,
    pub at: DateTime<Utc>,
}

/// The smallest terminal floe draws its screen in.
pub const MIN_WIDTH: u16 = 20;
pub const MIN_HEIGHT: u16 = 5;

/// What the header shows about the connection.
#[derive(Clone, Debug, Default)]
pub struct Conn {
    pub profile: String,
    pub trino_url: String,
    pub info: Option<ServerInfo>,
    pub info_at: Option<DateTime<Utc>>,
    pub info_error: Option<String>,
    pub airflow_url: Option<String>,
    pub airflow_version: Option<String>,
    /// Connection warnings (TLS verification off): a badge in the header.
    pub warnings: Vec<String>,
    /// Which connection this is: one more at each profile switch. A result drafted for a
    /// confirmation carries the epoch it was asked on and is dropped on any other.
    pub epoch: u64,
}

pub struct State {
    pub now: DateTime<Utc>,
    pub tab: Tab,
    /// Opened on Triage by `start_tab = "auto"`: until the first refresh is in (or the
    /// operator changes tabs), it moves to Tables when there is no incident.
    pub auto_start: bool,
    pub conn: Conn,
    pub readonly: bool,
    pub keymap: Keymap,
    pub health: HealthConfig,
    pub schemas: Vec<String>,
    pub tables: TablesView,
    pub partitions: PartitionsView,
    pub snapshots: SnapshotsView,
    pub popup: Option<Popup>,
    pub prompt: Option<Prompt>,
    pub status: Option<StatusMsg>,
    pub frozen: bool,
    pub refresh_every: Duration,
    pub last_refresh: Option<DateTime<Utc>>,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    pub no_color: bool,
    /// Draw ASCII only (a locale that is not UTF-8, `--ascii`, `ascii = true`).
    pub ascii: bool,
    pub quit: bool,
    pub profiles: Vec<String>,
    pub airflow_configured: bool,
    pub jobs: super::maintenance::Jobs,
    pub dags: super::dags::DagsView,
    pub triage: super::triage::TriageView,
    /// The recent queries that read a table, per table.
    pub queries: super::query_history::QueriesView,
    /// `[[maintenance]]` mappings of the profile.
    pub maintenance: Vec<crate::config::MaintenanceMapping>,
    /// When the key being handled was read from the terminal (`Action::Key`): what a
    /// confirmation's dwell is measured against.
    pub key_at: Option<std::time::Instant>,
    /// Airflow writes sent and not answered yet (what `y` on a DAG or connection write
    /// sent), whatever the profile: quitting asks while any is in flight.
    pub airflow_writes: Vec<String>,
    /// How long a confirmation is on screen before it takes its answer (`confirm_dwell`).
    pub confirm_dwell: std::time::Duration,
    /// When the open confirmation was first drawn (the dwell counts from there).
    pub popup_shown_at: Option<std::time::Instant>,
    /// The text `y` copied last.
    pub copied: Option<String>,
    /// Rows the help popup is scrolled down by (when its keys do not fit the screen).
    pub help_scroll: usize,
    /// One of several clusters on screen (`floe --all`): the tab bar and confirmations
    /// name its profile.
    pub fleet_member: bool,
    /// What runs on the other clusters of `floe --all` (their jobs and Airflow writes,
    /// tagged by profile), as the fleet last told it: quitting asks about them too.
    pub elsewhere: Vec<String>,
}

impl State {
    pub fn new(now: DateTime<Utc>) -> State {
        State {
            now,
            tab: Tab::Tables,
            auto_start: false,
            conn: Conn::default(),
            readonly: false,
            keymap: Keymap::default(),
            health: HealthConfig::default(),
            schemas: Vec::new(),
            tables: TablesView::default(),
            partitions: PartitionsView::default(),
            snapshots: SnapshotsView::default(),
            popup: None,
            prompt: None,
            airflow_writes: Vec::new(),
            confirm_dwell: std::time::Duration::ZERO,
            popup_shown_at: None,
            status: None,
            frozen: false,
            refresh_every: Duration::from_secs(60),
            last_refresh: None,
            size: (80, 24),
            no_color: false,
            ascii: false,
            quit: false,
            profiles: Vec::new(),
            airflow_configured: false,
            jobs: super::maintenance::Jobs::default(),
            queries: Default::default(),
            dags: super::dags::DagsView::default(),
            triage: super::triage::TriageView::default(),
            maintenance: Vec::new(),
            key_at: None,
            copied: None,
            help_scroll: 0,
            fleet_member: false,
            elsewhere: Vec::new(),
        }
    }

    /// Whether a confirm popup may take its answer: it was drawn since it opened, and the
    /// key was read `confirm_dwell` after that frame (both facts of the input, not of a
    /// frame counter: a popup that was never drawn — on a cluster never in front, in a
    /// terminal too small — takes nothing; a key typed ahead over a slow link before the
    /// question was on screen is not its answer).
    pub fn popup_seen(&mut self, shown: bool, confirming: bool) -> bool {
        if !shown {
            return false;
        }
        if !confirming {
            return true;
        }
        let (Some(drawn), Some(key)) = (self.popup_shown_at, self.key_at) else {
            return false;
        };
        let on_screen = key.saturating_duration_since(drawn);
        if on_screen < self.confirm_dwell {
            self.set_status(
                Level::Warn,
                format!(
                    "key ignored: the question had been on screen for {} ms only when it was typed (confirm_dwell {} ms); press it again",
                    on_screen.as_millis(),
                    self.confirm_dwell.as_millis()
                ),
            );
            return false;
        }
        true
    }

    /// Whether a frame of this size draws the screen (popups included); below it only
    /// "terminal too small" is drawn, and no confirmation counts as seen.
    pub fn drawable(&self) -> bool {
        self.size.0 >= MIN_WIDTH && self.size.1 >= MIN_HEIGHT
    }

    /// Rows of the body's list (terminal height minus header, tabs, column header,
    /// status and footer lines).
    pub fn page_height(&self) -> usize {
        let job = usize::from(self.jobs.visible(self.now).is_some());
        (self.size.1 as usize)
            .saturating_sub(super::layout::CHROME_ROWS + self.extra_rows() + job)
            .max(1)
    }

    /// Rows the current tab spends above its list (the Snapshots chart, the Triage detail).
    pub fn extra_rows(&self) -> usize {
        (self.tab.ops().extra_rows)(self)
    }

    pub fn grid_mut(&mut self) -> Option<&mut Grid> {
        (self.tab.ops().grid_mut)(self)
    }

    pub fn grid(&self) -> Option<&Grid> {
        (self.tab.ops().grid)(self)
    }

    pub fn refresh_in_flight(&self) -> bool {
        self.tables.load.is_loading() || self.tables.refresh.running()
    }

    /// Seconds until the next automatic refresh (None when frozen).
    pub fn next_refresh_in(&self) -> Option<i64> {
        if self.frozen {
            return None;
        }
        let last = self.last_refresh?;
        // Saturating: an interval too long for a date is "not before the end of time".
        let every = chrono::Duration::from_std(self.refresh_every).unwrap_or(chrono::Duration::MAX);
        let Some(due) = last.checked_add_signed(every) else {
            return Some(i64::MAX);
        };
        Some(due.signed_duration_since(self.now).num_seconds().max(0))
    }

    /// A new profile: its connection and settings, every view empty again, no popup
    /// (a confirm drawn for the old profile must not run on the new one). Jobs stay: each
    /// runs on to its end on the connection it started on.
    pub fn apply_profile(&mut self, p: ProfileView) {
        if !matches!(self.popup, Some(Popup::QuitJobs { .. })) {
            self.popup = None;
        }
        // A prompt of the profile left (where its connection should point, a retention for
        // its tables) would act on the new profile's same-named object.
        if !matches!(
            self.prompt,
            Some(Prompt::Filter(_) | Prompt::Command(_)) | None
        ) {
            self.prompt = None;
        }
        self.conn = Conn {
            profile: p.profile,
            trino_url: p.trino_url,
            airflow_url: p.airflow_url,
            warnings: p.warnings,
            epoch: self.conn.epoch + 1,
            ..Conn::default()
        };
        self.readonly = p.readonly;
        self.keymap = self.keymap.clone().with_readonly(p.readonly);
        self.refresh_every = p.refresh;
        self.schemas = p.schemas;
        self.health = p.health;
        self.airflow_configured = self.conn.airflow_url.is_some();
        self.maintenance = p.maintenance;
        self.dags = super::dags::DagsView::default();
        self.tables = TablesView {
            refresh: crate::refresh::Refresh::new(self.tables.refresh.policy, self.conn.epoch),
            ..TablesView::default()
        };
        self.partitions = PartitionsView::default();
        self.snapshots = SnapshotsView::default();
        self.triage = super::triage::TriageView::default();
        self.queries = Default::default();
        self.tab = Tab::Tables;
    }

    pub fn set_status(&mut self, level: Level, text: impl Into<String>) {
        self.set_status_of(StatusKind::Note, level, text);
    }

    /// An INFO line from something that runs on its own (a watched run's poll): it never
    /// replaces a warning or an error said since by anything else, which stays until it
    /// is read (Esc) or replaced by something louder or asked for.
    pub fn set_status_quietly(&mut self, kind: StatusKind, text: impl Into<String>) {
        if self
            .status
            .as_ref()
            .is_some_and(|m| m.level > Level::Info && m.kind != kind)
        {
            return;
        }
        self.set_status_of(kind, Level::Info, text);
    }

    /// A status message of `kind`, for something that must find it again.
    pub fn set_status_of(&mut self, kind: StatusKind, level: Level, text: impl Into<String>) {
        self.status = Some(StatusMsg {
            level,
            kind,
            text: text.into(),
            at: self.now,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::action::Action;
    use crate::app::testing::{loaded, t0};
    use crate::app::update::update;

    /// An interval too long for chrono (a config value, or `:refresh 300000y` before it was
    /// bounded) must not panic on the next tick: the refresh is simply never due.
    #[test]
    fn ticks_saturate_on_huge_intervals() {
        for every in [
            Duration::from_secs(300_000 * 365 * 86_400),
            Duration::from_secs(u64::MAX),
            Duration::MAX,
        ] {
            let mut s = loaded();
            s.refresh_every = every;
            s.last_refresh = Some(t0());
            let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(1)));
            assert!(fx.is_empty(), "{fx:?}");
            assert!(s.next_refresh_in().unwrap() > 1_000_000_000);
        }
    }
}
