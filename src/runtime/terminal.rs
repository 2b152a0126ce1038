//! The terminal floe draws on: taken (raw mode, alternate screen, mouse capture when
//! configured) at start, given back on every way out — a normal exit, an error, a panic of
//! the event loop, SIGTERM, SIGHUP, SIGINT, SIGQUIT — and while floe is suspended
//! (ctrl-z or SIGTSTP), then taken again and redrawn whole on SIGCONT.
//!
//! A panic inside an effect (a task on the runtime's worker threads) is not a way out: the
//! effect's error is shown on the rows it was loading, and the panic hook leaves the
//! terminal alone for it (see `panics`).

use std::io::{Stdout, Write, stdout};
use std::sync::OnceLock;

use color_eyre::eyre::WrapErr;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture, KeyCode, KeyEvent, KeyModifiers};
use crossterm::terminal::{EnterAlternateScreen, disable_raw_mode, enable_raw_mode};
use tokio::signal::unix::{Signal, SignalKind, signal};

use super::sgr::SgrFilter;
use crate::ui::caps::Colours;

/// The name of the runtime's worker (and blocking-pool) threads, where effects run.
pub(super) const WORKER_THREAD: &str = "floe-worker";

/// floe's terminal: crossterm over stdout, its colour escapes made fit for the terminal
/// (`sgr`).
pub(super) type Term = ratatui::Terminal<ratatui::backend::CrosstermBackend<SgrFilter<Stdout>>>;

/// Raw mode, the alternate screen, mouse capture when asked, and a panic hook that gives
/// the terminal back (mouse capture included) before the panic is reported.
pub(super) fn enter(mouse: bool, colours: Colours) -> Term {
    // ratatui's hook restores raw mode and the alternate screen, then calls color-eyre's;
    // the terminal it returns writes to stdout unfiltered, so floe draws through its own.
    drop(ratatui::init());
    let terminal = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(SgrFilter::new(
        stdout(),
        colours,
    )))
    .expect("a crossterm terminal on stdout");
    if mouse {
        let _ = crossterm::execute!(stdout(), EnableMouseCapture);
    }
    install_panic_hook(mouse);
    terminal
}

/// Give the terminal back: mouse capture off, cooked mode, the main screen, the cursor.
pub(super) fn leave(mouse: bool) {
    if mouse {
        let _ = crossterm::execute!(stdout(), DisableMouseCapture);
    }
    ratatui::restore();
    let _ = crossterm::execute!(stdout(), crossterm::cursor::Show);
}

fn install_panic_hook(mouse: bool) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if on_worker_thread() {
            // An effect panicked: the runtime turns it into that effect's error. Printing
            // the report or restoring the terminal here would wreck the running screen.
            tracing::error!("an effect panicked: {info}");
            return;
        }
        if mouse {
            let _ = crossterm::execute!(stdout(), DisableMouseCapture);
        }
        let _ = crossterm::execute!(stdout(), crossterm::cursor::Show);
        previous(info);
    }));
}

fn on_worker_thread() -> bool {
    std::thread::current()
        .name()
        .is_some_and(|n| n.starts_with(WORKER_THREAD))
}

/// ctrl-z: in raw mode the terminal sends it as a key instead of stopping floe.
pub(super) fn is_suspend_key(k: &KeyEvent) -> bool {
    k.code == KeyCode::Char('z') && k.modifiers == KeyModifiers::CONTROL
}

/// Stop as a shell job: the terminal given back first, then SIGTSTP with its default
/// action, so the shell sees a stopped job and `fg` continues it. Returns once continued;
/// [`resume`] takes the terminal again. In an orphaned process group (nobody could `fg`
/// floe) the kernel discards the signal and this returns at once.
pub(super) fn suspend(terminal: &mut Term, mouse: bool) {
    let _ = terminal.show_cursor();
    leave(mouse);
    let _ = stdout().flush();
    // SAFETY: sigaction with a zeroed struct set to SIG_DFL, and the saved one put back;
    // raise(3) on the calling thread. Nothing here allocates or takes a lock.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut default.sa_mask);
        let mut saved: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGTSTP, &default, &mut saved) == 0 {
            libc::raise(libc::SIGTSTP);
            libc::sigaction(libc::SIGTSTP, &saved, std::ptr::null_mut());
        }
    }
}

/// Take the terminal again after a stop (ours, or SIGSTOP and a shell that reset the
/// terminal) and clear it, so the next draw paints the whole screen.
pub(super) fn resume(terminal: &mut Term, mouse: bool) -> color_eyre::Result<()> {
    // Off and on again: crossterm skips enabling raw mode it believes is on, but a shell
    // resets the terminal of a job it stopped.
    let _ = disable_raw_mode();
    enable_raw_mode().wrap_err("re-entering raw mode")?;
    crossterm::execute!(stdout(), EnterAlternateScreen).wrap_err("re-entering the screen")?;
    if mouse {
        let _ = crossterm::execute!(stdout(), EnableMouseCapture);
    }
    terminal.hide_cursor()?;
    // Clear the screen and forget the last frame, so the next draw is a whole one, at the
    // size the terminal has now. (`clear` would ask the terminal where its cursor is.)
    let size = terminal.size()?;
    terminal.resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))?;
    Ok(())
}

/// The signals the TUI reacts to besides SIGTERM and SIGHUP.
pub(super) enum TermSignal {
    /// SIGINT or SIGQUIT sent by someone else (in raw mode ctrl-c and ctrl-\ are keys).
    Interrupt,
    /// SIGTSTP sent by someone else.
    Stop,
    /// SIGCONT: continued after a stop floe did not ask for.
    Continue,
}

pub(super) struct Signals {
    int: Signal,
    quit: Signal,
    tstp: Signal,
    cont: Signal,
}

impl Signals {
    pub(super) fn install() -> color_eyre::Result<Signals> {
        let on = |kind: SignalKind, name: &str| {
            signal(kind).wrap_err_with(|| format!("installing the {name} handler"))
        };
        Ok(Signals {
            int: on(SignalKind::interrupt(), "SIGINT")?,
            quit: on(SignalKind::quit(), "SIGQUIT")?,
            tstp: on(SignalKind::from_raw(libc::SIGTSTP), "SIGTSTP")?,
            cont: on(SignalKind::from_raw(libc::SIGCONT), "SIGCONT")?,
        })
    }

    pub(super) async fn recv(&mut self) -> TermSignal {
        tokio::select! {
            Some(()) = self.int.recv() => TermSignal::Interrupt,
            Some(()) = self.quit.recv() => TermSignal::Interrupt,
            Some(()) = self.tstp.recv() => TermSignal::Stop,
            Some(()) = self.cont.recv() => TermSignal::Continue,
            else => std::future::pending().await,
        }
    }
}

/// A deliberate panic for the test suite, read once from `FLOE_TEST_PANIC` (a hidden,
/// test-only switch): `frame` panics in the event loop after the first frame, `effect` in
/// the first table-stats effect. Unset in normal use.
pub(super) fn test_panic() -> Option<&'static str> {
    static MODE: OnceLock<Option<String>> = OnceLock::new();
    MODE.get_or_init(|| std::env::var("FLOE_TEST_PANIC").ok())
        .as_deref()
}
