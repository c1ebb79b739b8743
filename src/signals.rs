//! SIGINT (Ctrl-C) and SIGTERM during a run: the first one stops the run
//! gracefully, so that the report of what was measured is still printed; a
//! second Ctrl-C quits at once.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};

use crate::error::Error;

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
        128 + match self {
            Interruption::Interrupt => SIGINT,
            Interruption::Terminate => SIGTERM,
        }
    }
}

/// The handlers of one run: `stop` tells the engine threads to stop; the
/// others remember which signal it was.
pub struct Signals {
    pub stop: Arc<AtomicBool>,
    interrupt: Arc<AtomicBool>,
    terminate: Arc<AtomicBool>,
}

impl Signals {
    pub fn install() -> Result<Signals, Error> {
        let signals = Signals {
            stop: Arc::new(AtomicBool::new(false)),
            interrupt: Arc::new(AtomicBool::new(false)),
            terminate: Arc::new(AtomicBool::new(false)),
        };
        let register = || -> io::Result<()> {
            // Order matters: the conditional shutdown must see `stop` as it
            // was before this signal, so a first Ctrl-C stops gracefully
            // and only a second one exits at once.
            let code = Interruption::Interrupt.exit_code();
            signal_hook::flag::register_conditional_shutdown(SIGINT, code, signals.stop.clone())?;
            for (signal, flag) in [(SIGINT, &signals.interrupt), (SIGTERM, &signals.terminate)] {
                signal_hook::flag::register(signal, flag.clone())?;
                signal_hook::flag::register(signal, signals.stop.clone())?;
            }
            Ok(())
        };
        register().map_err(|e| Error::Setup(format!("cannot install signal handlers: {e}")))?;
        Ok(signals)
    }

    /// The signal that arrived, if one did.
    pub fn received(&self) -> Option<Interruption> {
        if self.interrupt.load(Ordering::Relaxed) {
            Some(Interruption::Interrupt)
        } else if self.terminate.load(Ordering::Relaxed) {
            Some(Interruption::Terminate)
        } else {
            None
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
}
