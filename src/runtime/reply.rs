//! One reply per effect. An effect's task is its work and the one function that turns the
//! work's result into the `Action`s sent back; [`spawn_reply`] takes the permit, runs the
//! work and sends that reply — with the work's result, or, when the work panicked (a bug,
//! or a server answer nobody foresaw), with the panic as the effect's own error type, so a
//! row never stays loading forever and no effect has its failure written twice.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::FutureExt;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::airflow::AirflowError;
use crate::app::action::Action;
use crate::trino::TrinoError;

/// An error an effect's work can fail with, and what a panic in that work becomes.
pub(super) trait FromPanic {
    fn from_panic(text: String) -> Self;
}

impl FromPanic for TrinoError {
    fn from_panic(text: String) -> Self {
        TrinoError::Internal(text)
    }
}

impl FromPanic for AirflowError {
    fn from_panic(text: String) -> Self {
        AirflowError::Internal(text)
    }
}

impl FromPanic for crate::mutation::draft::PlanError {
    fn from_panic(text: String) -> Self {
        crate::mutation::draft::PlanError::Read {
            what: "what the plan needs".into(),
            source: Box::new(TrinoError::Internal(text)),
        }
    }
}

impl FromPanic for crate::mutation::run::RunError {
    fn from_panic(text: String) -> Self {
        crate::mutation::run::RunError::Internal(text)
    }
}

impl FromPanic for crate::mutation::audit::WriteError {
    fn from_panic(text: String) -> Self {
        crate::mutation::audit::WriteError::Internal(text)
    }
}

impl FromPanic for crate::app::export::ExportError {
    fn from_panic(text: String) -> Self {
        crate::app::export::ExportError::Internal(text)
    }
}

/// What a reply sends: one action, none, or several in order.
pub(super) trait Replies {
    fn into_actions(self) -> Vec<Action>;
}

impl Replies for Action {
    fn into_actions(self) -> Vec<Action> {
        vec![self]
    }
}

impl Replies for Option<Action> {
    fn into_actions(self) -> Vec<Action> {
        self.into_iter().collect()
    }
}

impl Replies for Vec<Action> {
    fn into_actions(self) -> Vec<Action> {
        self
    }
}

/// Run `work` (after a permit of `pool`, when given) and `send` what `reply` makes of its
/// result. A panic in the work is logged and replied as `E::from_panic`; a task aborted
/// (its slot taken by a newer request) sends nothing.
pub(super) fn spawn_reply<T, E, W, R, A>(
    pool: Option<Arc<Semaphore>>,
    work: W,
    reply: R,
    send: impl Fn(Action) + Send + 'static,
) -> JoinHandle<()>
where
    T: Send + 'static,
    E: FromPanic + Send + 'static,
    W: Future<Output = Result<T, E>> + Send + 'static,
    R: FnOnce(Result<T, E>) -> A + Send + 'static,
    A: Replies,
{
    tokio::spawn(async move {
        let _permit = match pool {
            Some(p) => Some(p.acquire_owned().await),
            None => None,
        };
        let result = AssertUnwindSafe(work)
            .catch_unwind()
            .await
            .unwrap_or_else(|payload| {
                let text = message(payload);
                tracing::error!("an effect panicked: {text}");
                Err(E::from_panic(text))
            });
        for a in reply(result).into_actions() {
            send(a);
        }
    })
}

/// Whether `read` is the one `FLOE_TEST_PANIC=effect` (a test-only switch, see
/// `terminal::test_panic`) makes panic: the first read of a table's files.
pub(super) fn deliberate(read: &crate::refresh::Read) -> bool {
    static DONE: AtomicBool = AtomicBool::new(false);
    super::terminal::test_panic() == Some("effect")
        && matches!(
            read,
            crate::refresh::Read::Table(_) | crate::refresh::Read::Files(_)
        )
        && !DONE.swap(true, Ordering::Relaxed)
}

/// A panic payload as text (what `panic!` was given).
pub(super) fn message(payload: Box<dyn Any + Send>) -> String {
    let text = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panicked".to_string()
    };
    crate::text::one_line(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::state::Level;
    use crate::app::tables::TablesMsg;
    use crate::app::testing::{loaded, tref};
    use crate::app::update::update;
    use crate::lakehouse::model::TableStats;
    use tokio::sync::mpsc;

    fn sender(tx: mpsc::UnboundedSender<Action>) -> impl Fn(Action) + Send + 'static {
        move |a| {
            let _ = tx.send(a);
        }
    }

    /// The incident's third table is still loading in `loaded()`; its stats work panics.
    #[tokio::test]
    async fn a_panicking_effect_fails_its_row_and_the_refresh_ends() {
        let mut s = loaded();
        assert!(s.refresh_in_flight(), "one table still loading");
        let (id, table) = (
            crate::app::testing::survey_in_flight(&s),
            tref("audit", "events"),
        );
        let (tx, mut rx) = mpsc::unbounded_channel();
        let work = async {
            let v: Vec<u64> = Vec::new();
            // An index out of bounds, as a decoding bug would do.
            let _ = v[usize::from(v.is_empty())];
            Ok::<TableStats, TrinoError>(TableStats::default())
        };
        let reply = move |result: Result<TableStats, TrinoError>| {
            let answer = match result {
                Ok(st) => crate::refresh::Answer::Files(vec![(table, Ok(st))]),
                Err(e) => {
                    crate::refresh::Answer::failed(crate::refresh::ReadKind::Survey, vec![table], e)
                }
            };
            Action::Tables(TablesMsg::Answer { id, answer })
        };
        spawn_reply(None, work, reply, sender(tx));
        let action = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
            .await
            .expect("a reply within 5s")
            .expect("a reply");
        update(&mut s, action);
        assert!(!s.refresh_in_flight(), "the refresh ended");
        let row = s
            .tables
            .rows
            .iter()
            .find(|r| r.name.contains("events"))
            .unwrap();
        let err = row.error().map(ToString::to_string).unwrap_or_default();
        assert!(
            err.contains("internal error") && err.contains("index out of bounds"),
            "{err}"
        );
        let status = s.status.as_ref().expect("a status line");
        assert_eq!(status.level, Level::Error);
        assert!(status.text.contains("internal error"), "{}", status.text);
    }

    #[tokio::test]
    async fn an_aborted_effect_sends_nothing() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let work = std::future::pending::<Result<(), TrinoError>>();
        let task = spawn_reply(
            None,
            work,
            |_| Action::Drawn(std::time::Instant::now()),
            sender(tx),
        );
        task.abort();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_reply_is_sent_after_the_permit_and_in_order() {
        let pool = Arc::new(Semaphore::new(1));
        let held = pool.clone().acquire_owned().await.unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let work = async { Ok::<_, AirflowError>(()) };
        spawn_reply(
            Some(pool),
            work,
            |_| vec![Action::Drawn(std::time::Instant::now()), Action::Start],
            sender(tx),
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(rx.try_recv().is_err(), "no reply while the permit is held");
        drop(held);
        assert!(matches!(rx.recv().await, Some(Action::Drawn(_))));
        assert!(matches!(rx.recv().await, Some(Action::Start)));
    }
}
