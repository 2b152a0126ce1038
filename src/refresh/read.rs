//! A refresh's reads: what each asks of the lakehouse, what it answers, and the one
//! function that runs a read against a [`Lakehouse`] — for the TUI's runtime and for the
//! headless refreshes (`floe check`, `floe serve`) alike.

use chrono::{DateTime, Utc};

use crate::lakehouse::model::{TableRef, TableStats};
use crate::lakehouse::probe::Probe;
use crate::lakehouse::queries::{FileItem, Lakehouse, OnPart};
use crate::lakehouse::recent_writes::RecentWrites;
use crate::lakehouse::summary::Survey;
use crate::trino::TrinoError;

/// A read's id: the connection it was sent on and its number there. Never reused for the
/// life of a connection; another connection's ids never match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId {
    pub epoch: u64,
    pub n: u64,
}

/// What a read asks.
#[derive(Clone, Debug, PartialEq)]
pub enum Read {
    /// The fleet's tables (a manual refresh learns the tables' layouts again; `reuse`: the
    /// connection's last listing stands, no statement is sent, see [`super::listing`]).
    List {
        schemas: Vec<String>,
        relearn: bool,
        reuse: bool,
    },
    /// The survey of a batch (one metadata-only statement; split when it fails).
    Survey(Vec<TableRef>),
    /// The change probe of a batch (one statement; split when it fails).
    Probe(Vec<TableRef>),
    /// The files of surveyed tables, each with what its survey proved.
    Files(Vec<FileItem>),
    /// One table's whole read: its survey, then its files where they can change its
    /// verdict.
    Table(TableRef),
    /// The writes the coordinator finished after `since` (its own record of them).
    Writes { since: DateTime<Utc> },
}

/// A read's kind, which decides the window it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadKind {
    List,
    Survey,
    Probe,
    Files,
    Table,
    Writes,
}

/// What a read answered.
// One table's stats, inline: boxing them would only add an allocation to the commonest
// answer of a table's own read.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Answer {
    Listed(Result<Vec<TableRef>, TrinoError>),
    /// The tables of a catalog whose listing answered while another catalog's is still
    /// awaited (a profile of several catalogs): a cold start surveys them at once, and
    /// the listing's read stays in flight until its [`Answer::Listed`], which lists every
    /// catalog's tables again.
    ListedPart(Vec<TableRef>),
    Surveyed(Vec<(TableRef, Result<Survey, TrinoError>)>),
    Probed(Vec<(TableRef, Result<Probe, TrinoError>)>),
    Files(Vec<(TableRef, Result<TableStats, TrinoError>)>),
    Table(TableRef, Result<TableStats, TrinoError>),
    Written(Result<RecentWrites, TrinoError>),
}

impl Read {
    pub fn kind(&self) -> ReadKind {
        match self {
            Read::List { .. } => ReadKind::List,
            Read::Survey(_) => ReadKind::Survey,
            Read::Probe(_) => ReadKind::Probe,
            Read::Files(_) => ReadKind::Files,
            Read::Table(_) => ReadKind::Table,
            Read::Writes { .. } => ReadKind::Writes,
        }
    }

    /// What the read is, in a few words (what a check that ran out of time was still
    /// doing).
    pub fn describe(&self) -> String {
        let some = |what: &str, t: &[TableRef]| match t {
            [one] => format!("{what} of {one}"),
            [first, ..] => format!("{what} of {} tables ({first}, …)", t.len()),
            [] => what.to_string(),
        };
        match self {
            Read::List { .. } => "listing the tables".into(),
            Read::Survey(t) => some("the survey", t),
            Read::Probe(t) => some("the change probe", t),
            Read::Files(_) => some("the file read", &self.tables()),
            Read::Table(t) => format!("the health queries of {t}"),
            Read::Writes { .. } => "the coordinator's recent writes".into(),
        }
    }

    /// The tables the read settles.
    pub fn tables(&self) -> Vec<TableRef> {
        match self {
            Read::Survey(t) | Read::Probe(t) => t.clone(),
            Read::Files(items) => items.iter().map(|i| i.table.clone()).collect(),
            Read::Table(t) => vec![t.clone()],
            Read::List { .. } | Read::Writes { .. } => Vec::new(),
        }
    }
}

impl Answer {
    /// The answer of a read of `kind` over `tables` that failed as a whole with `e` (its
    /// work panicked): each of its tables fails with it.
    pub fn failed(kind: ReadKind, tables: Vec<TableRef>, e: TrinoError) -> Answer {
        fn each<T>(
            tables: Vec<TableRef>,
            e: &TrinoError,
        ) -> Vec<(TableRef, Result<T, TrinoError>)> {
            tables.into_iter().map(|t| (t, Err(e.clone()))).collect()
        }
        match kind {
            ReadKind::List => Answer::Listed(Err(e)),
            ReadKind::Survey => Answer::Surveyed(each(tables, &e)),
            ReadKind::Probe => Answer::Probed(each(tables, &e)),
            ReadKind::Files => Answer::Files(each(tables, &e)),
            ReadKind::Table => match tables.into_iter().next() {
                Some(t) => Answer::Table(t, Err(e)),
                None => Answer::Files(Vec::new()),
            },
            ReadKind::Writes => Answer::Written(Err(e)),
        }
    }
}

/// Run `read` against `lake`; `globs` filter the listing (`schema.table` or `table`). A
/// listing of several catalogs tells `on_part` each catalog's tables that come while
/// another's are still awaited, before it answers with all of them.
pub async fn execute(
    lake: &Lakehouse,
    globs: &[String],
    read: Read,
    on_part: OnPart<'_>,
) -> Answer {
    match read {
        Read::List {
            schemas,
            relearn,
            reuse,
        } => {
            if relearn {
                lake.forget_layouts();
            }
            if reuse && let Some(tables) = lake.listed_again(&schemas, globs).await {
                return Answer::Listed(Ok(tables));
            }
            Answer::Listed(lake.discover_in_parts(&schemas, globs, on_part).await)
        }
        Read::Survey(tables) => Answer::Surveyed(lake.survey(&tables).await),
        Read::Probe(tables) => Answer::Probed(lake.probe(&tables).await),
        Read::Files(items) => Answer::Files(lake.files_batch(&items).await),
        Read::Table(t) => {
            let r = lake.table_stats(&t).await;
            Answer::Table(t, r)
        }
        Read::Writes { since } => {
            let mut w = lake.recent_writes(since).await;
            if let Ok(w) = &mut w {
                w.created
                    .retain(|n| crate::lakehouse::recent_writes::in_globs(n, globs));
            }
            Answer::Written(w)
        }
    }
}
