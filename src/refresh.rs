//! The refresh as one value: what is queued, what is in flight (each read by its request
//! id) and what each table's verdict rests on. Every path that reads a fleet — the TUI's
//! refresh, `floe check`, `floe serve` — reads it through a [`Refresh`]: a cold start
//! surveys every table and reads the files only of the tables whose files can change
//! their verdict; a steady refresh probes a rotation of the tables (and the ones the
//! coordinator's own record says were written) and reads again only the ones that changed.
//!
//! Whether a refresh is over is derived from what is in flight and queued, never counted:
//! every read sent is in [`Refresh::in_flight`] under its id until its answer comes, and an
//! answer to an id the value does not hold (a superseded read, another profile's) changes
//! nothing. A read is never aborted behind the value's back: the runtime runs each to its
//! answer (a statement ends within the query timeout), and only a profile switch or the
//! end of floe drops them, together with the value. A table's own read started while a
//! refresh reads it too ([`Refresh::reload`]) takes the table over: the older read's answer
//! is still awaited (it ends the refresh's part) but no longer settles the table.
//!
//! Pure: no IO. The reads themselves are [`read::execute`]'s.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::lakehouse::model::TableRef;
use crate::lakehouse::recent_writes::names_table;
use crate::lakehouse::scan::ScanParams;

pub mod drive;
pub mod listing;
mod pass;
pub mod read;
mod record;
mod rotation;
#[cfg(test)]
pub mod testing;
#[cfg(test)]
mod tests;

pub use pass::PassKind;
use pass::{Pass, Queued};
pub use read::{Answer, Read, ReadKind, RequestId};
pub use record::{Records, TableRead, VecRecords, adopt_probe, same_snapshot, settle_read};
pub use rotation::Ledger;

/// How a refresh spends statements: tables per probe, how long after the last full read
/// every table is looked at again whatever its probe says (`None`: never), what the steady
/// refreshes may cost the coordinator, and how many statements run at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefreshPolicy {
    pub probe_batch: usize,
    /// Every table is looked at (probed) this often, give or take a probe batch's wait
    /// (`None`: only when a write through the coordinator names it, or the operator
    /// refreshes).
    pub full_every: Option<Duration>,
    /// What the steady refreshes may cost the coordinator per minute (planning plus task
    /// CPU; `None`: no limit).
    pub budget: Option<Duration>,
    /// Statements a refresh keeps in flight (`max_concurrent_queries`).
    pub reads: usize,
    /// Of those, the slots a cold start's surveys take while file reads wait; the reads
    /// keep at least one (see [`RefreshPolicy::survey_window`]).
    pub survey_slots: usize,
}

/// The slots a cold start's surveys take by default: all but the one read. A survey
/// orders ten tables in the time a file read reads one, so the first CRITICAL rows come
/// sooner when the fleet is surveyed first.
pub const DEFAULT_SURVEY_SLOTS: usize = 3;

/// Tables whose files one statement reads: what a statement costs the coordinator beyond
/// its reads is paid once for them (on Trino 476 ten file reads in one statement cost its
/// process about 40 % less CPU than ten statements), and the first tables of the queue,
/// the worst proved, still go in the first statement.
pub const FILE_BATCH: usize = 10;

/// Seconds the writes read reaches back before the refresh that last read them: the
/// coordinator's clock and floe's need not agree.
pub const WRITES_MARGIN_S: i64 = 60;

impl Default for RefreshPolicy {
    fn default() -> RefreshPolicy {
        RefreshPolicy {
            probe_batch: crate::config::DEFAULT_PROBE_BATCH,
            full_every: Some(crate::config::DEFAULT_FULL_REFRESH),
            budget: Some(crate::config::DEFAULT_COORDINATOR_BUDGET),
            reads: 4,
            survey_slots: DEFAULT_SURVEY_SLOTS,
        }
    }
}

impl RefreshPolicy {
    /// How a refresh spends statements under these settings.
    pub fn of(s: &crate::config::Settings) -> RefreshPolicy {
        RefreshPolicy {
            probe_batch: s.probe_batch,
            full_every: s.full_refresh_every,
            budget: s.coordinator_budget,
            reads: s.max_concurrent_queries,
            ..Default::default()
        }
    }

    /// Survey batches in flight at most, and file reads at most, while a cold start's
    /// surveys last: the surveys never take the last read slot, and take one even of a
    /// single slot (then two statements are in flight).
    pub fn survey_window(&self) -> (usize, usize) {
        let reads = self.reads.max(1);
        let surveys = self.survey_slots.clamp(1, (reads - 1).max(1));
        (surveys, if reads > 1 { reads - surveys } else { 1 })
    }
}

/// What the scheduler needs to know beyond its own state: the clock, the lines the reads
/// count against, and how often the steady refresh runs.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    pub now: DateTime<Utc>,
    pub scan: &'a ScanParams,
    pub refresh_every: Duration,
}

/// A read to send: its id and what it reads.
pub type Request = (RequestId, Read);

/// What an answer did: the reads to send now, the tables it settled (their verdicts are
/// evaluated again), of those the ones whose kept facts changed (what the cache holds:
/// stats, probe, when read), and the end of the refresh when it ended with it.
#[derive(Debug, Default)]
pub struct Step {
    pub reads: Vec<Request>,
    pub settled: Vec<TableRef>,
    pub changed: Vec<TableRef>,
    pub ended: Option<Ended>,
}

/// A refresh that ended: whether it read every table, when it started, and whether its
/// listing failed (then it read nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    pub full: bool,
    pub started: DateTime<Utc>,
    pub listing_failed: bool,
}

/// Where one table stands in the refresh: its read in flight, queued, or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    Reading,
    Queued,
    Idle,
}

/// Reads sent and not answered yet, with the tables each reads and whether it belongs to
/// the refresh in flight.
#[derive(Clone, Debug, PartialEq)]
struct Sent {
    kind: ReadKind,
    tables: Vec<TableRef>,
    of_pass: bool,
}

/// The refresh of one profile's fleet.
#[derive(Clone, Debug, Default)]
pub struct Refresh {
    pub policy: RefreshPolicy,
    /// The connection the reads are sent on (`Conn::epoch`): part of every request id,
    /// so an answer to another profile's read is never taken.
    epoch: u64,
    next_id: u64,
    in_flight: BTreeMap<RequestId, Sent>,
    pass: Option<Pass>,
    /// Refreshes started so far.
    passes: u64,
    /// When every table was last read in full (`None`: never, the next refresh is a full
    /// one). A warm start counts as one: the probe revalidates the cache.
    pub last_full: Option<DateTime<Utc>>,
    /// What floe's reads have cost the coordinator, read at each tick.
    pub ledger: Ledger,
    /// The writes the coordinator finished from this time on are the next refresh's
    /// first reads (`None` until a first refresh ended).
    pub writes_since: Option<DateTime<Utc>>,
    /// When the newest write read so far ended (the coordinator's clock).
    writes_seen: Option<DateTime<Utc>>,
    /// Whether a steady refresh may take the last listing.
    listing: listing::Cadence,
    /// Tables the probe rotation owes, paid in whole batches (`rotation::rotation`).
    probe_credit: f64,
}

impl Refresh {
    /// A refresh for the connection of `epoch`.
    pub fn new(policy: RefreshPolicy, epoch: u64) -> Refresh {
        Refresh {
            policy,
            epoch,
            ..Refresh::default()
        }
    }

    /// Whether a refresh is in flight (its listing, reads or queue).
    pub fn running(&self) -> bool {
        self.pass.is_some()
    }

    /// Whether the refresh in flight reads every table.
    pub fn full(&self) -> bool {
        self.pass.as_ref().is_some_and(|p| p.kind == PassKind::Full)
    }

    /// Refreshes started so far (what a view asks for again once per refresh counts).
    pub fn passes(&self) -> u64 {
        self.passes
    }

    /// Reads in flight, of the refresh and outside it.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether an answer to `id` is awaited.
    pub fn expects(&self, id: RequestId) -> bool {
        self.in_flight.contains_key(&id)
    }

    /// Where `t` stands: read now, queued by the refresh, or neither.
    pub fn standing(&self, t: &TableRef, r: &TableRead) -> Standing {
        if r.owner.is_some_and(|id| self.in_flight.contains_key(&id)) {
            Standing::Reading
        } else if self
            .pass
            .as_ref()
            .is_some_and(|p| !p.listed || p.due.contains(t))
        {
            Standing::Queued
        } else {
            Standing::Idle
        }
    }

    fn id(&mut self) -> RequestId {
        self.next_id += 1;
        RequestId {
            epoch: self.epoch,
            n: self.next_id,
        }
    }

    fn send(&mut self, read: Read, of_pass: bool) -> Request {
        let id = self.id();
        self.in_flight.insert(
            id,
            Sent {
                kind: read.kind(),
                tables: read.tables(),
                of_pass,
            },
        );
        (id, read)
    }

    /// Start a refresh unless one is in flight: a full one (every table surveyed) when
    /// `manual` or none was read in full yet, else a steady one. Its first read is the
    /// listing (`None`: one is in flight).
    pub fn start(
        &mut self,
        now: DateTime<Utc>,
        manual: bool,
        schemas: Vec<String>,
    ) -> Option<Request> {
        if self.pass.is_some() {
            return None;
        }
        let kind = if manual || self.last_full.is_none() {
            self.last_full = Some(now);
            PassKind::Full
        } else {
            PassKind::Steady
        };
        self.passes += 1;
        self.pass = Some(Pass::new(kind, now));
        let reuse = self.listing.reuse(kind, now);
        Some(self.send(
            Read::List {
                schemas,
                relearn: manual,
                reuse,
            },
            true,
        ))
    }

    /// Drop the refresh in flight and every read awaited (a new scope starts over): their
    /// answers, when they come, are no longer taken.
    pub fn abandon(&mut self) {
        self.pass = None;
        self.in_flight.clear();
    }

    /// Read `t` on its own now (a maintenance job ended, a watched run ended): the read
    /// takes the table over from any read of the refresh in flight.
    pub fn reload(&mut self, t: &TableRef, records: &mut impl Records) -> Option<Request> {
        let rec = records.get_mut(t)?;
        let (id, read) = {
            let id = self.id();
            (id, Read::Table(t.clone()))
        };
        rec.owner = Some(id);
        self.in_flight.insert(
            id,
            Sent {
                kind: ReadKind::Table,
                tables: vec![t.clone()],
                of_pass: false,
            },
        );
        Some((id, read))
    }

    /// Take the answer to `id`: apply it to the tables it settles, plan what it makes
    /// due, send what the windows allow, and end the refresh when nothing of it is left.
    /// A listing's answer, or a part of it, carries the tables in the order they are read
    /// (worst known first) and `records` must already hold a record for each. An answer to
    /// an id not awaited changes nothing.
    pub fn answer(
        &mut self,
        id: RequestId,
        answer: Answer,
        records: &mut impl Records,
        ctx: Ctx<'_>,
    ) -> Step {
        let sent = match answer {
            // A part of the listing: the listing itself is still awaited.
            Answer::ListedPart(_) => self.in_flight.get(&id).cloned(),
            _ => self.in_flight.remove(&id),
        };
        let Some(sent) = sent else {
            return Step::default();
        };
        let mut step = Step::default();
        let kept = |r: &TableRead| (r.stats.clone(), r.probe, r.read_at);
        let before: Vec<(TableRef, _)> = sent
            .tables
            .iter()
            .filter_map(|t| records.get(t).map(|r| (t.clone(), kept(r))))
            .collect();
        match answer {
            Answer::Listed(result) => self.listed(result, records, ctx),
            Answer::ListedPart(tables) => self.pass.iter_mut().for_each(|p| p.plan_part(&tables)),
            Answer::Surveyed(results) => {
                for (t, r) in results {
                    self.listing.note(&r);
                    if let Some(rec) = owned(records, &t, id) {
                        let queued = record::take_survey(rec, r, ctx);
                        self.queue_files(&t, queued, &mut step);
                    }
                }
            }
            Answer::Probed(results) => {
                for (t, r) in results {
                    self.listing.note(&r);
                    if let Some(rec) = owned(records, &t, id) {
                        if record::take_probe(rec, r, ctx.now) {
                            step.settled.push(t.clone());
                            self.settle(&t);
                        } else if let Some(p) = &mut self.pass {
                            p.queue(Queued::Survey(t.clone()));
                        }
                    }
                }
            }
            Answer::Files(results) => {
                for (t, r) in results {
                    self.listing.note(&r);
                    if let Some(rec) = owned(records, &t, id) {
                        record::take_stats(rec, r, ctx.now);
                        step.settled.push(t.clone());
                        self.settle(&t);
                    }
                }
            }
            Answer::Table(t, r) => {
                self.listing.note(&r);
                if let Some(rec) = owned(records, &t, id) {
                    record::take_stats(rec, r, ctx.now);
                    step.settled.push(t.clone());
                    self.settle(&t);
                }
            }
            Answer::Written(r) => self.written(r, records, sent.of_pass),
        }
        step.changed = before
            .into_iter()
            .filter(|(t, old)| records.get(t).is_some_and(|r| kept(r) != *old))
            .map(|(t, _)| t)
            .collect();
        step.reads = self.next(records, ctx);
        step.ended = self.end_if_done();
        step
    }

    /// A survey's answer for `t`: its files queued when they can change its verdict (the
    /// most excess files proved first), else it is settled.
    fn queue_files(&mut self, t: &TableRef, queued: Option<u64>, step: &mut Step) {
        step.settled.push(t.clone());
        match (queued, &mut self.pass) {
            (Some(excess), Some(p)) => {
                p.rank.insert(t.clone(), excess);
                p.queue(Queued::Files(t.clone()));
            }
            _ => self.settle(t),
        }
    }

    fn settle(&mut self, t: &TableRef) {
        if let Some(p) = &mut self.pass {
            p.due.remove(t);
        }
    }

    /// The listing's answer: the refresh's plan (every table surveyed, or the rotation
    /// probed and the coordinator's writes read), or its end when the listing failed.
    fn listed(
        &mut self,
        result: Result<Vec<TableRef>, crate::trino::TrinoError>,
        records: &mut impl Records,
        ctx: Ctx<'_>,
    ) {
        let Some(pass) = &mut self.pass else { return };
        pass.listed = true;
        let Ok(order) = result else {
            // What a catalog's part queued is not read either (what is in flight ends).
            pass.failed = true;
            pass.drop_queued();
            self.listing.failed();
            return;
        };
        match pass.kind {
            PassKind::Full => pass.plan_full(&order),
            PassKind::Steady => {
                let owed = &mut self.probe_credit;
                let probe =
                    rotation::rotation(&order, records, &self.policy, &self.ledger, ctx, owed);
                let since = self.writes_since;
                let pass = self.pass.as_mut().expect("planned above");
                pass.plan_steady(&order, probe, self.policy.probe_batch);
                if let Some(since) = since {
                    let read = self.send(Read::Writes { since }, true);
                    let pass = self.pass.as_mut().expect("planned above");
                    pass.writes_asked = Some(read.0.n);
                    pass.early.push(read);
                }
            }
        }
    }

    /// The writes the coordinator finished since the last look: the listed tables they
    /// name are read again in this refresh, without a probe (a write changed them).
    fn written(
        &mut self,
        r: Result<crate::lakehouse::recent_writes::RecentWrites, crate::trino::TrinoError>,
        records: &impl Records,
        of_pass: bool,
    ) {
        let w = match r {
            Ok(w) => w,
            Err(e) => {
                // A coordinator may deny `system.runtime.queries`: the rotation still looks.
                tracing::debug!("recent writes not read: {e}");
                return;
            }
        };
        self.writes_seen = self.writes_seen.max(w.newest);
        let Some(p) = self.pass.as_mut().filter(|_| of_pass) else {
            return;
        };
        let lists = |n: &Vec<String>| p.listing.iter().any(|t| names_table(n, t));
        if !w.created.iter().all(lists) {
            // A table created through this coordinator since the listing.
            self.listing.out_of_date();
        }
        let named: Vec<TableRef> = p
            .listing
            .iter()
            .filter(|t| w.names.iter().any(|n| names_table(n, t)))
            .filter(|t| records.get(t).is_some())
            // A survey or file read sent in a later step than the writes' statement (a
            // probe saw the change first) started after that statement was sent: it is not
            // sent again. A write that ended in between, on a coordinator that started the
            // writes' statement late, is left to the table's next probe.
            .filter(|t| !p.read_after_writes.contains(*t))
            .cloned()
            .collect();
        for t in named {
            p.unprobe(&t);
            p.queue_first(Queued::Survey(t));
        }
    }

    /// The reads the windows allow now (see [`Pass::next`]).
    fn next(&mut self, records: &mut impl Records, ctx: Ctx<'_>) -> Vec<Request> {
        let Some(pass) = &mut self.pass else {
            return Vec::new();
        };
        let mut out = std::mem::take(&mut pass.early);
        let counts = pass::Flying::of(
            self.in_flight
                .values()
                .filter(|s| s.of_pass)
                .map(|s| (s.kind, s.tables.as_slice())),
        );
        let urgent = ctx
            .scan
            .critical_partition_small_files
            .max(ctx.scan.min_small_files);
        let reads = pass.next(&self.policy, counts, urgent, records);
        for read in reads {
            let request = self.send(read, true);
            let covers_writes = !matches!(request.1, Read::Probe(_))
                && self
                    .pass
                    .as_ref()
                    .and_then(|p| p.writes_asked)
                    .is_some_and(|w| request.0.n > w);
            for t in self.in_flight[&request.0].tables.clone() {
                if let Some(p) = self.pass.as_mut().filter(|_| covers_writes) {
                    p.read_after_writes.insert(t.clone());
                }
                if let Some(rec) = records.get_mut(&t) {
                    rec.owner = Some(request.0);
                }
            }
            out.push(request);
        }
        out
    }

    /// The refresh's end, once it is listed, nothing of it is queued and none of its reads
    /// is in flight: the next refresh reads the writes since this one began (with a margin
    /// for the two clocks).
    fn end_if_done(&mut self) -> Option<Ended> {
        let p = self.pass.as_ref()?;
        let flying = self.in_flight.values().any(|s| s.of_pass);
        if !p.listed || flying || !p.empty() {
            return None;
        }
        let p = self.pass.take()?;
        if !p.failed {
            let margin = p.started - chrono::Duration::seconds(WRITES_MARGIN_S);
            self.writes_since = Some(margin).max(self.writes_seen);
        }
        Some(Ended {
            full: p.kind == PassKind::Full,
            started: p.started,
            listing_failed: p.failed,
        })
    }

    /// What floe's statements have cost the coordinator so far (the client's meter): kept
    /// ten minutes.
    pub fn record_cost(&mut self, now: DateTime<Utc>, c: crate::trino::Cost) {
        self.ledger.record(now, c);
    }

    /// The cache a warm start painted stands for a full read: the first refresh
    /// revalidates it by probe, the next full read is due a full interval after `now`, and
    /// the coordinator's writes since the oldest entry was read are read first.
    pub fn warm(&mut self, now: DateTime<Utc>, oldest: Option<DateTime<Utc>>) {
        self.last_full = Some(now);
        self.writes_since = oldest.map(|at| at - chrono::Duration::seconds(WRITES_MARGIN_S));
    }
}

/// `t`'s record when the read `id` is the one that settles it.
fn owned<'r, R: Records>(
    records: &'r mut R,
    t: &TableRef,
    id: RequestId,
) -> Option<&'r mut TableRead> {
    let r = records.get_mut(t).filter(|r| r.owner == Some(id))?;
    r.owner = None;
    Some(r)
}

/// Whether a refresh at `now` reads every table: never read in full yet, or the last full
/// read is `every` old (wall time, however many refreshes probed since).
pub fn full_due(
    last_full: Option<DateTime<Utc>>,
    every: Option<Duration>,
    now: DateTime<Utc>,
) -> bool {
    match (last_full, every) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(at), Some(every)) => (now - at).to_std().is_ok_and(|age| age >= every),
    }
}
