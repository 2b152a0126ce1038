//! floe's state and runtime driven as the event loop drives them.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use floe::app::action::Action;
use floe::app::state::State;
use floe::app::tables::TablesMsg;
use floe::app::update::{refresh, update};
use floe::config;
use floe::health::Severity;
use floe::runtime::{Runtime, initial_state};
use tokio::sync::mpsc;

use crate::lab::Lab;

/// The TUI's state and runtime, driven as its event loop drives them, as one user.
pub(crate) struct Floe {
    pub(crate) state: State,
    pub(crate) dir: PathBuf,
    pub(crate) limit: usize,
    /// The slots a cold start's ranking takes (`FLEET_RANK_SLOTS`).
    pub(crate) rank_slots: usize,
    /// The first CRITICAL row of the last timed cycle, and its place in the listing.
    pub(crate) first_critical: Option<(String, usize)>,
}

impl Floe {
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
            self.state.tables.policy.rank_slots = self.rank_slots;
        }
        self.first_critical = None;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut rt = Runtime::new(settings.clone(), config::Overrides::default(), tx).unwrap();
        let mut critical = None;
        let fx = if start {
            update(&mut self.state, Action::Start)
        } else {
            refresh(&mut self.state, manual)
        };
        rt.run(fx);
        while self.state.refresh_in_flight() {
            let mut a = rx.recv().await.expect("the runtime is alive");
            // The fleet under test: the first `limit` tables the catalog lists.
            if let Action::Tables(TablesMsg::Discovered {
                result: Ok(tables), ..
            }) = &mut a
            {
                tables.truncate(self.limit);
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
}
