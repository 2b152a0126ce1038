//! A refresh run to its end without a screen (`floe check`, `floe serve`): the reads the
//! [`Refresh`] asks for, each run against the lakehouse as the TUI's runtime runs them,
//! their answers given back as they come, until the refresh ends.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc::UnboundedSender;

use super::read::execute;
use super::{Answer, Ctx, Ended, Read, Refresh, Request, RequestId, VecRecords};
use crate::lakehouse::queries::Lakehouse;
use crate::lakehouse::scan::ScanParams;
use crate::trino::TrinoError;

/// What a headless refresh reads with: the connection, the listing's filters, the lines
/// the reads count against and how often the steady refresh runs.
pub struct Reader<'a> {
    pub lake: &'a Lakehouse,
    pub schemas: Vec<String>,
    pub globs: Vec<String>,
    pub scan: &'a ScanParams,
    pub refresh_every: Duration,
}

type Flying<'f> = FuturesUnordered<Pin<Box<dyn Future<Output = (RequestId, Answer)> + Send + 'f>>>;

/// Run one refresh of `records` to its end: `manual` reads every table, else the refresh
/// is full when nothing was read in full yet (a cold start) and steady after. `watch`
/// is told each read as it is sent and holds what it returns until the read's answer
/// (what a check that runs out of time names as still running). The listing's failure
/// is the refresh's; each table's own failure is in its record.
pub async fn drive<G: Send + 'static>(
    refresh: &mut Refresh,
    records: &mut VecRecords,
    r: &Reader<'_>,
    manual: bool,
    now: impl Fn() -> DateTime<Utc>,
    watch: impl Fn(&Read) -> G,
) -> Result<Option<Ended>, TrinoError> {
    let Some(listing) = refresh.start(now(), manual, r.schemas.clone()) else {
        return Ok(None);
    };
    let mut flying: Flying<'_> = FuturesUnordered::new();
    let (parts, mut part) = tokio::sync::mpsc::unbounded_channel();
    let guard = watch(&listing.1);
    push(&mut flying, r, listing, guard, Some(parts));
    let mut listing_failed = None;
    loop {
        // A part of the listing is sent before its whole: taken first.
        let (id, answer) = tokio::select! {
            biased;
            Some(a) = part.recv() => a,
            Some(a) = flying.next() => a,
            else => break,
        };
        match &answer {
            Answer::Listed(Ok(tables)) => records.relist(tables),
            Answer::ListedPart(tables) => records.add(tables),
            Answer::Listed(Err(e)) => listing_failed = Some(e.clone()),
            _ => {}
        }
        let ctx = Ctx {
            now: now(),
            scan: r.scan,
            refresh_every: r.refresh_every,
        };
        let step = refresh.answer(id, answer, records, ctx);
        for read in step.reads {
            let guard = watch(&read.1);
            push(&mut flying, r, read, guard, None);
        }
        if let Some(ended) = step.ended {
            return match listing_failed {
                Some(e) => Err(e),
                None => Ok(Some(ended)),
            };
        }
    }
    Ok(None)
}

/// Run `read` as one of the reads in flight; `guard` is held until its answer. A listing
/// sends its parts on `parts`.
fn push<'a, G: Send + 'static>(
    flying: &mut Flying<'a>,
    r: &Reader<'a>,
    (id, read): Request,
    guard: G,
    parts: Option<UnboundedSender<(RequestId, Answer)>>,
) {
    let (lake, globs) = (r.lake, r.globs.clone());
    flying.push(Box::pin(async move {
        let on_part = move |tables| {
            if let Some(p) = &parts {
                let _ = p.send((id, Answer::ListedPart(tables)));
            }
        };
        let answer = execute(lake, &globs, read, &on_part).await;
        drop(guard);
        (id, answer)
    }));
}
