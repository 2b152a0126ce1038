//! How often a refresh lists the fleet's tables with a statement. A full refresh (a cold
//! start, `r`, the hourly full read, every `floe check`) always lists; a steady refresh
//! takes the connection's last listing while it is younger than [`LISTING_EVERY`]. The
//! listing is one of the four statements a steady refresh sends over an unchanged fleet
//! (with the change probe, the coordinator's writes and a table's query history): every
//! statement costs the coordinator 35-45 ms of its process CPU whatever it reads, so a
//! listing every fifth minute instead of every minute is most of a statement a minute
//! saved, all day, on every fleet.
//!
//! A table created through this coordinator is listed by the refresh after the one that
//! reads its `CREATE` in the coordinator's writes (a write that names no listed table).
//! A table any read cannot find any more (dropped) makes the next refresh list. One
//! created by another engine is listed within [`LISTING_EVERY`], and at once with `r`.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::pass::PassKind;

/// The longest a steady refresh goes on the last listing.
pub const LISTING_EVERY: Duration = Duration::from_secs(300);

/// When the fleet was last listed by a statement, and whether something since says the
/// listing is out of date.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cadence {
    listed_at: Option<DateTime<Utc>>,
    stale: bool,
}

impl Cadence {
    /// Whether a refresh of `kind` starting at `now` may take the last listing: a steady
    /// one, a listing younger than [`LISTING_EVERY`], nothing said it is out of date. One
    /// that lists is taken as listed at `now` (a failed listing is forgotten by
    /// [`Cadence::failed`]).
    pub fn reuse(&mut self, kind: PassKind, now: DateTime<Utc>) -> bool {
        let young = self
            .listed_at
            .and_then(|at| (now - at).to_std().ok())
            .is_some_and(|age| age < LISTING_EVERY);
        let reuse = kind == PassKind::Steady && young && !self.stale;
        if !reuse {
            self.listed_at = Some(now);
            self.stale = false;
        }
        reuse
    }

    /// The listing failed: the next refresh lists again.
    pub fn failed(&mut self) {
        self.listed_at = None;
    }

    /// Something the refresh read names a table the listing lacks, or lists one that is
    /// gone: the next refresh lists.
    pub fn out_of_date(&mut self) {
        self.stale = true;
    }

    /// A table's read answered `r`: a table the server cannot find is gone from the
    /// listing.
    pub fn note<T>(&mut self, r: &Result<T, crate::trino::TrinoError>) {
        if r.as_ref().is_err_and(|e| e.name() == "TABLE_NOT_FOUND") {
            self.out_of_date();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    #[test]
    fn a_steady_refresh_lists_every_fifth_minute() {
        let mut c = Cadence::default();
        assert!(!c.reuse(PassKind::Full, at(0)), "a cold start lists");
        assert!(c.reuse(PassKind::Steady, at(60)));
        assert!(c.reuse(PassKind::Steady, at(299)));
        assert!(!c.reuse(PassKind::Steady, at(300)), "five minutes on");
        assert!(
            c.reuse(PassKind::Steady, at(360)),
            "counted from that listing"
        );
    }

    #[test]
    fn a_full_refresh_always_lists() {
        let mut c = Cadence::default();
        assert!(!c.reuse(PassKind::Full, at(0)));
        assert!(!c.reuse(PassKind::Full, at(10)));
        assert!(c.reuse(PassKind::Steady, at(20)));
    }

    #[test]
    fn a_steady_refresh_lists_when_nothing_was_listed_or_the_listing_failed() {
        let mut c = Cadence::default();
        assert!(!c.reuse(PassKind::Steady, at(0)), "nothing listed yet");
        c.failed();
        assert!(
            !c.reuse(PassKind::Steady, at(60)),
            "the last listing failed"
        );
        assert!(c.reuse(PassKind::Steady, at(120)));
    }

    #[test]
    fn a_listing_said_out_of_date_is_not_reused_once() {
        let mut c = Cadence::default();
        assert!(!c.reuse(PassKind::Full, at(0)));
        c.out_of_date();
        assert!(
            !c.reuse(PassKind::Steady, at(60)),
            "a new table was written"
        );
        assert!(c.reuse(PassKind::Steady, at(120)), "listed at 60");
    }
}
