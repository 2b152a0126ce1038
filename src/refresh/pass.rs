//! One refresh's plan: the tables still to survey, the probe batches still to send, the
//! file reads still to start (the most excess files proved first), and which of them a
//! free slot takes next. What is in flight is the [`super::Refresh`]'s; a pass only
//! queues.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use chrono::{DateTime, Utc};

use super::{FILE_BATCH, ReadKind, Records, RefreshPolicy, Request};
use crate::lakehouse::model::TableRef;
use crate::lakehouse::queries::FileItem;
use crate::lakehouse::summary::SURVEY_BATCH;

use super::read::Read;

/// What a refresh reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassKind {
    /// Every table surveyed; the files of those whose files can change their verdict.
    Full,
    /// The coordinator's writes, a rotation of the tables probed; the written and the
    /// changed ones surveyed again.
    Steady,
}

/// A table's next read in a pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Queued {
    Survey(TableRef),
    Files(TableRef),
}

/// The refresh's reads in flight, by kind.
#[derive(Clone, Debug, Default)]
pub(super) struct Flying {
    pub surveys: usize,
    pub files: usize,
    pub probes: usize,
    /// Tables read on their own.
    pub tables: usize,
    /// Survey statements in flight per catalog.
    pub surveying: BTreeMap<String, usize>,
}

impl Flying {
    /// What the pass's reads in flight (each its kind and tables) add up to.
    pub fn of<'a>(sent: impl Iterator<Item = (ReadKind, &'a [TableRef])>) -> Flying {
        let mut f = Flying::default();
        for (kind, tables) in sent {
            match kind {
                ReadKind::Survey => {
                    f.surveys += 1;
                    for c in tables.iter().map(|t| &t.catalog).collect::<HashSet<_>>() {
                        *f.surveying.entry(c.clone()).or_default() += 1;
                    }
                }
                ReadKind::Files => f.files += 1,
                ReadKind::Probe => f.probes += 1,
                ReadKind::Table => f.tables += 1,
                ReadKind::List | ReadKind::Writes => {}
            }
        }
        f
    }
}

#[derive(Clone, Debug)]
pub(super) struct Pass {
    pub kind: PassKind,
    pub started: DateTime<Utc>,
    /// The listing answered.
    pub listed: bool,
    /// The listing failed: nothing more is read.
    pub failed: bool,
    /// The listed tables, in the order they are read.
    pub listing: Vec<TableRef>,
    /// Tables to survey, the next first.
    surveys: VecDeque<TableRef>,
    /// Tables a part of the listing planned before the whole of it came.
    planned: HashSet<TableRef>,
    /// Probe batches to send, the next first.
    probes: VecDeque<Vec<TableRef>>,
    /// Tables whose files are to be read, the next first.
    files: VecDeque<TableRef>,
    /// Excess files each surveyed table is proved to hold: the order of the file reads.
    pub rank: HashMap<TableRef, u64>,
    /// Tables the pass has still to settle (what the screen marks as being refreshed).
    pub due: HashSet<TableRef>,
    /// Reads sent with the plan, given out by the next step.
    pub early: Vec<Request>,
    /// The request number of the coordinator's recent writes, when they are asked.
    pub writes_asked: Option<u64>,
    /// Tables whose survey or file read was sent after the writes were asked: a write the
    /// writes name is already in what those read (never read twice for it).
    pub read_after_writes: HashSet<TableRef>,
}

impl Pass {
    pub fn new(kind: PassKind, started: DateTime<Utc>) -> Pass {
        Pass {
            kind,
            started,
            listed: false,
            failed: false,
            listing: Vec::new(),
            surveys: VecDeque::new(),
            planned: HashSet::new(),
            probes: VecDeque::new(),
            files: VecDeque::new(),
            rank: HashMap::new(),
            due: HashSet::new(),
            early: Vec::new(),
            writes_asked: None,
            read_after_writes: HashSet::new(),
        }
    }

    /// Nothing left to send.
    pub fn empty(&self) -> bool {
        self.surveys.is_empty()
            && self.probes.is_empty()
            && self.files.is_empty()
            && self.early.is_empty()
    }

    /// Every listed table surveyed, in the listing's order (worst known first); those a
    /// part of the listing planned already keep their place (and, once read, stay read).
    pub fn plan_full(&mut self, order: &[TableRef]) {
        self.listing = order.to_vec();
        let planned = std::mem::take(&mut self.planned);
        for t in order.iter().filter(|t| !planned.contains(*t)) {
            self.surveys.push_back(t.clone());
            self.due.insert(t.clone());
        }
    }

    /// A full pass's tables of one catalog, listed while another's listing is awaited:
    /// surveyed now, in the order given. A steady pass waits for the whole listing (its
    /// rotation is planned over every table); a part after it changes nothing.
    pub fn plan_part(&mut self, tables: &[TableRef]) {
        if self.kind != PassKind::Full || self.listed {
            return;
        }
        for t in tables {
            if self.planned.insert(t.clone()) {
                self.surveys.push_back(t.clone());
                self.due.insert(t.clone());
            }
        }
    }

    /// Nothing queued is sent any more (the listing failed).
    pub fn drop_queued(&mut self) {
        for t in self.surveys.drain(..).chain(self.files.drain(..)) {
            self.due.remove(&t);
        }
        self.probes.clear();
    }

    /// The rotation's tables probed, `batch` a statement.
    pub fn plan_steady(&mut self, order: &[TableRef], probe: Vec<TableRef>, batch: usize) {
        self.listing = order.to_vec();
        self.due = probe.iter().cloned().collect();
        self.probes = probe
            .chunks(batch.max(1))
            .map(<[TableRef]>::to_vec)
            .collect();
    }

    /// Queue a table's next read (once: a table queued already keeps its place).
    pub fn queue(&mut self, q: Queued) {
        match q {
            Queued::Survey(t) => {
                if !self.surveys.contains(&t) {
                    self.due.insert(t.clone());
                    self.surveys.push_back(t);
                }
            }
            Queued::Files(t) => {
                if !self.files.contains(&t) {
                    self.due.insert(t.clone());
                    self.files.push_back(t);
                    let rank = &self.rank;
                    rank_queue(&mut self.files, rank);
                }
            }
        }
    }

    /// Queue a table's next read ahead of the others (a write named it).
    pub fn queue_first(&mut self, q: Queued) {
        if let Queued::Survey(t) = q {
            self.surveys.retain(|x| *x != t);
            self.due.insert(t.clone());
            self.surveys.push_front(t);
        }
    }

    /// Take `t` out of the probe batches not sent yet.
    pub fn unprobe(&mut self, t: &TableRef) {
        for b in &mut self.probes {
            b.retain(|x| x != t);
        }
        self.probes.retain(|b| !b.is_empty());
    }

    /// The tables of the probe batches not sent yet.
    #[cfg(test)]
    pub fn probes_left(&self) -> Vec<TableRef> {
        self.probes.iter().flatten().cloned().collect()
    }

    /// Whether the head of the file queue is read while surveys remain: a table whose
    /// proved small files could fill a CRITICAL partition.
    fn urgent_queued(&self, urgent: u64) -> bool {
        self.files
            .front()
            .is_some_and(|t| self.rank.get(t).is_some_and(|&r| r >= urgent))
    }

    /// The reads the windows allow now, given what of the pass is in flight.
    pub fn next(
        &mut self,
        policy: &RefreshPolicy,
        flying: Flying,
        urgent: u64,
        records: &impl Records,
    ) -> Vec<Read> {
        match self.kind {
            PassKind::Full => self.next_full(policy, flying, urgent, records),
            PassKind::Steady => self.next_steady(policy, flying, records),
        }
    }

    /// A full pass: while surveys remain, only a table whose proved small files could fill
    /// a CRITICAL partition has its files read (alone, in the reads' slots: the screen's
    /// first answer); the others wait for the surveys to end and go [`FILE_BATCH`] tables
    /// a statement, every slot taken. Surveys take their share of the slots while file
    /// reads wait, every slot while none does.
    fn next_full(
        &mut self,
        policy: &RefreshPolicy,
        mut f: Flying,
        urgent: u64,
        records: &impl Records,
    ) -> Vec<Read> {
        let mut out = Vec::new();
        let surveying = !self.surveys.is_empty() || f.surveys > 0;
        let window = if surveying {
            policy.survey_window().1
        } else {
            policy.reads.max(1)
        };
        while f.files < window {
            let size = match self.files.front() {
                Some(t) if surveying && self.rank.get(t).is_some_and(|&r| r >= urgent) => 1,
                _ if surveying => break,
                Some(_) => FILE_BATCH,
                None => break,
            };
            match self.files_batch(size, records) {
                Some(read) => {
                    out.push(read);
                    f.files += 1;
                }
                None if self.files.is_empty() => break,
                None => {}
            }
        }
        let slots = if !self.urgent_queued(urgent) && f.files == 0 {
            policy.reads.max(1)
        } else {
            policy.survey_window().0
        };
        while f.surveys < slots && !self.surveys.is_empty() {
            out.push(self.survey_batch(&mut f));
        }
        out
    }

    /// A steady pass: every slot but one may probe; a free slot reads the files of the
    /// tables whose surveys asked for them first, then reads the written and changed
    /// tables again, then probes. A table changed alone is read on its own (its survey,
    /// target and manifests in one statement, its files dated in another: two statements
    /// where the batched reads take four); several are surveyed together, ten a
    /// statement, and their files read together.
    fn next_steady(
        &mut self,
        policy: &RefreshPolicy,
        mut f: Flying,
        records: &impl Records,
    ) -> Vec<Read> {
        let reads = policy.reads.max(1);
        let probe_slots = reads.saturating_sub(1).max(1);
        let mut out = Vec::new();
        while f.surveys + f.files + f.probes + f.tables < reads {
            if !self.files.is_empty() {
                if let Some(read) = self.files_batch(FILE_BATCH, records) {
                    out.push(read);
                    f.files += 1;
                }
            } else if self.surveys.len() == 1 {
                let t = self.surveys.pop_front().expect("one");
                out.push(Read::Table(t));
                f.tables += 1;
            } else if !self.surveys.is_empty() {
                out.push(self.survey_batch(&mut f));
            } else if !self.probes.is_empty() && f.probes < probe_slots {
                out.push(Read::Probe(self.probes.pop_front().expect("not empty")));
                f.probes += 1;
            } else {
                break;
            }
        }
        out
    }

    /// The next survey statement: up to [`SURVEY_BATCH`] queued tables of one catalog, the
    /// one furthest below its share of the slots once given this one: a catalog's share
    /// follows its share of the tables still queued, so of four slots a catalog of 200
    /// tables takes three beside one of 100, where taking turns gave each two. Of those
    /// tied, the one with the most tables still queued, then the first queued. A catalog
    /// with tables queued and no survey in flight comes before any share: its last
    /// tables never wait behind the others' slots. A catalog whose statements are slow
    /// (a Delta Lake log on a far object store: 4-9 s a statement in the lab, where an
    /// Iceberg survey takes 0.3 s) then never holds every slot while another's tables
    /// wait behind it, nor more than its share of the work while the other has more to
    /// survey.
    fn survey_batch(&mut self, f: &mut Flying) -> Read {
        let mut queued: BTreeMap<&str, usize> = BTreeMap::new();
        for t in &self.surveys {
            *queued.entry(t.catalog.as_str()).or_default() += 1;
        }
        let flying = |c: &str| f.surveying.get(c).copied().unwrap_or(0);
        // (statements in flight once given one more, tables queued): the smaller the first
        // over the second, the further below its share. Tables in flight are not counted:
        // a slow catalog's would keep its share up while the other's tables wait.
        let need = |c: &str| (flying(c) + 1, queued[c]);
        let catalog = self
            .surveys
            .iter()
            .map(|t| t.catalog.as_str())
            .min_by(|a, b| {
                let ((fa, ra), (fb, rb)) = (need(a), need(b));
                (flying(a) > 0)
                    .cmp(&(flying(b) > 0))
                    .then((fa * rb).cmp(&(fb * ra)))
                    .then(queued[b].cmp(&queued[a]))
            })
            .expect("a table queued")
            .to_string();
        let (mut batch, mut rest) = (Vec::new(), VecDeque::new());
        for t in self.surveys.drain(..) {
            if batch.len() < SURVEY_BATCH && t.catalog == catalog {
                batch.push(t);
            } else {
                rest.push_back(t);
            }
        }
        self.surveys = rest;
        f.surveys += 1;
        *f.surveying.entry(catalog).or_default() += 1;
        Read::Survey(batch)
    }

    /// Up to `size` queued tables whose files are read in one statement, each with what
    /// its survey proved; a table with nothing proved any more (a read of its own settled
    /// it since) is no longer read. `None` when none of those taken is left to read.
    fn files_batch(&mut self, size: usize, records: &impl Records) -> Option<Read> {
        let mut batch = Vec::new();
        while batch.len() < size {
            let Some(t) = self.files.pop_front() else {
                break;
            };
            match records.get(&t).and_then(|r| r.bound.clone()) {
                Some(b) => batch.push(FileItem::of(t, b)),
                None => {
                    self.due.remove(&t);
                }
            }
        }
        (!batch.is_empty()).then_some(Read::Files(batch))
    }
}

/// The order of the file reads not started yet: the most excess files first (where small
/// files pile up, and the CRITICAL tables are), then the tables not ranked yet in their
/// order, then those ranked empty. Stable: equal ranks keep the order they had.
pub fn rank_queue(queue: &mut VecDeque<TableRef>, rank: &HashMap<TableRef, u64>) {
    queue.make_contiguous().sort_by_key(|t| match rank.get(t) {
        Some(&n) if n > 0 => (0, std::cmp::Reverse(n)),
        None => (1, std::cmp::Reverse(0)),
        Some(_) => (2, std::cmp::Reverse(0)),
    });
}
