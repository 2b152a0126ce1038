//! floe's state and runtime driven as the event loop drives them.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use floe::app::action::Action;
use floe::app::state::State;
use floe::app::tables::TablesMsg;
use floe::app::update::{refresh, update};
use floe::config;
use floe::health::Severity;
use floe::lakehouse::model::TableRef;
use floe::refresh::Answer;
use floe::runtime::{Runtime, initial_state};
use tokio::sync::mpsc;

use crate::lab::Lab;

/// What a warm launch showed: its first frame and when a changed table was read again.
pub(crate) struct Warm {
    pub(crate) first_frame: Duration,
    pub(crate) painted: usize,
    pub(crate) reread: Option<Duration>,
}

/// The TUI's state and runtime, driven as its event loop drives them, as one user.
pub(crate) struct Floe {
    pub(crate) state: State,
    pub(crate) dir: PathBuf,
    /// The fleet under test: what floe lists beyond it is left out.
    pub(crate) fleet: Arc<HashSet<TableRef>>,
    /// The slots a cold start's ranking takes (`FLEET_RANK_SLOTS`).
    pub(crate) survey_slots: usize,
    /// The first CRITICAL row of the last timed cycle, and its place in the listing.
    pub(crate) first_critical: Option<(String, usize)>,
    /// The runtime of the refreshes after a launch, as one user: an open floe keeps its
    /// connection (and what it learned: the listing, the formats) from one refresh to the
    /// next; a launch starts a new one.
    live: Option<Live>,
}

struct Live {
    user: String,
    rt: Runtime,
    rx: mpsc::UnboundedReceiver<Action>,
}

impl Floe {
    /// A floe of its own (its config and cache in `dir`) over the tables of `fleet`.
    pub(crate) fn new(dir: PathBuf, fleet: &[TableRef]) -> Floe {
        Floe {
            state: State::new(chrono::Utc::now()),
            dir,
            fleet: Arc::new(fleet.iter().cloned().collect()),
            survey_slots: crate::env_num(
                "FLEET_RANK_SLOTS",
                floe::refresh::DEFAULT_SURVEY_SLOTS as u64,
            ) as usize,
            first_critical: None,
            live: None,
        }
    }

    pub(crate) fn settings(&self, lab: &Lab, user: &str, concurrency: usize) -> config::Settings {
        let path = self.dir.join(format!("{user}.toml"));
        std::fs::write(
            &path,
            format!(
                "max_concurrent_queries = {concurrency}\n[trino]\nurl = {:?}\nuser = {user:?}\ncatalog = {:?}\n",
                lab.url(),
                lab.catalog()
            ),
        )
        .unwrap();
        let mut s = config::load(&config::Overrides {
            config: Some(path),
            ..Default::default()
        })
        .unwrap();
        s.stats_cache = self.dir.join("stats.json");
        s
    }

    /// The fleet under test: of what floe lists, the tables of the fleet.
    fn limit_listing(&self, a: &mut Action) {
        limit_listing(&self.fleet, a)
    }

    /// One refresh as `user` to its end; its wall time.
    pub(crate) async fn cycle(
        &mut self,
        lab: &Lab,
        user: &str,
        concurrency: usize,
        start: bool,
        manual: bool,
    ) -> Duration {
        self.cycle_timed(lab, user, concurrency, start, manual)
            .await
            .0
    }

    /// One refresh as `user` to its end: its wall time from launch (state built, the
    /// runtime started) and the time until a CRITICAL row was first on screen.
    pub(crate) async fn cycle_timed(
        &mut self,
        lab: &Lab,
        user: &str,
        concurrency: usize,
        start: bool,
        manual: bool,
    ) -> (Duration, Option<Duration>) {
        let settings = self.settings(lab, user, concurrency);
        let t0 = Instant::now();
        if start {
            self.state = initial_state(&settings, true).unwrap();
            self.state.tables.refresh.policy.survey_slots = self.survey_slots;
        }
        self.first_critical = None;
        if start || self.live.as_ref().is_none_or(|l| l.user != user) {
            let (tx, rx) = mpsc::unbounded_channel();
            let rt = Runtime::new(settings.clone(), config::Overrides::default(), tx).unwrap();
            let user = user.to_string();
            self.live = Some(Live { user, rt, rx });
        }
        let fleet = self.fleet.clone();
        let Live { rt, rx, .. } = self.live.as_mut().expect("started above");
        let mut critical = None;
        let fx = if start {
            update(&mut self.state, Action::Start)
        } else {
            refresh(&mut self.state, manual)
        };
        rt.run(fx);
        let trace = std::env::var_os("FLEET_TRACE").is_some();
        while self.state.refresh_in_flight() {
            let mut a = rx.recv().await.expect("the runtime is alive");
            limit_listing(&fleet, &mut a);
            if trace {
                eprintln!("{:>8.3} s {}", t0.elapsed().as_secs_f64(), traced(&a));
            }
            let fx = update(&mut self.state, a);
            rt.run(fx);
            if critical.is_none()
                && let Some(at) = self
                    .state
                    .tables
                    .rows
                    .iter()
                    .position(|r| r.status() == Some(Severity::Critical))
            {
                critical = Some(t0.elapsed());
                self.first_critical = Some((self.state.tables.rows[at].table.to_string(), at));
            }
        }
        let wall = t0.elapsed();
        // The cache write of the refresh's end.
        tokio::time::sleep(Duration::from_millis(300)).await;
        while let Ok(a) = rx.try_recv() {
            let fx = update(&mut self.state, a);
            rt.run(fx);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        (wall, critical)
    }

    /// A launch over the stats cache: the first frame drawn from it (as the TUI draws it
    /// before its first refresh), then that first refresh to its end, watching `changed`
    /// (written since the cache was written) until its row is read again.
    pub(crate) async fn warm_launch(&mut self, lab: &Lab, user: &str, changed: &TableRef) -> Warm {
        let settings = self.settings(lab, user, 4);
        let t0 = Instant::now();
        let mut st = initial_state(&settings, true).unwrap();
        let entries = floe::cache::load(
            &settings.stats_cache,
            &settings.profile,
            settings.trino.url.as_str(),
        );
        floe::app::tables::warm_start(&mut st, entries);
        st.size = (160, 48);
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 48)).unwrap();
        term.draw(|f| floe::ui::draw(f, &st)).unwrap();
        let first_frame = t0.elapsed();
        let painted = st
            .tables
            .rows
            .iter()
            .filter(|r| r.stats().is_some())
            .count();
        let cached_id = st
            .tables
            .row(changed)
            .and_then(|r| r.stats())
            .and_then(|s| s.snapshot_id);
        self.state = st;
        self.state.tables.refresh.policy.survey_slots = self.survey_slots;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut rt = Runtime::new(settings.clone(), config::Overrides::default(), tx).unwrap();
        let fx = update(&mut self.state, Action::Start);
        rt.run(fx);
        let mut reread = None;
        while self.state.refresh_in_flight() {
            let mut a = rx.recv().await.expect("the runtime is alive");
            self.limit_listing(&mut a);
            let fx = update(&mut self.state, a);
            rt.run(fx);
            if reread.is_none()
                && let Some(r) = self.state.tables.row(changed)
                && !r.read.cached
                && r.stats().and_then(|s| s.snapshot_id) != cached_id
            {
                reread = Some(t0.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        while let Ok(a) = rx.try_recv() {
            let fx = update(&mut self.state, a);
            rt.run(fx);
        }
        Warm {
            first_frame,
            painted,
            reread,
        }
    }
}

/// What an action is, in a few words (`FLEET_TRACE`).
fn traced(a: &Action) -> String {
    let Action::Tables(TablesMsg::Answer { answer, .. }) = a else {
        return format!("{:.60}", format!("{a:?}"));
    };
    match answer {
        Answer::Listed(result) => {
            format!("listed {}", result.as_ref().map_or(0, Vec::len))
        }
        Answer::ListedPart(tables) => format!(
            "listed {} of {}",
            tables.len(),
            tables.first().map(|t| t.catalog.as_str()).unwrap_or("?")
        ),
        Answer::Surveyed(results) => format!(
            "surveyed {}..",
            results
                .first()
                .map(|(t, _)| t.to_string())
                .unwrap_or_default()
        ),
        Answer::Files(results) => format!(
            "files read: {}",
            results
                .iter()
                .map(|(t, _)| t.table.clone())
                .collect::<Vec<_>>()
                .join(" ")
        ),
        other => format!("{:.60}", format!("{other:?}")),
    }
}

/// The fleet under test: of what floe lists, the tables of `fleet`, in floe's order.
fn limit_listing(fleet: &HashSet<TableRef>, a: &mut Action) {
    if let Action::Tables(TablesMsg::Answer {
        answer: Answer::Listed(Ok(tables)) | Answer::ListedPart(tables),
        ..
    }) = a
    {
        tables.retain(|t| fleet.contains(t));
    }
}
