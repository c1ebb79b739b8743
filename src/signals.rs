//! SIGINT (Ctrl-C) and SIGTERM during a run. The first one stops the run
//! gracefully: the report of what was measured is printed and the output
//! files are completed. A second one cuts the waiting short (for late
//! responses, for a script that does not return) but still prints and
//! completes. A third one exits at once, removing the unfinished output
//! files first. While the script's calls before the run go on (setup(),
//! init(), the first request()), which may not return and have nothing
//! measured to keep, the first signal exits at once.

use std::ffi::{c_char, CString};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};

use crate::error::{io_reason, Error};

/// The signal that ended a run early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interruption {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Interruption {
    /// The signal's name, as the reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Interruption::Interrupt => "SIGINT",
            Interruption::Terminate => "SIGTERM",
        }
    }

    /// 128 + the signal number, as a shell reports a process it killed.
    pub fn exit_code(self) -> i32 {
        128 + self.number()
    }

    fn number(self) -> i32 {
        match self {
            Interruption::Interrupt => SIGINT,
            Interruption::Terminate => SIGTERM,
        }
    }
}

/// The handlers of one run.
pub struct Signals {
    /// Set by the first signal: the engine threads stop.
    pub stop: Arc<AtomicBool>,
    /// Set by the second signal: stop waiting.
    pub hurry: Arc<AtomicBool>,
    /// The first signal's number, 0 before one arrived.
    first: Arc<AtomicUsize>,
    /// How many signals arrived.
    count: Arc<AtomicUsize>,
    /// Set while the first signal exits at once ([`Signals::exit_at_once`]).
    at_once: Arc<AtomicBool>,
}

/// While it lives, the first signal exits at once ([`Signals::exit_at_once`]).
pub struct ExitAtOnce {
    at_once: Arc<AtomicBool>,
}

impl Drop for ExitAtOnce {
    fn drop(&mut self) {
        self.at_once.store(false, Ordering::SeqCst);
    }
}

impl Signals {
    pub fn install() -> Result<Signals, Error> {
        let signals = Signals {
            stop: Arc::new(AtomicBool::new(false)),
            hurry: Arc::new(AtomicBool::new(false)),
            first: Arc::new(AtomicUsize::new(0)),
            count: Arc::new(AtomicUsize::new(0)),
            at_once: Arc::new(AtomicBool::new(false)),
        };
        for signal in [SIGINT, SIGTERM] {
            let (stop, hurry, first) =
                (signals.stop.clone(), signals.hurry.clone(), signals.first.clone());
            let (received, at_once) = (signals.count.clone(), signals.at_once.clone());
            let handler = move || {
                // Only atomics, write, unlink and _exit: async-signal-safe.
                let _ =
                    first.compare_exchange(0, signal as usize, Ordering::SeqCst, Ordering::SeqCst);
                stop.store(true, Ordering::SeqCst);
                if at_once.load(Ordering::SeqCst) {
                    let said: &[u8] = match signal {
                        SIGINT => b"pace: stopped by SIGINT before the run\n",
                        _ => b"pace: stopped by SIGTERM before the run\n",
                    };
                    // SAFETY: write(2) of a static buffer to stderr.
                    unsafe { libc::write(2, said.as_ptr().cast(), said.len()) };
                    exit_at_once(128 + signal);
                }
                match received.fetch_add(1, Ordering::SeqCst) + 1 {
                    1 => {}
                    2 => hurry.store(true, Ordering::SeqCst),
                    _ => exit_at_once(128 + first.load(Ordering::SeqCst) as i32),
                }
            };
            // SAFETY: the handler only touches atomics and calls write,
            // unlink and _exit, all async-signal-safe.
            unsafe { signal_hook::low_level::register(signal, handler) }.map_err(|e| {
                Error::Setup(format!("cannot install signal handlers: {}", io_reason(&e)))
            })?;
        }
        Ok(signals)
    }

    /// How many signals arrived so far.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// The signal that arrived first, if one did.
    pub fn received(&self) -> Option<Interruption> {
        match self.first.load(Ordering::SeqCst) as i32 {
            SIGINT => Some(Interruption::Interrupt),
            SIGTERM => Some(Interruption::Terminate),
            _ => None,
        }
    }

    /// Until the returned guard is dropped, the first signal exits at once
    /// (removing the unfinished output files): for the script's calls
    /// before the run, which may never return (LuaJIT cannot interrupt a
    /// loop it compiled) and have measured nothing.
    pub fn exit_at_once(&self) -> ExitAtOnce {
        self.at_once.store(true, Ordering::SeqCst);
        ExitAtOnce { at_once: self.at_once.clone() }
    }

    /// What the blocking checks before the run heed: any signal since the
    /// handlers were installed.
    pub fn stop(&self) -> Stop {
        Stop { count: Some(self.count.clone()), before: 0 }
    }

    /// What blocking work after the run heeds (the push): a signal that
    /// arrives from now on. The push after a run a signal stopped is
    /// still made, and a new signal stops it.
    pub fn stop_from_now(&self) -> Stop {
        Stop { count: Some(self.count.clone()), before: self.count() }
    }
}

/// Whether a signal arrived since it was made ([`Signals::stop_from_now`]):
/// blocking work checks it between short waits and gives up when it is
/// set.
#[derive(Clone, Debug)]
pub struct Stop {
    /// The count of signals of the run's handlers (None: never stops).
    count: Option<Arc<AtomicUsize>>,
    /// The count when this was made.
    before: usize,
}

impl Stop {
    /// For work that no signal stops: the `--metrics` listener's
    /// connections, which pace's exit ends (and tests).
    pub fn never() -> Stop {
        Stop { count: None, before: 0 }
    }

    /// For tests: hears `count` go up from its value now, as if it
    /// counted signals.
    #[cfg(test)]
    pub fn counting(count: Arc<AtomicUsize>) -> Stop {
        let before = count.load(Ordering::SeqCst);
        Stop { count: Some(count), before }
    }

    /// A signal arrived since this was made.
    pub fn heard(&self) -> bool {
        self.count.as_ref().is_some_and(|count| count.load(Ordering::SeqCst) > self.before)
    }
}

/// Output files being written under a temporary name, which an immediate
/// exit removes. A signal handler cannot lock or free, so the paths live
/// in fixed slots and are never freed (a run has one or two such files).
static TEMPORARY_FILES: [AtomicPtr<c_char>; 8] = [const { AtomicPtr::new(ptr::null_mut()) }; 8];

/// A temporary file that an immediate exit removes, until dropped.
pub struct TemporaryFile {
    slot: Option<usize>,
}

impl TemporaryFile {
    pub fn register(path: &Path) -> TemporaryFile {
        use std::os::unix::ffi::OsStrExt;
        let Ok(path) = CString::new(path.as_os_str().as_bytes()) else {
            return TemporaryFile { slot: None };
        };
        let path = path.into_raw();
        for (slot, entry) in TEMPORARY_FILES.iter().enumerate() {
            if entry
                .compare_exchange(ptr::null_mut(), path, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return TemporaryFile { slot: Some(slot) };
            }
        }
        // More files than slots: this one is not removed on a forced exit.
        // SAFETY: `path` came from into_raw just above and was not shared.
        drop(unsafe { CString::from_raw(path) });
        TemporaryFile { slot: None }
    }
}

impl Drop for TemporaryFile {
    fn drop(&mut self) {
        // The path is left allocated: a handler may be reading it.
        if let Some(slot) = self.slot {
            TEMPORARY_FILES[slot].store(ptr::null_mut(), Ordering::SeqCst);
        }
    }
}

/// Removes the unfinished output files and ends the process with `code`;
/// async-signal-safe.
fn exit_at_once(code: i32) -> ! {
    remove_temporary_files();
    // SAFETY: _exit ends the process at once, as asked.
    unsafe { libc::_exit(code) }
}

fn remove_temporary_files() {
    for entry in &TEMPORARY_FILES {
        let path = entry.load(Ordering::SeqCst);
        if !path.is_null() {
            // SAFETY: a NUL-terminated path that is never freed.
            unsafe { libc::unlink(path) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_exit_codes() {
        assert_eq!(Interruption::Interrupt.name(), "SIGINT");
        assert_eq!(Interruption::Interrupt.exit_code(), 130);
        assert_eq!(Interruption::Terminate.name(), "SIGTERM");
        assert_eq!(Interruption::Terminate.exit_code(), 143);
    }

    #[test]
    fn a_stop_hears_the_signals_after_it_was_made() {
        let count = Arc::new(AtomicUsize::new(1));
        let stop = Stop::counting(count.clone());
        assert!(!stop.heard());
        count.fetch_add(1, Ordering::SeqCst);
        assert!(stop.heard());
        assert!(!Stop::never().heard());
    }

    #[test]
    fn registered_files_are_removed_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (kept, removed) = (dir.path().join("kept"), dir.path().join("removed"));
        std::fs::write(&kept, "x").unwrap();
        std::fs::write(&removed, "x").unwrap();
        let registered = TemporaryFile::register(&kept);
        drop(registered);
        let _registered = TemporaryFile::register(&removed);
        remove_temporary_files();
        assert!(kept.exists() && !removed.exists());
    }
}
