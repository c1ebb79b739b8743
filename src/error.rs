//! Errors that end pace before or instead of a report, and the exit code of
//! each. Errors *during* a run are not here: they are counted in
//! [`crate::stats::Errors`] and the run goes on, as in wrk.
//!
//! Exit codes (also in README.md):
//! - 0: the run completed and the report was printed.
//! - 1: the command line is wrong (unknown option, bad number, bad URL...),
//!   or a file it names is read but wrong (a bad line of `--targets`): what
//!   the user wrote must change.
//! - 2: the command line is right but the machine fails it: the target
//!   cannot be used (host does not resolve, nothing listens, TLS set-up
//!   failed), or a file cannot be read or written. Every file, whichever
//!   option names it (`-s`, `--body-file`, `--targets` and the bodies it
//!   names, `--cacert`, `--cert`, `--key`, `-o`, `--hlog`, `--html`, the
//!   inputs of `pace merge`).
//! - 3: the Lua script failed (load error, or runtime error during the run;
//!   the report of what was measured is still printed).
//! - 4: an `--slo` objective failed ([`SLO_FAILED`]; the report and the
//!   verdicts were printed, the files written). A signal (130/143), a
//!   script failure (3) or a file that could not be written (2) takes
//!   precedence.
//! - 5: with `--strict`, the run cannot be trusted ([`UNTRUSTED`]: the
//!   report's `Validity:` line says why, `crate::report::validity`). Any
//!   other code takes precedence: a failed objective (4) says more than
//!   an untrusted run, and so do 2, 3, 130 and 143.
//! - 130 / 143: the run was stopped by SIGINT / SIGTERM; the report of what
//!   was measured was printed.
//! - 101: a bug in pace (a panic; one line on stderr).

use std::fmt;
use std::io;

/// An I/O error as the C library describes it, for messages: without std's
/// ` (os error 2)` suffix and `failed to lookup address information: `
/// prefix, which add nothing for the user.
pub fn io_reason(err: &io::Error) -> String {
    let text = err.to_string();
    let text = text.strip_prefix("failed to lookup address information: ").unwrap_or(&text);
    match text.rfind(" (os error ") {
        Some(suffix) => text[..suffix].to_string(),
        None => text.to_string(),
    }
}

/// The exit code of a run that completed but failed an `--slo` objective.
pub const SLO_FAILED: i32 = 4;

/// The exit code of a run that completed, met its objectives, and cannot
/// be trusted, with `--strict`.
pub const UNTRUSTED: i32 = 5;

/// An error that stops pace, with the exit code it maps to.
#[derive(Debug)]
pub enum Error {
    /// Wrong command line, or a file it names holds a mistake; the message
    /// says what is wrong.
    Usage(String),
    /// The target or a local resource (a file to read or write) cannot be
    /// used.
    Setup(String),
    /// The Lua script failed.
    Script(String),
    /// A bug in pace: a part of it stopped unexpectedly.
    Internal(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 1,
            Error::Setup(_) => 2,
            Error::Script(_) => 3,
            Error::Internal(_) => 101,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Setup(m) | Error::Script(m) | Error::Internal(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_reasons_read_as_the_c_library_says_them() {
        let refused = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(io_reason(&refused), "Connection refused");
        let custom = io::Error::other("failed to lookup address information: Name unknown");
        assert_eq!(io_reason(&custom), "Name unknown");
    }
}
