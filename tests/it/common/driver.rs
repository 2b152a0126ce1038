//! floe's screen state and runtime driven as its event loop drives them, without a
//! terminal: a refresh started, its effects run against the lab, their answers given back
//! until the refresh ends. The subjects that count what a refresh sends, or race it with
//! other work, read the fleet through this.

use std::time::Duration;

use floe::app::action::{Action, Effect};
use floe::app::state::State;
use floe::app::update::{refresh, update};
use floe::config;
use floe::lakehouse::model::TableRef;
use floe::runtime::{Runtime, initial_state};
use tokio::sync::mpsc;

use super::{lab, user};

pub struct Driver {
    pub user: String,
    pub state: State,
    pub rt: Runtime,
    pub rx: mpsc::UnboundedReceiver<Action>,
    pub dir: std::path::PathBuf,
}

/// What a driver reads: its Trino, its tables, how it refreshes.
pub struct Setup<'a> {
    /// The schema the tables are in (the listing is scoped to it).
    pub schema: &'a str,
    pub globs: &'a [String],
    pub probe_batch: usize,
    /// `full_refresh_every` (`"1m"` at the 60 s refresh: the rotation looks at every table
    /// each refresh; `"0s"`: only the tables written through the coordinator).
    pub every: &'a str,
    /// The coordinator (the real Trino's URL, or the fault proxy's in front of it).
    pub url: String,
}

impl Driver {
    /// A floe of its own (its user, config, cache in a directory of its own) reading the
    /// scratch schema's tables the `globs` name.
    pub async fn new(name: &str, globs: &[String], batch: usize, every: &str) -> Driver {
        Driver::with(
            name,
            Setup {
                schema: "scratch",
                globs,
                probe_batch: batch,
                every,
                url: lab().trino_url(),
            },
        )
        .await
    }

    pub async fn with(name: &str, setup: Setup<'_>) -> Driver {
        let user = user(name);
        let dir = std::env::temp_dir().join(format!("floe-fleet-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        let tables = setup
            .globs
            .iter()
            .map(|g| format!("{g:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        std::fs::write(
            &path,
            format!(
                "refresh = \"60s\"\nprobe_batch = {}\nfull_refresh_every = {:?}\n[trino]\nurl = {:?}\nuser = {user:?}\ncatalog = \"iceberg\"\nschemas = [{:?}]\ntables = [{tables}]\n",
                setup.probe_batch, setup.every, setup.url, setup.schema,
            ),
        )
        .unwrap();
        let over = config::Overrides {
            config: Some(path),
            ..Default::default()
        };
        let mut settings = config::load(&over).unwrap();
        settings.stats_cache = dir.join("stats.json");
        let state = initial_state(&settings, true).unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let rt = Runtime::new(settings, over, tx).unwrap();
        Driver {
            user,
            state,
            rt,
            rx,
            dir,
        }
    }

    /// Start a refresh (the first one: the launch), its effects run.
    pub fn start(&mut self, first: bool, manual: bool) {
        let fx = if first {
            update(&mut self.state, Action::Start)
        } else {
            refresh(&mut self.state, manual)
        };
        self.rt.run(fx);
    }

    /// The next answer applied; the effects it asked for, run. `None` when none came in
    /// a minute.
    pub async fn step(&mut self) -> Option<Vec<Effect>> {
        let a = tokio::time::timeout(Duration::from_secs(60), self.rx.recv())
            .await
            .ok()??;
        let fx = update(&mut self.state, a);
        self.rt.run(fx.clone());
        Some(fx)
    }

    /// Drive the refresh in flight to its end, then let results still on their way (the
    /// server's info) land.
    pub async fn finish(&mut self) {
        while self.state.refresh_in_flight() {
            self.step().await.expect("the refresh ends");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        while let Ok(a) = self.rx.try_recv() {
            let fx = update(&mut self.state, a);
            self.rt.run(fx);
        }
    }

    /// One refresh to its end.
    pub async fn cycle(&mut self, first: bool, manual: bool) {
        self.start(first, manual);
        self.finish().await;
    }

    /// The data files the table's verdict rests on.
    pub fn files_of(&self, t: &TableRef) -> Option<u64> {
        let row = self.state.tables.row(t)?;
        row.read.stats.as_ref().map(|s| s.data_files)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
