//! `pace [options] <url>`: one benchmark from validated options to the
//! printed report. Ctrl-C (SIGINT) or SIGTERM ends the run early and the
//! report of what was measured is still printed; a second Ctrl-C quits at
//! once.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};

use crate::config::BenchConfig;
use crate::engine::{Engine, RequestBatch};
use crate::error::Error;
use crate::http::request::{build_request, default_headers};
use crate::report;
use crate::stats::RunResult;

/// Runs the benchmark and prints the report; returns the exit code.
pub fn bench(cfg: &BenchConfig) -> Result<i32, Error> {
    let result = measure(cfg)?;
    print_result(&mut io::stdout().lock(), cfg, &result)?;
    Ok(exit_code(&result))
}

/// Prints the header, runs the benchmark and returns what it measured.
pub fn measure(cfg: &BenchConfig) -> Result<RunResult, Error> {
    let engine = Engine::prepare(cfg)?;
    let signals = Signals::install()?;
    {
        let mut out = io::stdout().lock();
        print_ignoring_closed_stdout(report::text::write_header(&mut out, cfg))?;
        let _ = out.flush();
    }
    let mut result = engine.run(static_request(cfg), signals.stop.clone(), &mut |_| {})?;
    result.interrupted = signals.received();
    Ok(result)
}

/// 0, or 128 + the signal that interrupted the run (documented in README).
pub fn exit_code(result: &RunResult) -> i32 {
    result.interrupted.map_or(0, |signal| 128 + signal)
}

/// Prints the report for a finished run.
pub fn print_result(
    out: &mut dyn Write,
    cfg: &BenchConfig,
    result: &RunResult,
) -> Result<(), Error> {
    print_ignoring_closed_stdout(report::text::write_report(out, cfg, result))?;
    if let Some(signal) = result.interrupted {
        let name = if signal == SIGINT { "SIGINT" } else { "SIGTERM" };
        eprintln!("pace: run stopped early by {name}; the report covers what was measured");
    }
    Ok(())
}

/// The request every connection sends when no script makes its own: GET
/// of the URL's path with `Host` and the `-H` headers.
pub fn static_request(cfg: &BenchConfig) -> RequestBatch {
    let headers = default_headers(&cfg.target.host_header(), &cfg.headers);
    RequestBatch {
        bytes: build_request("GET", &cfg.target.path, &headers, None),
        heads: vec![false],
    }
}

/// Output to a closed pipe (`pace ... | head`) is not an error worth a
/// message; anything else is.
fn print_ignoring_closed_stdout(result: io::Result<()>) -> Result<(), Error> {
    match result {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(Error::Setup(format!("cannot write the report: {e}")))
        }
        _ => Ok(()),
    }
}

/// SIGINT/SIGTERM flags: `stop` tells the engine threads to stop; the
/// others remember which signal it was, for the exit code.
struct Signals {
    stop: Arc<AtomicBool>,
    interrupt: Arc<AtomicBool>,
    terminate: Arc<AtomicBool>,
}

impl Signals {
    fn install() -> Result<Signals, Error> {
        let signals = Signals {
            stop: Arc::new(AtomicBool::new(false)),
            interrupt: Arc::new(AtomicBool::new(false)),
            terminate: Arc::new(AtomicBool::new(false)),
        };
        let register = || -> io::Result<()> {
            // Order matters: the conditional shutdown must see `stop` as it
            // was before this signal, so a first Ctrl-C stops gracefully
            // and only a second one exits at once.
            signal_hook::flag::register_conditional_shutdown(SIGINT, 130, signals.stop.clone())?;
            for (signal, flag) in [(SIGINT, &signals.interrupt), (SIGTERM, &signals.terminate)] {
                signal_hook::flag::register(signal, flag.clone())?;
                signal_hook::flag::register(signal, signals.stop.clone())?;
            }
            Ok(())
        };
        register().map_err(|e| Error::Setup(format!("cannot install signal handlers: {e}")))?;
        Ok(signals)
    }

    fn received(&self) -> Option<i32> {
        if self.interrupt.load(Ordering::Relaxed) {
            Some(SIGINT)
        } else if self.terminate.load(Ordering::Relaxed) {
            Some(SIGTERM)
        } else {
            None
        }
    }
}
