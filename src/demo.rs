//! `pace demo`: the whole point of pace in ten seconds, with no setup.
//!
//! Starts the built-in server in-process on a free port, freezes it for one
//! second in the middle of a 10 s run at 2000 requests/s (like the ^Z on the
//! server in wrk2's README), prints the report with both the corrected and
//! the uncorrected latency distributions, and explains the difference.

use std::io::{self, Write};
use std::time::Duration;

use crate::config::{BenchConfig, Mode};
use crate::description::Description;
use crate::endpoint::Endpoint;
use crate::error::{io_reason, Error};
use crate::output::OutputOptions;
use crate::plan::PlanSpec;
use crate::protocol::Protocol;
use crate::report::diagnose::{self, Code, Diagnostic};
use crate::report::ReportOptions;
use crate::run::{self, Bench};
use crate::serve::{self, ServeOptions, Stall};
use crate::stats::spectrum::value_at_percentile;
use crate::stats::RunResult;
use crate::target::Target;
use crate::tls::TlsOptions;
use crate::units::format_time_us;

const RATE: f64 = 2000.0;
const DURATION: Duration = Duration::from_secs(10);
const STALL_AT: Duration = Duration::from_secs(5);
const STALL_FOR: Duration = Duration::from_secs(1);

/// Runs the demo over `protocol`: HTTP/2 as h2c, HTTP/3 over QUIC with
/// the server's own certificate (accepted as `-k` does: it is the demo's
/// server, on loopback).
pub fn run(protocol: Protocol) -> Result<i32, Error> {
    let http3 = protocol == Protocol::Http3;
    let server = serve::start(ServeOptions {
        bind: "127.0.0.1:0".parse().expect("literal address"),
        threads: 1,
        stall: Some(Stall { at: STALL_AT, length: STALL_FOR }),
        tls: http3,
        http3,
        ..ServeOptions::default()
    })
    .map_err(|e| Error::Setup(format!("cannot start the built-in server: {}", io_reason(&e))))?;
    let addr = server.addr();
    let scheme = if http3 { "https" } else { "http" };
    let url = format!("{scheme}://{addr}/");
    let config = BenchConfig {
        connections: 50,
        duration: Some(DURATION),
        timeout: Duration::from_secs(5),
        mode: Mode::Paced(PlanSpec::constant(RATE)),
        protocol,
        tls: TlsOptions { insecure: http3, ..TlsOptions::default() },
        ..BenchConfig::new(Target::parse(&url).map_err(|e| Error::Setup(e.to_string()))?)
    };
    let bench = Bench {
        config,
        report: ReportOptions { latency: true, u_latency: true, ..ReportOptions::default() },
        outputs: OutputOptions::default(),
        slo: Vec::new(),
        strict: false,
        metrics: None,
        progress: true,
    };
    eprintln!(
        "pace demo: the built-in server listens on {url} and will freeze for {}s, {}s into the run.",
        STALL_FOR.as_secs(),
        STALL_AT.as_secs()
    );
    let options = match protocol {
        Protocol::Http1 => "",
        Protocol::Http2 => "--http2 ",
        Protocol::Http3 => "--http3 -k ",
    };
    eprintln!("Same as: pace {options}-t2 -c50 -d10s -R2000 -U {url}   (about 10 seconds)\n");
    let endpoint = Endpoint::Tcp(addr);
    let workload = run::fixed_workload(&bench.config, &endpoint);
    let finished = run::measure(&bench, &endpoint, workload);
    server.stop();
    let result = finished?.result;
    let mut out = io::stdout().lock();
    run::print_result(&mut out, &bench, &result)?;
    if result.interrupted.is_none() {
        let warnings = diagnose::diagnose(&Description::of(&bench.config), &result);
        let _ = explain(&mut out, &result).and_then(|()| explain_warnings(&mut out, &warnings));
    }
    Ok(run::exit_code(&result))
}

/// The plain-language explanation printed after the demo's report.
fn explain(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    let corrected = &result.total.corrected;
    let uncorrected = &result.total.uncorrected;
    let p = |h, q| format_time_us(value_at_percentile(h, q) as f64);
    writeln!(out)?;
    writeln!(out, "Why the two distributions differ")?;
    writeln!(
        out,
        "  p99:  corrected {}, uncorrected {}",
        p(corrected, 99.0),
        p(uncorrected, 99.0)
    )?;
    writeln!(
        out,
        "  p90:  corrected {}, uncorrected {}",
        p(corrected, 90.0),
        p(uncorrected, 90.0)
    )?;
    writeln!(
        out,
        "  The server froze for 1 s. pace kept its plan of 2000 requests/s, so about\n  \
         2000 requests fell due during the freeze; they could not be sent or answered\n  \
         until it ended. Corrected latency counts from when each request should have\n  \
         been sent: those requests waited up to a second, evenly spread over 0-1 s,\n  \
         and the upper percentiles show it. Uncorrected latency counts from when a\n  \
         request was actually sent, which is what most load generators report: the\n  \
         requests stuck behind the freeze are sent late and answered fast, so the\n  \
         stall almost disappears. That hidden wait is coordinated omission."
    )
}

/// What each warning the demo's report showed means here, the expected
/// one and those a loaded machine adds.
fn explain_warnings(out: &mut dyn Write, warnings: &[Diagnostic]) -> io::Result<()> {
    let mut codes: Vec<Code> = warnings.iter().map(|warning| warning.code).collect();
    codes.dedup();
    let others = codes.iter().any(|code| !matches!(code, Code::ServerStalled | Code::GeneratorCpu));
    codes.retain(|code| matches!(code, Code::ServerStalled | Code::GeneratorCpu));
    for code in codes {
        let text = match code {
            Code::ServerStalled => {
                "The server_stalled warning is expected here: while the server was\n  \
                 frozen, every connection waited for it, so pace could not send on schedule;\n  \
                 the schedule lag is that wait, and the corrected latency includes it."
            }
            Code::GeneratorCpu => {
                "The generator_cpu warning is pace's own lateness: when the server woke up,\n  \
                 about 2000 requests were due at once, and pace caught up as fast as its\n  \
                 threads got the CPU; on a busy or shared machine that took long enough to\n  \
                 move the corrected p99 by the amount the warning gives. Run the demo again\n  \
                 when the machine is quieter, or on whole cores, to see it go."
            }
            _ => unreachable!("kept above"),
        };
        writeln!(out, "  {text}")?;
    }
    if others {
        writeln!(
            out,
            "  Each other warning above names its cause and its figures; `pace man`\n  \
             lists every warning code and what to do about it."
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warning(code: Code) -> Diagnostic {
        Diagnostic { code, message: String::new(), figures: Vec::new() }
    }

    fn explained(codes: &[Code]) -> String {
        let warnings: Vec<Diagnostic> = codes.iter().copied().map(warning).collect();
        let mut out = Vec::new();
        explain_warnings(&mut out, &warnings).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Issue 34, item 6: the demo showed generator_cpu and explained only
    /// server_stalled.
    #[test]
    fn every_warning_the_demo_shows_is_explained() {
        assert!(explained(&[Code::ServerStalled]).starts_with("  The server_stalled warning is"));
        let both = explained(&[Code::ServerStalled, Code::GeneratorCpu]);
        assert!(both.contains("\n  The generator_cpu warning is pace's own lateness"), "{both}");
        let other = explained(&[Code::ServerStalled, Code::Unsent, Code::TooFewConnections]);
        assert_eq!(other.matches("Each other warning above").count(), 1, "{other}");
        assert_eq!(explained(&[]), "");
    }
}
