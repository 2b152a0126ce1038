//! The real binary in a pseudo-terminal: spawn it (alone, or as a shell job that can be
//! stopped and continued), type into it, read its screen through a vt100 parser, resize
//! it, and check that it gave the terminal back.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Pty {
    pub home: std::path::PathBuf,
    pub master: File,
    pub slave: OwnedFd,
    /// The process started in the terminal: floe itself, or (see [`Pty::spawn_job`]) the
    /// shell-like session leader that waits for it.
    pub child: Child,
    /// floe's own process id: where signals go.
    pub pid: i32,
    pub parser: Arc<Mutex<vt100::Parser>>,
    pub raw: Arc<Mutex<Vec<u8>>>,
}

impl Pty {
    pub fn spawn(args: &[&str], cols: u16, rows: u16) -> Pty {
        Pty::spawn_env(args, &[], cols, rows)
    }

    pub fn spawn_env(args: &[&str], env: &[(&str, &str)], cols: u16, rows: u16) -> Pty {
        Pty::start(args, env, cols, rows, false)
    }

    /// floe as a shell job: a session leader (the "shell") forks it into its own process
    /// group in the foreground and waits for it, so floe's group is not orphaned and
    /// SIGTSTP stops it as it would under bash; `child` is the shell, `pid` floe.
    pub fn spawn_job(args: &[&str], env: &[(&str, &str)], cols: u16, rows: u16) -> Pty {
        Pty::start(args, env, cols, rows, true)
    }

    fn start(args: &[&str], env: &[(&str, &str)], cols: u16, rows: u16, job: bool) -> Pty {
        let (master, slave) = open_pty(cols, rows);
        // A home of each terminal's own: the tests of one binary run side by side, and a
        // config being written by one must never be read half-written by another's floe,
        // nor one's audit log hold another's lines.
        let home = std::env::temp_dir().join(format!(
            "floe-pty-home-{}-{}",
            std::process::id(),
            next_id()
        ));
        let _ = std::fs::remove_dir_all(&home);
        // These tests walk the Tables tab from the start: they pin it (floe opens on the
        // Triage tab by default). A test that passes its own config chooses for itself.
        let cfg = home.join("config/floe");
        std::fs::create_dir_all(&cfg).unwrap();
        std::fs::write(cfg.join("config.toml"), "start_tab = \"tables\"\n").unwrap();
        let io = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_STATE_HOME", home.join("state"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("TERM", "xterm-256color")
            .env("NO_COLOR", "1")
            // A UTF-8 locale, as a desktop terminal has: without one floe draws ASCII.
            .env("LANG", "C.UTF-8")
            .envs(env.iter().copied())
            .stdin(io(&slave))
            .stdout(io(&slave))
            .stderr(io(&slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if job {
                    job_control_fork();
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn floe in a pty");
        let pid = if job {
            child_of(child.id() as i32)
        } else {
            child.id() as i32
        };
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZero::new(rows).unwrap(),
            std::num::NonZero::new(cols).unwrap(),
            0,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let (p2, r2) = (parser.clone(), raw.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                p2.lock().unwrap().process(&buf[..n]);
                r2.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Pty {
            master,
            slave,
            child,
            pid,
            parser,
            raw,
            home,
        }
    }

    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
        self.master.flush().unwrap();
    }

    /// Answer the confirmation on screen: once it has been there for floe's
    /// `confirm_dwell` (300 ms by default), as an operator who read it would; a key sooner
    /// is ignored. floe counts the dwell from the frame it drew, and on a starved machine
    /// it may get to count a good part of a second after the frame reached the terminal:
    /// when floe says the key came too soon, it is pressed again, as its message asks.
    pub fn answer(&mut self, bytes: &[u8]) {
        const TOO_SOON: &str = "key ignored: the question has been on screen for";
        for _ in 0..3 {
            std::thread::sleep(std::time::Duration::from_millis(600));
            let before = self.screen();
            self.send(bytes);
            // The first change after the key is floe's answer to it.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
            let mut now = before.clone();
            while now == before && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
                now = self.screen();
            }
            let said = |s: &str| s.lines().find(|l| l.contains(TOO_SOON)).map(str::to_owned);
            let refused = said(&now).is_some_and(|l| said(&before) != Some(l));
            if !refused {
                return;
            }
        }
    }

    /// Send a signal to floe.
    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.pid, sig) };
    }

    /// Resize the terminal (the kernel sends SIGWINCH to the foreground group) and the
    /// parser reading it.
    pub fn resize(&self, cols: u16, rows: u16) {
        let ws = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // The emulator takes the new size first, under its lock: floe redraws (clearing the
        // screen) as soon as the window changes, and that output must be parsed at the size
        // it was drawn for, not clipped to the old one.
        let mut parser = self.parser.lock().unwrap();
        parser.screen_mut().set_size(
            std::num::NonZero::new(rows.max(1)).unwrap(),
            std::num::NonZero::new(cols.max(1)).unwrap(),
        );
        // SAFETY: TIOCSWINSZ with a valid winsize on our master fd.
        let rc = unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
        assert_eq!(rc, 0, "TIOCSWINSZ");
    }

    pub fn wait_for(&self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if start.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Wait until everything floe wrote, as text, satisfies `pred`: what a process wrote
    /// just before it exited is still on its way through the reader thread when
    /// [`Pty::wait_exit`] returns.
    pub fn wait_output(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let start = Instant::now();
        loop {
            let out = self.output();
            if pred(&out) {
                return out;
            }
            if start.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for {what}; output:\n{out:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            if start.elapsed() > timeout {
                let _ = self.child.kill();
                panic!(
                    "floe did not exit within {timeout:?}; screen:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// floe's scheduler state from /proc (`R`, `S`, `T` when stopped, …).
    pub fn proc_state(&self) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .unwrap_or('?')
    }

    /// Wait until floe is stopped (state `T`).
    pub fn wait_stopped(&self, timeout: Duration) {
        let start = Instant::now();
        while self.proc_state() != 'T' {
            if start.elapsed() > timeout {
                panic!(
                    "floe did not stop within {timeout:?} (state {}); screen:\n{}",
                    self.proc_state(),
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The terminal's line discipline is in cooked mode with echo (not raw).
    pub fn assert_cooked(&self) {
        // SAFETY: termios is plain data; tcgetattr fills it for a valid tty fd.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::tcgetattr(self.slave.as_raw_fd(), &mut t) };
        assert_eq!(rc, 0);
        assert!(
            t.c_lflag & libc::ICANON != 0,
            "still in raw mode (ICANON off)"
        );
        assert!(t.c_lflag & libc::ECHO != 0, "still in raw mode (ECHO off)");
    }

    /// The terminal is in raw mode (floe has it).
    pub fn is_raw(&self) -> bool {
        // SAFETY: as in assert_cooked.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::tcgetattr(self.slave.as_raw_fd(), &mut t) };
        rc == 0 && t.c_lflag & libc::ICANON == 0 && t.c_lflag & libc::ECHO == 0
    }

    /// The terminal is back to normal: cooked mode with echo, main screen, cursor shown.
    pub fn assert_restored(&self) {
        self.assert_cooked();
        // The raw bytes are appended after the parser has read them: once they hold the
        // main screen's return, the parser has seen it too.
        self.wait_output(
            "floe to leave the alternate screen",
            Duration::from_secs(10),
            |o| o.contains("\x1b[?1049l"),
        );
        std::thread::sleep(Duration::from_millis(200));
        let p = self.parser.lock().unwrap();
        assert!(
            !p.screen().alternate_screen(),
            "still on the alternate screen"
        );
        assert!(!p.screen().hide_cursor(), "cursor still hidden");
        let raw = self.raw.lock().unwrap();
        let text = String::from_utf8_lossy(&raw);
        assert!(
            text.contains("\x1b[?1049l"),
            "never left the alternate screen"
        );
    }

    /// Mouse reporting is off in the terminal.
    pub fn assert_no_mouse_capture(&self) {
        let p = self.parser.lock().unwrap();
        assert_eq!(
            p.screen().mouse_protocol_mode(),
            vt100::MouseProtocolMode::None,
            "mouse capture still on"
        );
    }

    /// floe never took the terminal: no alternate screen was entered, and it is cooked.
    pub fn assert_never_raw(&self) {
        self.assert_cooked();
        let raw = self.raw.lock().unwrap();
        let text = String::from_utf8_lossy(&raw);
        assert!(
            !text.contains("\x1b[?1049h"),
            "entered the alternate screen: {text:?}"
        );
    }

    /// Everything floe wrote, as text.
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }
}

impl Drop for Pty {
    /// A test that fails mid-way must not leave floe running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            if self.pid != self.child.id() as i32 {
                // SAFETY: kill(2) on floe, a child of our child.
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                }
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// In the session leader, after `setsid`: fork floe into its own foreground process
/// group; the leader waits for it and exits with its status, as a shell would. Only
/// async-signal-safe calls (this runs between fork and exec).
unsafe fn job_control_fork() {
    // SAFETY: fork, setpgid, sigprocmask, tcsetpgrp, close, waitpid and _exit are all
    // async-signal-safe.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            libc::_exit(126);
        }
        if pid == 0 {
            // floe: its own group, given the terminal (SIGTTOU blocked, as a shell does).
            libc::setpgid(0, 0);
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTTOU);
            libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
            libc::tcsetpgrp(0, libc::getpid());
            libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            return;
        }
        // The "shell": hold no descriptor but the terminal (the spawner waits for its
        // exec-status pipe to close), wait for floe, exit as it did.
        for fd in 3..1024 {
            libc::close(fd);
        }
        let mut status = 0;
        loop {
            let r = libc::waitpid(pid, &mut status, 0);
            if r == pid {
                break;
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        libc::_exit(128 + libc::WTERMSIG(status));
    }
}

/// A new pseudo-terminal of `cols` x `rows`: both ends close on exec from the moment they
/// are opened. openpty(3) sets no close-on-exec flag, and a child that another test forks
/// in between would inherit the terminal and hold it open.
fn open_pty(cols: u16, rows: u16) -> (File, OwnedFd) {
    // SAFETY: posix_openpt, grantpt, unlockpt and ptsname_r on the descriptor opened here;
    // ptsname_r writes a NUL-terminated path into the buffer given with its length.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(
            master >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        let master = File::from_raw_fd(master);
        assert_eq!(libc::grantpt(master.as_raw_fd()), 0, "grantpt");
        assert_eq!(libc::unlockpt(master.as_raw_fd()), 0, "unlockpt");
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(
            libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()),
            0,
            "ptsname_r"
        );
        let slave = libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        assert!(
            slave >= 0,
            "open the pty's slave: {}",
            std::io::Error::last_os_error()
        );
        let slave = OwnedFd::from_raw_fd(slave);
        let ws = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let rc = libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws);
        assert_eq!(rc, 0, "TIOCSWINSZ");
        (master, slave)
    }
}

/// The (first) child process of `parent`, from /proc.
fn child_of(parent: i32) -> i32 {
    let start = Instant::now();
    loop {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if ppid == Some(parent) {
                return pid;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no child of {parent}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A number no other Pty of this test binary has.
fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
