//! The clusters on screen: one [`State`] per profile, each with its own clients, refresh
//! and cache in the runtime, inside a [`Fleet`] that owns only what spans them — with
//! `floe --all` the merged Triage list (every cluster's incidents, worst first, tagged by
//! profile), the header's one line per cluster, and which cluster is in front. A single
//! profile is a fleet of one that merges nothing: every input goes to its State as it
//! comes, and the one event loop serves both.
//!
//! Pure, like the rest of `app`: `update` routes an input to the cluster it is for and
//! returns each effect with the index of the cluster whose runtime must run it, so a
//! mutation asked on a row always runs on that row's profile. Keys go to the cluster in
//! front, whose own State draws and answers its confirmations; a `Drawn` goes to it alone,
//! so a confirmation another cluster holds never takes a `y` it did not show. On the Triage
//! tab the moves of the list (j/k, g/G, pages) move the merged list instead, and bring the
//! row's cluster to the front with its own selection on the row's incident, so Enter, `i`
//! and every next action work there as they do on one cluster.

use crossterm::event::KeyEvent;

use super::action::{Action, Effect};
use super::grid::Grid;
use super::keymap::Command;
use super::state::{Level, Load, Popup, State, Tab};
use crate::health::Severity;

/// A row of the merged Triage list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Row {
    /// `clusters[cluster].triage.incidents[incident]` (an index into the incidents as the
    /// list was last rebuilt: the selection keeps the incident's identity across rebuilds).
    Incident { cluster: usize, incident: usize },
    /// A cluster whose Trino could not be read: its own incident.
    Unreachable { cluster: usize },
}

impl Row {
    pub fn cluster(&self) -> usize {
        match self {
            Row::Incident { cluster, .. } | Row::Unreachable { cluster } => *cluster,
        }
    }
}

pub struct Fleet {
    pub clusters: Vec<State>,
    /// The cluster in front: its tabs are drawn, it takes the keys.
    pub active: usize,
    /// The merged list, worst first.
    pub rows: Vec<Row>,
    pub grid: Grid,
    /// Several clusters merged on one screen (`floe --all`); a single profile is not.
    pub merged: bool,
    /// What the selected row is about, as it was when selected (a cluster's incidents may
    /// be derived again before the list is): the row the next rebuild selects.
    chosen: Option<(usize, Option<super::triage::Key>)>,
}

impl Fleet {
    /// Every profile of `floe --all`, merged on one screen.
    pub fn new(clusters: Vec<State>) -> Fleet {
        let mut f = Fleet {
            clusters,
            active: 0,
            rows: Vec::new(),
            grid: Grid::default(),
            merged: true,
            chosen: None,
        };
        f.rebuild();
        f
    }

    /// One profile: a fleet of one, its State's own screen.
    pub fn single(state: State) -> Fleet {
        Fleet {
            clusters: vec![state],
            active: 0,
            rows: Vec::new(),
            grid: Grid::default(),
            merged: false,
            chosen: None,
        }
    }

    pub fn front(&self) -> &State {
        &self.clusters[self.active]
    }

    /// The severity of a row.
    pub fn severity(&self, r: &Row) -> Severity {
        match r {
            Row::Incident { cluster, incident } => {
                self.clusters[*cluster].triage.incidents[*incident].severity
            }
            Row::Unreachable { .. } => Severity::Unknown,
        }
    }

    /// `[prod-eu] DAG compact_documents failing …` or `[prod-us] Trino unreachable: …`.
    pub fn row_text(&self, r: &Row) -> String {
        let s = &self.clusters[r.cluster()];
        match r {
            Row::Incident { incident, .. } => {
                format!(
                    "[{}] {}",
                    s.conn.profile,
                    s.triage.incidents[*incident].summary()
                )
            }
            Row::Unreachable { .. } => format!(
                "[{}] Trino {} unreachable: {}",
                s.conn.profile,
                s.conn.trino_url,
                unreachable(s).unwrap_or_default()
            ),
        }
    }

    /// The merged list again from every cluster's incidents: worst first, then in
    /// profile order, each cluster's own ranking kept. The selection stays on its
    /// incident (by the incident's identity: a cluster's incidents reorder as it reads).
    pub fn rebuild(&mut self) {
        let prev = self.chosen.clone();
        let mut rows = Vec::new();
        for (c, s) in self.clusters.iter().enumerate() {
            if unreachable(s).is_some() {
                rows.push(Row::Unreachable { cluster: c });
            }
            for i in 0..s.triage.incidents.len() {
                rows.push(Row::Incident {
                    cluster: c,
                    incident: i,
                });
            }
        }
        let sev: Vec<u8> = rows.iter().map(|r| self.severity(r).rank()).collect();
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by(|&a, &b| sev[b].cmp(&sev[a]).then(a.cmp(&b)));
        self.rows = order.into_iter().map(|i| rows[i].clone()).collect();
        self.grid.index = (0..self.rows.len()).collect();
        if self.grid.moved
            && let Some(p) = prev.and_then(|p| self.rows.iter().position(|r| self.identity(r) == p))
        {
            self.grid.selected = p;
        }
        let h = self.front().page_height();
        self.grid.move_by(0, h);
        if self.grid.selected >= self.rows.len() {
            self.grid.selected = self.rows.len().saturating_sub(1);
        }
        self.remember_choice();
    }

    /// Remember what the selected row is about (see [`Fleet::chosen`]).
    fn remember_choice(&mut self) {
        self.chosen = self
            .grid
            .selected_row()
            .and_then(|i| self.rows.get(i).cloned())
            .map(|r| self.identity(&r));
    }

    /// What a row is about, whatever its index: its cluster and its incident's identity.
    fn identity(&self, r: &Row) -> (usize, Option<super::triage::Key>) {
        match r {
            Row::Incident { cluster, incident } => (
                *cluster,
                self.clusters[*cluster]
                    .triage
                    .incidents
                    .get(*incident)
                    .map(super::triage::key),
            ),
            Row::Unreachable { cluster } => (*cluster, None),
        }
    }

    /// `prod-eu ✓ 3 crit · prod-us ✗ unreachable · staging ✓`
    pub fn header(&self) -> String {
        self.clusters
            .iter()
            .map(|s| {
                if unreachable(s).is_some() {
                    return format!("{} ✗ unreachable", s.conn.profile);
                }
                if matches!(super::triage::load(s), Load::Loading | Load::Idle) {
                    return format!("{} … reading", s.conn.profile);
                }
                let count = |sev| {
                    s.triage
                        .incidents
                        .iter()
                        .filter(|i| i.severity == sev)
                        .count()
                };
                let mut t = format!("{} ✓", s.conn.profile);
                for (n, label) in [
                    (count(Severity::Critical), "crit"),
                    (count(Severity::Warning), "warn"),
                ] {
                    if n > 0 {
                        t.push_str(&format!(" {n} {label}"));
                    }
                }
                t
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }

    /// Bring the selected row's cluster to the front, its Triage selection on the row's
    /// incident.
    fn follow_selection(&mut self) {
        let Some(row) = self
            .grid
            .selected_row()
            .and_then(|i| self.rows.get(i).cloned())
        else {
            return;
        };
        let tab = self.front().tab;
        self.active = row.cluster();
        let s = &mut self.clusters[self.active];
        s.tab = tab;
        if let Row::Incident { incident, .. } = row
            && let Some(pos) = s.triage.grid.index.iter().position(|&i| i == incident)
        {
            s.triage.grid.selected = pos;
            s.triage.grid.moved = pos > 0;
            let h = s.page_height();
            s.triage.grid.ensure_visible(h);
        }
    }
}

/// Why a cluster's Trino could not be read, when nothing of it could.
pub fn unreachable(s: &State) -> Option<String> {
    if !s.tables.rows.is_empty() {
        return None;
    }
    match (&s.tables.load, &s.conn.info_error) {
        (Load::Failed(e), _) => Some(e.to_string()),
        (_, Some(e)) if s.conn.info.is_none() => Some(e.clone()),
        _ => None,
    }
}

/// What the fleet is given: an input for every cluster (keys, ticks, signals), or a
/// result for one.
#[derive(Debug)]
pub enum FleetAction {
    Input(Action),
    Cluster(usize, Action),
}

/// Apply an action; the effects to run, each with the cluster whose runtime runs it.
pub fn update(f: &mut Fleet, a: FleetAction) -> Vec<(usize, Effect)> {
    if !f.merged {
        // A fleet of one: every input and result is its State's, as it comes.
        let a = match a {
            FleetAction::Input(a) | FleetAction::Cluster(_, a) => a,
        };
        return tagged(0, super::update::update(&mut f.clusters[0], a));
    }
    let input = matches!(a, FleetAction::Input(_));
    let fx = match a {
        FleetAction::Cluster(c, a) if c < f.clusters.len() => tagged(c, f.cluster_update(c, a)),
        FleetAction::Cluster(..) => Vec::new(),
        FleetAction::Input(Action::Key(ev, at)) => on_key(f, ev, at),
        // What the operator sees is the front cluster's screen: only it was drawn.
        FleetAction::Input(a @ Action::Drawn(_)) => {
            let c = f.active;
            tagged(c, f.cluster_update(c, a))
        }
        FleetAction::Input(Action::Resize(w, h)) => {
            let mut fx = Vec::new();
            for c in 0..f.clusters.len() {
                fx.extend(tagged(c, f.cluster_update(c, Action::Resize(w, h))));
            }
            let h = f.front().page_height();
            f.grid.ensure_visible(h);
            fx
        }
        FleetAction::Input(a) => {
            let mut fx = Vec::new();
            for c in 0..f.clusters.len() {
                fx.extend(tagged(c, f.cluster_update(c, a.clone())));
            }
            fx
        }
    };
    if input {
        // Every cluster's incidents as they are now, whatever tab it was left on (the
        // merged list and the header show them all): derived again at a key or a tick,
        // not for each of a thousand tables' results.
        for s in &mut f.clusters {
            if s.triage.dirty {
                super::triage::rebuild(s);
            }
        }
    }
    f.rebuild();
    // Until the operator moves, the top row (the worst incident) is the one in front.
    let s = f.front();
    if !f.grid.moved && s.tab == Tab::Triage && s.popup.is_none() && s.prompt.is_none() {
        f.follow_selection();
    }
    fx
}

/// What runs on the clusters other than `front` (jobs, Airflow writes), one line each,
/// tagged by profile: what quitting asks about beside the front's own.
fn busy_elsewhere(f: &Fleet, front: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (c, s) in f.clusters.iter().enumerate().filter(|(c, _)| *c != front) {
        for j in s.jobs.list.iter().filter(|j| j.running()) {
            out.push(format!("[{}] {}", s.conn.profile, j.line(s.now)));
        }
        for w in &s.airflow_writes {
            out.push(format!("[{}] Airflow write {w}", s.conn.profile));
        }
        let _ = c;
    }
    out
}

impl Fleet {
    fn cluster_update(&mut self, c: usize, a: Action) -> Vec<Effect> {
        super::update::update(&mut self.clusters[c], a)
    }

    /// Whether floe should leave: the front cluster's `q` (its jobs asked about there),
    /// or every cluster told to (SIGTERM).
    pub fn quit(&self) -> bool {
        self.front().quit || self.clusters.iter().all(|s| s.quit)
    }
}

fn tagged(c: usize, fx: Vec<Effect>) -> Vec<(usize, Effect)> {
    fx.into_iter().map(|e| (c, e)).collect()
}

/// The Triage tab's moves go to the merged list while nothing is open over it; every
/// other key goes to the front cluster. A switch of tab keeps the cluster in front.
fn on_key(f: &mut Fleet, ev: KeyEvent, at: std::time::Instant) -> Vec<(usize, Effect)> {
    let c = f.active;
    let s = &f.clusters[c];
    let free = s.prompt.is_none() && s.popup.is_none() && s.tab == Tab::Triage;
    let cmd = s
        .keymap
        .lookup(s.tab.layer(), &ev)
        .filter(|_| free && s.triage.jumped.is_none());
    let h = s.page_height();
    let page = h.max(1) as isize;
    let moved = match cmd {
        Some(Command::Down) => Some(1),
        Some(Command::Up) => Some(-1),
        Some(Command::HalfDown) => Some(page / 2),
        Some(Command::HalfUp) => Some(-page / 2),
        Some(Command::PageDown) => Some(page),
        Some(Command::PageUp) => Some(-page),
        Some(Command::Top) => {
            f.grid.top(h);
            Some(0)
        }
        Some(Command::Bottom) => {
            f.grid.bottom(h);
            Some(0)
        }
        _ => None,
    };
    if let Some(d) = moved {
        f.grid.move_by(d, h);
        f.remember_choice();
        f.follow_selection();
        return Vec::new();
    }
    if free
        && cmd == Some(Command::Enter)
        && matches!(
            f.grid.selected_row().and_then(|i| f.rows.get(i)),
            Some(Row::Unreachable { .. })
        )
    {
        // Nothing to open: the row's line is its evidence.
        return Vec::new();
    }
    // Quitting asks about every cluster's jobs and Airflow writes, not the front's alone.
    let others = busy_elsewhere(f, c);
    f.clusters[c].elsewhere = others;
    let quitting = f.clusters[c].quit;
    let mut fx = tagged(c, f.cluster_update(c, Action::Key(ev, at)));
    if !quitting && f.clusters[c].quit {
        // Left with the front's answer: the others' jobs are cancelled as its were.
        for o in (0..f.clusters.len()).filter(|&o| o != c) {
            fx.extend(tagged(o, f.cluster_update(o, Action::Leave)));
        }
        return fx;
    }
    let fx: Vec<Effect> = fx.into_iter().map(|(_, e)| e).collect();
    let (to_open, fx): (Vec<_>, Vec<_>) = fx.into_iter().partition(|e| {
        matches!(e, Effect::SwitchProfile(name)
            if f.clusters.iter().enumerate().any(|(j, s)| j != c && s.conn.profile == *name))
    });
    if let Some(Effect::SwitchProfile(name)) = to_open.first() {
        bring_to_front(f, name);
    }
    tagged(c, fx)
}

/// `:profile NAME` for a cluster the fleet reads already: that cluster comes to the front
/// (its first row selected on the Triage list), instead of a second reading of it in the
/// place of the one in front.
fn bring_to_front(f: &mut Fleet, name: &str) {
    let Some(j) = f.clusters.iter().position(|s| s.conn.profile == name) else {
        return;
    };
    if let Some(pos) = f.rows.iter().position(|r| r.cluster() == j) {
        f.grid.selected = pos;
        f.grid.moved = true;
        f.grid.ensure_visible(f.front().page_height());
        f.remember_choice();
        f.follow_selection();
    } else {
        let tab = f.front().tab;
        f.active = j;
        f.clusters[j].tab = tab;
    }
    f.clusters[j].set_status(
        Level::Info,
        format!("cluster {name} in front (floe --all reads it already)"),
    );
}

/// Whether a popup of the front cluster is open (the fleet's list is under it).
pub fn popup_open(f: &Fleet) -> bool {
    matches!(
        f.front().popup,
        Some(Popup::Confirm(_) | Popup::ConfirmDag(_))
    )
}

#[cfg(test)]
mod tests;
