//! The text report, in the layout of wrk and wrk2 (`src/wrk.c`):
//! the header `main` prints, `print_stats_header`, `print_stats` and
//! `print_units` (Thread Stats), `print_stats_latency` (wrk's `--latency`),
//! `print_hdr_latency` (wrk2's `-L`/`-U`, with HdrHistogram_c's spectrum)
//! and the summary lines. pace adds, after wrk's lines: one line per error
//! cause, a note when a signal or the script stopped the run, in paced
//! mode the schedule lag, with `-L` a line naming the percentiles printed
//! that have too few samples beyond them ([`crate::stats::confidence`]),
//! a warning per cause when something went
//! wrong ([`super::diagnose`]: in the closed loop only when its requests
//! failed), and a `Validity:` line when the run cannot be trusted
//! ([`super::validity`]). The pieces are public for the
//! periodic reports (`-p`), which print them for one period.

use std::io::{self, Write};
use std::time::Duration;

use hdrhistogram::Histogram;

use super::ReportOptions;
use crate::config::Mode;
use crate::description::CallKind;
use crate::description::Description;
use crate::grpc_status;
use crate::protocol::Protocol;
use crate::signals::Interruption;
use crate::stats::confidence::{self, MIN_SAMPLES_BEYOND};
use crate::stats::spectrum::{self, value_at_percentile, write_spectrum};
use crate::stats::{Http2Counts, Outcomes, Phases, QuicCounts, RunResult, Stats, Streamed};
use crate::units::{
    c_fixed, format_binary, format_metric, format_time_s, format_time_us, pad_units, per_second,
    UNDEFINED,
};

/// wrk's `--latency` percentiles.
pub const WRK_PERCENTILES: [f64; 4] = [50.0, 75.0, 90.0, 99.0];
/// wrx's `--latency` percentiles.
pub const WRX_PERCENTILES: [f64; 6] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99];
/// wrk2's `-L`/`-U` percentiles.
pub const WRK2_PERCENTILES: [f64; 8] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0];

/// Closes each wrk2 latency block.
const SEPARATOR: &str = "----------------------------------------------------------";

/// `Running 30s test @ http://host/` and the threads and connections
/// really used. With `-n`: `Running 1000 requests @ ...` when that is all
/// that bounds the run, or `Running 30s test, at most 1000 requests @ ...`.
pub fn write_header(out: &mut dyn Write, run: &Description) -> io::Result<()> {
    let url = &crate::provenance::masked_url(&run.url);
    match (run.duration, run.requests) {
        (Some(duration), None) => {
            writeln!(out, "Running {} test @ {url}", format_test_duration(duration))?
        }
        (Some(duration), Some(n)) => writeln!(
            out,
            "Running {} test, at most {n} requests @ {url}",
            format_test_duration(duration)
        )?,
        (None, n) => writeln!(out, "Running {} requests @ {url}", n.unwrap_or_default())?,
    }
    writeln!(out, "  {} threads and {} connections", run.threads, run.connections_of_instance())?;
    run.reached.write_spread(out)?;
    if run.protocol.multiplexed() {
        let how = match run.protocol_name() {
            "h2" => "h2, over TLS by ALPN",
            "h3" => "h3, over QUIC",
            _ => "h2c, prior knowledge",
        };
        // What the run uses: a server that allows fewer than --streams
        // caps it (a line under the summary says so).
        let used = run.slots_per_connection(run.allowed_streams);
        let streams = if used == 1 { "stream" } else { "streams" };
        writeln!(out, "  {} ({how}), {used} {streams} per connection", run.protocol)?;
    }
    if let Some(method) = &run.grpc {
        let kind = run.grpc_kind.unwrap_or(CallKind::Unary);
        writeln!(out, "  gRPC {} of {method}", kind.describe())?;
    }
    run.reached.write_routes(out)?;
    super::plan::write_header(out, run)
}

/// wrk's whole seconds (`30s`, `2m`) when the duration is whole seconds, as
/// wrk's always are; whole milliseconds below a second as typed (`500ms`);
/// otherwise (`1.5s`, which pace accepts) the finer time format, so a
/// sub-second run does not read `0s`.
fn format_test_duration(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format_time_s(duration.as_secs_f64())
    } else if duration < Duration::from_secs(1) && duration.subsec_nanos().is_multiple_of(1_000_000)
    {
        format!("{}ms", duration.as_millis())
    } else {
        format_time_us(duration.as_micros() as f64)
    }
}

/// Everything printed after the run, in wrk/wrk2 order.
pub fn write_report(
    out: &mut dyn Write,
    run: &Description,
    options: &ReportOptions,
    result: &RunResult,
) -> io::Result<()> {
    let stats = &result.total;
    write_thread_stats(out, stats)?;
    write_latency_distributions(out, &run.mode, options, stats)?;
    write_summary(out, stats, result.runtime, run.protocol)?;
    write_quic(out, &stats.quic)?;
    if let Some(signal) = result.interrupted {
        write_interruption(out, signal, run.duration, result.runtime)?;
    }
    if result.script_stopped {
        write_script_stop(out, run.duration, result.runtime)?;
    }
    super::plan::write_warmup(out, run, result)?;
    super::plan::write_stages(out, run, result)?;
    if run.target_rate().is_some() {
        write_schedule_lag(out, &stats.lag)?;
    }
    write_too_few_samples(out, &run.mode, options, stats)?;
    if options.latency {
        write_phases(out, &stats.phases)?;
        super::concurrency::write_line(out, super::concurrency::Concurrency::of(run, result))?;
    }
    // Paced runs' warnings, and any run's that failed as a whole (the
    // closed loop's report stays wrk's when all went well).
    super::diagnose::write_warnings(out, &super::diagnose::diagnose(run, result))?;
    // Whether the run can be trusted, when it cannot.
    super::validity::write_line(out, &super::validity::judge(run, result))?;
    super::targets::write_targets(out, result)
}

/// A signal ended the run early: the figures are over the time until
/// then. (Said in the report itself, so that a report saved with `-o`
/// says it too, as the JSON's `interrupted_by` does.)
fn write_interruption(
    out: &mut dyn Write,
    signal: Interruption,
    duration: Option<Duration>,
    runtime: Duration,
) -> io::Result<()> {
    let stopped_after = format_time_us(runtime.as_micros() as f64);
    let planned = match duration {
        Some(duration) => format!("of the {} planned", format_test_duration(duration)),
        None => "before the requests of -n were done".to_string(),
    };
    writeln!(
        out,
        "Note: stopped early by {} after {stopped_after} {planned}; the figures cover what was \
         measured until then",
        signal.name()
    )
}

/// The script stopped every thread before the end: the figures are over
/// the time until then, which a wrk report of the same script is not.
fn write_script_stop(
    out: &mut dyn Write,
    duration: Option<Duration>,
    runtime: Duration,
) -> io::Result<()> {
    let stopped_after = format_time_us(runtime.as_micros() as f64);
    match duration {
        Some(duration) => writeln!(
            out,
            "Note: the script stopped every thread (thread:stop()) after {stopped_after}; the \
             rates are over that time, not the {} of -d (wrk divides by -d)",
            format_test_duration(duration)
        ),
        None => writeln!(
            out,
            "Note: the script stopped every thread (thread:stop()) after {stopped_after}, \
             before the requests of -n were done"
        ),
    }
}

/// The percentiles of the latency distributions and how many decimals
/// their labels get. `--percentiles` replaces the list in both modes. The
/// closed-loop block is wrk's (`     50%`) unless a wrx option
/// (`--histogram`, `--timeseries`, `--thread-timeseries`) asks for wrx's
/// output, which adds 99.9 and 99.99 (`  50.00%`); the paced block is
/// wrk2's (` 50.000%`). Labels get more decimals when a percentile needs
/// them (99.999 never prints as 100.00).
fn distribution_percentiles<'a>(mode: &Mode, options: &'a ReportOptions) -> (&'a [f64], usize) {
    let wrx = options.wrx();
    let (list, decimals): (&[f64], usize) = match (mode, options.percentiles.as_deref()) {
        (Mode::Paced(_), _) => return hdr_percentiles(options),
        (Mode::ClosedLoop, Some(list)) => (list, 2),
        (Mode::ClosedLoop, None) if wrx => (&WRX_PERCENTILES, 2),
        (Mode::ClosedLoop, None) => (&WRK_PERCENTILES, 0),
    };
    (list, label_decimals(list, decimals))
}

/// wrk2's percentiles (` 50.000%`), or `--percentiles`', and their
/// labels' decimals.
fn hdr_percentiles(options: &ReportOptions) -> (&[f64], usize) {
    let list = options.percentiles.as_deref().unwrap_or(&WRK2_PERCENTILES);
    (list, label_decimals(list, 3))
}

/// The fewest decimals, at least `minimum`, that print every percentile of
/// `list` exactly (at most 6).
fn label_decimals(list: &[f64], minimum: usize) -> usize {
    let exact = |decimals: usize| {
        let scale = 10f64.powi(decimals as i32);
        list.iter().all(|p| ((p * scale).round() - p * scale).abs() < 1e-6)
    };
    (minimum..6).find(|&decimals| exact(decimals)).unwrap_or(6)
}

/// The latency blocks `-L`/`-U` ask for: wrk's in closed loop, wrk2's
/// (with the spectrum) in paced mode; nothing without `-L`.
pub fn write_latency_distributions(
    out: &mut dyn Write,
    mode: &Mode,
    options: &ReportOptions,
    stats: &Stats,
) -> io::Result<()> {
    if !(options.latency || options.u_latency) {
        return Ok(());
    }
    match mode {
        Mode::ClosedLoop => {
            let (percentiles, decimals) = distribution_percentiles(mode, options);
            write_wrk_distribution(out, &stats.corrected, percentiles, decimals)
        }
        Mode::Paced(_) => write_hdr_distributions(out, options, stats),
    }
}

/// wrk2's latency blocks, the recorded one and with `-U` the uncorrected
/// one, with `options`' percentiles: a paced run's, and `pace merge`'s of
/// `--hlog` logs (which hold no mode).
pub fn write_hdr_distributions(
    out: &mut dyn Write,
    options: &ReportOptions,
    stats: &Stats,
) -> io::Result<()> {
    let (percentiles, decimals) = hdr_percentiles(options);
    let uncorrected = options.u_latency.then_some(&stats.uncorrected);
    write_wrk2_distributions(out, &stats.corrected, uncorrected, percentiles, decimals)
}

/// After the latency blocks `-L`/`-U` print (as a line of its own, so
/// that wrk's and wrk2's lines read as before): the percentiles they
/// list that have fewer than [`MIN_SAMPLES_BEYOND`] samples beyond them.
/// Nothing when every one has enough, or when nothing was recorded.
///
/// ```text
/// Too few samples: 99.900%, 99.990%, 99.999%, 100.000% have fewer than 10 of the 2000 latencies beyond them; chance alone moves them from run to run
/// ```
pub fn write_too_few_samples(
    out: &mut dyn Write,
    mode: &Mode,
    options: &ReportOptions,
    stats: &Stats,
) -> io::Result<()> {
    if !(options.latency || options.u_latency) {
        return Ok(());
    }
    let (percentiles, decimals) = distribution_percentiles(mode, options);
    let uncorrected = options.u_latency && matches!(mode, Mode::Paced(_));
    write_too_few(out, percentiles, decimals, stats, uncorrected)
}

/// The same after [`write_hdr_distributions`] (`pace merge` of logs).
pub fn write_hdr_too_few_samples(
    out: &mut dyn Write,
    options: &ReportOptions,
    stats: &Stats,
) -> io::Result<()> {
    let (percentiles, decimals) = hdr_percentiles(options);
    write_too_few(out, percentiles, decimals, stats, options.u_latency)
}

/// The line for `percentiles` (labelled with `decimals`) of the corrected
/// latency, and of the uncorrected one when it is printed too.
fn write_too_few(
    out: &mut dyn Write,
    percentiles: &[f64],
    decimals: usize,
    stats: &Stats,
    uncorrected: bool,
) -> io::Result<()> {
    let mut count = stats.corrected.len();
    if uncorrected {
        count = count.min(stats.uncorrected.len());
    }
    let few: Vec<String> = (percentiles.iter())
        .filter(|&&p| !confidence::enough(count, p))
        .map(|&p| format!("{}%", c_fixed(p, 7, decimals).trim_start()))
        .collect();
    if count == 0 || few.is_empty() {
        return Ok(());
    }
    let (verb, them) = if few.len() == 1 { ("has", "it") } else { ("have", "them") };
    writeln!(
        out,
        "Too few samples: {} {verb} fewer than {MIN_SAMPLES_BEYOND} of the {count} latencies \
         beyond {them}; chance alone moves {them} from run to run",
        few.join(", ")
    )
}

/// One row of the Thread Stats table.
struct Row {
    mean: f64,
    stdev: f64,
    max: f64,
    /// Percentage of samples within one standard deviation of the mean.
    within_stdev: f64,
}

/// The Latency row: wrk2's statistics of the corrected histogram. An
/// empty histogram has none (wrk2 prints `-nanus` for its mean and stdev).
fn latency_row(h: &Histogram<u64>) -> Row {
    if h.is_empty() {
        return Row { mean: f64::NAN, stdev: f64::NAN, max: f64::NAN, within_stdev: f64::NAN };
    }
    let mean = spectrum::mean(h);
    let stdev = spectrum::stddev(h);
    Row {
        mean,
        stdev,
        max: h.max() as f64,
        within_stdev: spectrum::within_stdev_percent(h, mean, stdev),
    }
}

/// The Req/Sec row, computed as wrk does from the samples (`stats_mean`,
/// `stats_stdev` with n - 1, `stats_within_stdev`); no samples give wrk's
/// `0.00  0.00  0.00` and no share (wrk: `-nan%`).
fn rate_row(samples: &[f64]) -> Row {
    let (mean, stdev) = crate::stats::sample_mean_stdev(samples);
    let max = samples.iter().copied().fold(0.0, f64::max);
    let (lower, upper) = (mean - stdev, mean + stdev);
    let within = samples.iter().filter(|&&x| x >= lower && x <= upper).count() as f64;
    Row { mean, stdev, max, within_stdev: within / samples.len() as f64 * 100.0 }
}

/// The Thread Stats table: its header, Latency and Req/Sec rows.
pub fn write_thread_stats(out: &mut dyn Write, stats: &Stats) -> io::Result<()> {
    writeln!(out, "  Thread Stats{:>6}{:>11}{:>8}{:>12}", "Avg", "Stdev", "Max", "+/- Stdev")?;
    write_row(out, "Latency", &latency_row(&stats.corrected), format_time_us)?;
    write_row(out, "Req/Sec", &rate_row(&stats.rate_samples), format_metric)
}

/// wrk's `print_stats` line.
fn write_row(
    out: &mut dyn Write,
    name: &str,
    row: &Row,
    format: fn(f64) -> String,
) -> io::Result<()> {
    let within = if row.within_stdev.is_nan() {
        format!("{:>8} ", UNDEFINED)
    } else {
        format!("{}%", c_fixed(row.within_stdev, 8, 2))
    };
    writeln!(
        out,
        "    {name:<10}{}{}{}{within}",
        pad_units(&format(row.mean), 8),
        pad_units(&format(row.stdev), 10),
        pad_units(&format(row.max), 9),
    )
}

/// wrk's `print_stats_latency`: `     50%  635.00us` (wrx: `  50.00%`).
fn write_wrk_distribution(
    out: &mut dyn Write,
    h: &Histogram<u64>,
    percentiles: &[f64],
    decimals: usize,
) -> io::Result<()> {
    writeln!(out, "  Latency Distribution")?;
    for &p in percentiles {
        writeln!(out, "{}%{}", c_fixed(p, 7, decimals), latency_cell(h, p))?;
    }
    Ok(())
}

/// wrk2's recorded block, and with `-U` the uncorrected one.
fn write_wrk2_distributions(
    out: &mut dyn Write,
    corrected: &Histogram<u64>,
    uncorrected: Option<&Histogram<u64>>,
    percentiles: &[f64],
    decimals: usize,
) -> io::Result<()> {
    write_hdr_distribution(out, "Recorded Latency", corrected, percentiles, decimals)?;
    if let Some(uncorrected) = uncorrected {
        writeln!(out)?;
        let description =
            "Uncorrected Latency (measured without taking delayed starts into account)";
        write_hdr_distribution(out, description, uncorrected, percentiles, decimals)?;
    }
    Ok(())
}

/// wrk2's `print_hdr_latency` plus the separator `main` prints after it.
fn write_hdr_distribution(
    out: &mut dyn Write,
    description: &str,
    h: &Histogram<u64>,
    percentiles: &[f64],
    decimals: usize,
) -> io::Result<()> {
    writeln!(out, "  Latency Distribution (HdrHistogram - {description})")?;
    for &p in percentiles {
        writeln!(out, "{}%{}", c_fixed(p, 7, decimals), latency_cell(h, p))?;
    }
    write_spectrum(out, h, 5, 1000.0)?;
    writeln!(out, "{SEPARATOR}")
}

/// `print_units(hdr_value_at_percentile(h, p), format_time_us, 10)`.
/// A dash for a histogram with no latency in it.
fn latency_cell(h: &Histogram<u64>, percentile: f64) -> String {
    pad_units(&recorded_time(h, value_at_percentile(h, percentile)), 10)
}

/// From `N requests in T, B read` to `Transfer/sec`, for `stats`
/// measured over `runtime`.
pub fn write_summary(
    out: &mut dyn Write,
    stats: &Stats,
    runtime: Duration,
    protocol: Protocol,
) -> io::Result<()> {
    // wrk counts whole microseconds.
    let runtime_us = runtime.as_micros() as f64;
    let runtime_s = runtime_us / 1_000_000.0;
    writeln!(
        out,
        "  {} requests in {}, {}B read",
        stats.requests,
        format_time_us(runtime_us),
        format_binary(stats.bytes as f64)
    )?;
    write_errors(out, stats, protocol)?;
    write_streamed(out, &stats.streamed, runtime_s)?;
    writeln!(out, "Requests/sec: {}", c_fixed(per_second(stats.requests, runtime_s), 9, 2))?;
    writeln!(out, "Transfer/sec: {:>10}B", format_binary(per_second(stats.bytes, runtime_s)))
}

/// wrk's error lines, each only when non-zero, with pace's breakdown of the
/// socket errors by cause, most frequent first. Requests of the plan that
/// were never sent end wrk's line (`, unsent N`, only when there are any)
/// and get a line with how long they had waited (never in a latency);
/// requests a stop cut off get a line of their own.
fn write_errors(out: &mut dyn Write, stats: &Stats, protocol: Protocol) -> io::Result<()> {
    let e = &stats.errors;
    if e.socket_total() > 0 || e.unsent > 0 {
        write!(
            out,
            "  Socket errors: connect {}, read {}, write {}, timeout {}",
            e.connect, e.read, e.write, e.timeout
        )?;
        if e.unsent > 0 {
            write!(out, ", unsent {}", e.unsent)?;
        }
        writeln!(out)?;
        let mut causes: Vec<(&String, &u64)> = stats.error_causes.iter().collect();
        // Stable: equal counts stay in name order.
        causes.sort_by(|a, b| b.1.cmp(a.1));
        for (cause, n) in causes {
            writeln!(out, "    {cause}: {n}")?;
        }
        if e.unsent > 0 {
            let wait = &stats.unsent_wait;
            writeln!(
                out,
                "    unsent: due, but no connection was free before the end (waited median {}, \
                 max {}): {}",
                recorded_time(wait, value_at_percentile(wait, 50.0)),
                recorded_time(wait, wait.max()),
                e.unsent
            )?;
        }
    }
    if e.stopped > 0 {
        writeln!(
            out,
            "  In flight when stopped: {} (cut off by the stop: neither answered nor timed out)",
            e.stopped
        )?;
    }
    // gRPC calls that failed are counted by their code, in a line of
    // their own: they are no HTTP response's failure.
    let grpc_failed = stats.outcomes.grpc_failed();
    if e.status > grpc_failed {
        writeln!(out, "  Non-2xx or 3xx responses: {}", e.status - grpc_failed)?;
    }
    if grpc_failed > 0 {
        writeln!(out, "  gRPC calls not OK: {grpc_failed}")?;
    }
    if stats.nil_requests > 0 {
        writeln!(out, "  request() returned nil: {} (nothing sent)", stats.nil_requests)?;
    }
    write_stream_notes(out, protocol, &stats.http2)?;
    write_statuses(out, &stats.outcomes)
}

/// Of server-streaming gRPC calls, after wrk's lines and the statuses: the
/// messages received (per call, per second) and the time to each call's
/// first message.
fn write_streamed(out: &mut dyn Write, streamed: &Streamed, runtime_s: f64) -> io::Result<()> {
    if streamed.is_empty() {
        return Ok(());
    }
    if streamed.sent > 0 {
        writeln!(
            out,
            "  gRPC messages sent: {}, {:.2}/sec",
            streamed.sent,
            per_second(streamed.sent, runtime_s)
        )?;
    }
    let per_call = &streamed.messages_per_call;
    let mean = if per_call.is_empty() { 0.0 } else { spectrum::mean(per_call) };
    writeln!(
        out,
        "  gRPC messages received: {} ({mean:.2} per call, max {}), {:.2}/sec",
        streamed.messages,
        per_call.max(),
        per_second(streamed.messages, runtime_s)
    )?;
    let timed = [
        ("first message", &streamed.first_message, "from each call's intended time"),
        ("reply latency", &streamed.reply_latency, "from each message's intended time"),
    ];
    for (name, h, from) in timed.into_iter().filter(|(_, h, _)| !h.is_empty()) {
        writeln!(out, "  gRPC {name}: {} ({from})", p50_p99_max(h))?;
    }
    Ok(())
}

/// `p50 1.00ms, p99 2.00ms, max 3.00ms` of `h` (`-` for each figure when
/// it is empty).
fn p50_p99_max(h: &Histogram<u64>) -> String {
    let figure = |value: u64| recorded_time(h, value);
    format!(
        "p50 {}, p99 {}, max {}",
        figure(value_at_percentile(h, 50.0)),
        figure(value_at_percentile(h, 99.0)),
        figure(h.max())
    )
}

/// What HTTP/2 or HTTP/3 connections did besides carrying requests: a
/// server that allowed fewer streams than `--streams`, requests sent again
/// after the server refused them (HTTP/2: above its GOAWAY's last stream;
/// HTTP/3: H3_REQUEST_REJECTED, or above its GOAWAY).
fn write_stream_notes(
    out: &mut dyn Write,
    protocol: Protocol,
    counts: &Http2Counts,
) -> io::Result<()> {
    if let Some(limit) = counts.stream_limit {
        writeln!(
            out,
            "  {protocol}: the server allows {limit} concurrent streams per connection, fewer \
             than --streams: {limit} were used"
        )?;
    }
    if !counts.goaways_with_error.is_empty() {
        let codes: Vec<String> =
            counts.goaways_with_error.iter().map(|(code, n)| format!("{n} {code}")).collect();
        writeln!(
            out,
            "  {protocol}: the server ended connections with GOAWAY: {}",
            codes.join(", ")
        )?;
    }
    if counts.retried_after_goaway > 0 {
        let refused = match protocol {
            Protocol::Http3 => "rejected (H3_REQUEST_REJECTED, or above its GOAWAY)",
            _ => "did not process (above its GOAWAY's last stream)",
        };
        writeln!(
            out,
            "  {protocol}: {} requests the server {refused} went again on another connection, \
             their latency counted from their intended time",
            counts.retried_after_goaway
        )?;
    }
    Ok(())
}

/// What QUIC measured on an HTTP/3 run's connections, in a line of its
/// own (none over TCP).
fn write_quic(out: &mut dyn Write, quic: &QuicCounts) -> io::Result<()> {
    let Some(rtt) = quic.smoothed_rtt_mean_us() else { return Ok(()) };
    let lost = match quic.packets_sent {
        0 => 0.0,
        sent => 100.0 * quic.packets_lost as f64 / sent as f64,
    };
    let connections = if quic.connections == 1 { "connection" } else { "connections" };
    writeln!(
        out,
        "  QUIC: {} {connections}, {} packets sent, {} lost ({lost:.2}%), smoothed RTT {} (mean)",
        quic.connections,
        quic.packets_sent,
        quic.packets_lost,
        format_time_us(rtt)
    )
}

/// `  Status codes: 200: 9980, 503: 20`, in status order, when the
/// responses were not all of one 2xx status. wrk has no such line and
/// scripts that parse its report read the lines around it by their first
/// words, so a run that got nothing but `200 OK` (the common case) keeps
/// wrk's report exactly; a mix, or any other status, is worth the line.
fn write_statuses(out: &mut dyn Write, outcomes: &Outcomes) -> io::Result<()> {
    let codes: Vec<String> =
        outcomes.grpc().map(|(code, n)| format!("{}: {n}", grpc_status::name(code))).collect();
    if !codes.is_empty() {
        writeln!(out, "  gRPC status: {}", codes.join(", "))?;
    }
    let statuses: Vec<(u16, u64)> = outcomes.http().collect();
    let all_one_success =
        statuses.len() <= 1 && statuses.iter().all(|(code, _)| (200..300).contains(code));
    if all_one_success {
        return Ok(());
    }
    let list: Vec<String> = statuses.iter().map(|(status, n)| format!("{status}: {n}")).collect();
    writeln!(out, "  Status codes: {}", list.join(", "))
}

/// How late the generator sent requests compared with the plan (`-`
/// for each figure when nothing was sent).
pub fn write_schedule_lag(out: &mut dyn Write, lag: &Histogram<u64>) -> io::Result<()> {
    writeln!(
        out,
        "Schedule lag: {} (actual send - intended send; measures the load generator)",
        p50_p99_max(lag)
    )
}

/// With `--latency`, where connections' and requests' time went (a block
/// of pace's own, after wrk's lines): each phase that happened, with its
/// mean, median, p99, max and count.
fn write_phases(out: &mut dyn Write, phases: &Phases) -> io::Result<()> {
    let rows = [
        ("Connect", &phases.connect),
        ("TLS handshake", &phases.tls_handshake),
        ("First byte", &phases.first_byte),
    ];
    if rows.iter().all(|(_, h)| h.is_empty()) {
        return Ok(());
    }
    writeln!(out, "  Phases{:>21}{:>10}{:>10}{:>10}{:>10}", "Avg", "p50", "p99", "Max", "Count")?;
    for (name, h) in rows.into_iter().filter(|(_, h)| !h.is_empty()) {
        let time = |us: f64| pad_units(&format_time_us(us), 10);
        writeln!(
            out,
            "    {name:<15}{}{}{}{}{:>10}",
            time(spectrum::mean(h)),
            time(value_at_percentile(h, 50.0) as f64),
            time(value_at_percentile(h, 99.0) as f64),
            time(h.max() as f64),
            h.len()
        )?;
    }
    writeln!(out, "    (connect and TLS per connection; first byte from each request's send)")
}

/// A latency of `h` in wrk's format, or [`UNDEFINED`] when `h` is empty
/// (a percentile of nothing; the JSON has `null`).
fn recorded_time(h: &Histogram<u64>, us: u64) -> String {
    if h.is_empty() {
        UNDEFINED.to_string()
    } else {
        format_time_us(us as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BenchConfig;
    use crate::plan::PlanSpec;
    use crate::stats::ErrorKind;
    use crate::stats::Outcome;
    use crate::target::Target;

    /// A run, and what its report is asked to show.
    struct Case {
        run: Description,
        options: ReportOptions,
    }

    fn config(mode: Mode) -> Case {
        let run = Description::of(&BenchConfig {
            duration: Some(Duration::from_secs(30)),
            mode,
            ..BenchConfig::new(Target::parse("http://127.0.0.1:8080/index.html").unwrap())
        });
        Case { run, options: ReportOptions::default() }
    }

    fn result(stats: Stats, runtime: Duration) -> RunResult {
        RunResult::measured(stats, runtime)
    }

    fn render(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn report(case: &Case, result: &RunResult) -> String {
        render(|out| write_report(out, &case.run, &case.options, result))
    }

    /// A paced run that kept its plan: 1000 requests in 1 s at 1000/s, 1 ms
    /// each, sent on time.
    fn kept_plan() -> RunResult {
        let mut stats = Stats::new(3);
        for _ in 0..1000 {
            stats.response(Outcome::Http(200));
            stats.corrected.record(1000).unwrap();
            stats.uncorrected.record(1000).unwrap();
            stats.lag.record(20).unwrap();
        }
        stats.bytes = 1000 * 100;
        result(stats, Duration::from_secs(1))
    }

    #[test]
    fn header() {
        let mut cfg = config(Mode::ClosedLoop);
        let header = |case: &Case| render(|out| write_header(out, &case.run));
        assert_eq!(
            header(&cfg),
            "Running 30s test @ http://127.0.0.1:8080/index.html\n  2 threads and 10 connections\n"
        );
        cfg.run.duration = Some(Duration::from_secs(90));
        assert!(header(&cfg).starts_with("Running 2m test"));
        cfg.run.duration = Some(Duration::from_millis(500));
        assert!(header(&cfg).starts_with("Running 500ms test"));
        cfg.run.duration = Some(Duration::from_millis(1500));
        assert!(header(&cfg).starts_with("Running 1.50s test"));
    }

    #[test]
    fn thread_stats_rows() {
        let row = Row { mean: 635.91, stdev: 890.0, max: 12_920.0, within_stdev: 93.69 };
        assert_eq!(
            render(|out| write_row(out, "Latency", &row, format_time_us)),
            "    Latency   635.91us    0.89ms  12.92ms   93.69%\n"
        );
        let row = Row { mean: 56_200.0, stdev: 8_070.0, max: 62_000.0, within_stdev: 86.54 };
        assert_eq!(
            render(|out| write_row(out, "Req/Sec", &row, format_metric)),
            "    Req/Sec    56.20k     8.07k   62.00k    86.54%\n"
        );
    }

    #[test]
    fn thread_stats_header_and_latency() {
        let mut stats = Stats::new(3);
        for v in 1..=1000 {
            stats.corrected.record(v).unwrap();
        }
        stats.rate_samples = vec![100.0, 200.0, 300.0];
        assert_eq!(
            render(|out| write_thread_stats(out, &stats)),
            "  Thread Stats   Avg      Stdev     Max   +/- Stdev\n\
             \x20   Latency   500.50us  288.67us   1.00ms   58.00%\n\
             \x20   Req/Sec   200.00    100.00   300.00    100.00%\n"
        );
    }

    #[test]
    fn rate_row_counts_samples_like_wrk() {
        // mean 20, sample stdev 10: 10, 20 and 30 are within, 40 is not.
        let row = rate_row(&[10.0, 20.0, 30.0, 20.0]);
        assert_eq!((row.mean, row.max), (20.0, 30.0));
        assert!((row.stdev - 8.16496580927726).abs() < 1e-12);
        assert_eq!(row.within_stdev, 50.0);
        let single = rate_row(&[7.0]);
        assert_eq!((single.mean, single.stdev, single.within_stdev), (7.0, 0.0, 100.0));
    }

    #[test]
    fn empty_run_prints_dashes_not_nan() {
        let stats = Stats::new(3);
        assert_eq!(
            render(|out| write_thread_stats(out, &stats)),
            "  Thread Stats   Avg      Stdev     Max   +/- Stdev\n\
             \x20   Latency        -         -        -         - \n\
             \x20   Req/Sec     0.00      0.00     0.00         - \n"
        );
    }

    #[test]
    fn wrk_latency_distribution() {
        let mut cfg = config(Mode::ClosedLoop);
        cfg.options.latency = true;
        let mut stats = Stats::new(3);
        for v in 1..=1000 {
            stats.corrected.record(v * 10).unwrap();
        }
        let text = report(&cfg, &result(stats, Duration::from_secs(1)));
        assert!(text.contains(
            "  Latency Distribution\n     50%    5.00ms\n     75%    7.50ms\n     90%    9.01ms\n     99%    9.90ms\n  0 requests in"
        ), "{text}");
        assert!(!text.contains("Detailed Percentile spectrum"));
        assert!(!text.contains("Schedule lag"));
    }

    #[test]
    fn wrx_and_custom_percentiles() {
        let mut cfg = config(Mode::ClosedLoop);
        cfg.options.latency = true;
        let mut stats = Stats::new(3);
        for v in 1..=10_000 {
            stats.corrected.record(v).unwrap();
        }
        let run = result(stats, Duration::from_secs(1));
        // A wrx option brings wrx's six percentiles with two decimals.
        cfg.options.histogram = true;
        let text = report(&cfg, &run);
        assert!(text.contains(
            "  Latency Distribution\n  50.00%    5.00ms\n  75.00%    7.50ms\n  90.00%    9.01ms\n  99.00%    9.90ms\n  99.90%    9.99ms\n  99.99%   10.00ms\n  0 requests in"
        ), "{text}");
        // --percentiles replaces the list, with the decimals it needs.
        cfg.options.percentiles = Some(vec![50.0, 99.999]);
        assert!(report(&cfg, &run).contains(
            "  Latency Distribution\n 50.000%    5.00ms\n 99.999%   10.01ms\n  0 requests in"
        ));
        cfg.options.histogram = false;
        cfg.options.percentiles = Some(vec![90.0]);
        assert!(report(&cfg, &run).contains("  Latency Distribution\n  90.00%    9.01ms\n"));
        // In paced mode the wrk2 block keeps its three decimals.
        cfg.run.mode = Mode::Paced(PlanSpec::constant(1000.0));
        cfg.options.percentiles = Some(vec![50.0, 99.9999]);
        let text = report(&cfg, &kept_plan());
        assert!(
            text.contains("Recorded Latency)\n50.0000%    1.00ms\n99.9999%    1.00ms\n\n"),
            "{text}"
        );
    }

    #[test]
    fn wrk2_latency_distributions() {
        let mut cfg = config(Mode::Paced(PlanSpec::constant(1000.0)));
        cfg.options.latency = true;
        let text = report(&cfg, &kept_plan());
        let recorded = "  Latency Distribution (HdrHistogram - Recorded Latency)\n 50.000%    1.00ms\n 75.000%    1.00ms\n 90.000%    1.00ms\n 99.000%    1.00ms\n 99.900%    1.00ms\n 99.990%    1.00ms\n 99.999%    1.00ms\n100.000%    1.00ms\n\n  Detailed Percentile spectrum:\n";
        assert!(text.contains(recorded), "{text}");
        assert!(text.contains(&format!("#[Buckets =           27, SubBuckets     =         2048]\n{SEPARATOR}\n  1000 requests in")));
        assert!(!text.contains("Uncorrected"));

        cfg.options.u_latency = true;
        let text = report(&cfg, &kept_plan());
        assert!(text.contains(&format!(
            "{SEPARATOR}\n\n  Latency Distribution (HdrHistogram - Uncorrected Latency (measured without taking delayed starts into account))\n 50.000%    1.00ms\n"
        )));
        assert_eq!(text.matches(SEPARATOR).count(), 2);
        assert_eq!(text.matches("Detailed Percentile spectrum").count(), 2);
    }

    /// The percentiles printed with too few samples beyond them, in a
    /// line of their own after wrk's lines; none without -L, none when
    /// every one has enough, none for an empty run.
    #[test]
    fn too_few_samples_line() {
        let mut cfg = config(Mode::Paced(PlanSpec::constant(1000.0)));
        let line = "Too few samples: 99.900%, 99.990%, 99.999%, 100.000% have fewer than 10 of \
                    the 1000 latencies beyond them; chance alone moves them from run to run\n";
        assert!(!report(&cfg, &kept_plan()).contains("Too few samples"));
        cfg.options.latency = true;
        let text = report(&cfg, &kept_plan());
        let lag = "Schedule lag: p50 20.00us, p99 20.00us, max 20.00us (actual send - intended \
                   send; measures the load generator)\n";
        assert!(text.contains(&format!("{lag}{line}")), "{text}");
        // The wrk2 block itself is unchanged.
        assert!(text.contains(" 99.900%    1.00ms\n 99.990%    1.00ms\n"), "{text}");
        cfg.options.percentiles = Some(vec![50.0, 99.0]);
        assert!(!report(&cfg, &kept_plan()).contains("Too few samples"));
        cfg.options.percentiles = Some(vec![50.0, 99.9]);
        assert!(report(&cfg, &kept_plan()).contains(
            "Too few samples: 99.900% has fewer than 10 of the 1000 latencies beyond it; chance \
             alone moves it from run to run\n"
        ));
        assert!(!report(&cfg, &result(Stats::new(3), Duration::ZERO)).contains("Too few"));
        // wrk's labels in the closed loop: 100 samples back p50 to p90.
        let mut closed = config(Mode::ClosedLoop);
        closed.options.latency = true;
        let mut stats = Stats::new(3);
        (1..=100).for_each(|v| stats.corrected.record(v).unwrap());
        let text = report(&closed, &result(stats, Duration::from_secs(1)));
        assert!(text.contains("Too few samples: 99% has fewer than 10 of the 100"), "{text}");
    }

    #[test]
    fn summary_lines() {
        let mut stats = Stats::new(3);
        stats.requests = 22_464_657;
        stats.bytes = 3_710_000_000;
        let text = render(|out| {
            write_summary(out, &stats, Duration::from_micros(30_000_100), Protocol::Http1)
        });
        assert_eq!(
            text,
            "  22464657 requests in 30.00s, 3.46GB read\nRequests/sec: 748819.40\nTransfer/sec:    117.94MB\n"
        );
    }

    #[test]
    fn zero_runtime_gives_zero_rates() {
        let mut stats = Stats::new(3);
        stats.requests = 5;
        stats.bytes = 500;
        let text = render(|out| write_summary(out, &stats, Duration::ZERO, Protocol::Http1));
        assert_eq!(text, "  5 requests in 0.00us, 500.00B read\nRequests/sec:      0.00\nTransfer/sec:       0.00B\n");
    }

    #[test]
    fn socket_errors_and_causes() {
        let mut stats = Stats::new(3);
        stats.error(ErrorKind::Timeout, "no response within 2s");
        for _ in 0..12 {
            stats.error(ErrorKind::Connect, "Connection refused (os error 111)");
        }
        stats.error(ErrorKind::Read, "Connection reset by peer (os error 104)");
        stats.response(Outcome::Http(500));
        assert_eq!(
            render(|out| write_errors(out, &stats, Protocol::Http1)),
            "  Socket errors: connect 12, read 1, write 0, timeout 1\n\
             \x20   connect: Connection refused (os error 111): 12\n\
             \x20   read: Connection reset by peer (os error 104): 1\n\
             \x20   timeout: no response within 2s: 1\n\
             \x20 Non-2xx or 3xx responses: 1\n\
             \x20 Status codes: 500: 1\n"
        );
    }

    #[test]
    fn status_errors_alone_print_no_socket_line() {
        let mut stats = Stats::new(3);
        stats.response(Outcome::Http(404));
        stats.response(Outcome::Http(503));
        assert_eq!(
            render(|out| write_errors(out, &stats, Protocol::Http1)),
            "  Non-2xx or 3xx responses: 2\n  Status codes: 404: 1, 503: 1\n"
        );
        assert_eq!(render(|out| write_errors(out, &Stats::new(3), Protocol::Http1)), "");
    }

    #[test]
    fn status_codes_only_when_not_all_one_success() {
        let statuses = |list: &[(u16, u64)]| {
            let mut stats = Stats::new(3);
            for &(status, n) in list {
                (0..n).for_each(|_| stats.response(Outcome::Http(status)));
            }
            render(|out| write_errors(out, &stats, Protocol::Http1))
        };
        // wrk's report, unchanged, for the common case.
        assert_eq!(statuses(&[(200, 9980)]), "");
        assert_eq!(statuses(&[(204, 3)]), "");
        assert_eq!(statuses(&[(200, 9980), (201, 20)]), "  Status codes: 200: 9980, 201: 20\n");
        assert_eq!(statuses(&[(302, 4)]), "  Status codes: 302: 4\n");
        assert_eq!(
            statuses(&[(503, 20), (200, 9980)]),
            "  Non-2xx or 3xx responses: 20\n  Status codes: 200: 9980, 503: 20\n"
        );
    }

    #[test]
    fn undefined_figures_are_dashes() {
        let mut cfg = config(Mode::Paced(PlanSpec::constant(10.0)));
        cfg.options.latency = true;
        let text = report(&cfg, &result(Stats::new(3), Duration::ZERO));
        assert!(!text.to_lowercase().contains("nan"), "{text}");
        assert!(text.contains(" 50.000%       -  \n"), "{text}");
        assert!(
            text.contains("#[Mean    =            -, StdDeviation   =            -]"),
            "{text}"
        );
        assert!(text.contains("    Latency        -         -        -         - \n"), "{text}");
        assert!(text.contains("Schedule lag: p50 -, p99 -, max - ("), "{text}");
        // One sample: a stdev of 0, not an undefined one.
        let mut one = Stats::new(3);
        one.response(Outcome::Http(200));
        one.corrected.record(1000).unwrap();
        one.lag.record(10).unwrap();
        one.rate_samples.push(1.0);
        let text = report(&cfg, &result(one, Duration::from_secs(1)));
        assert!(!text.to_lowercase().contains("nan") && !text.contains("  - "), "{text}");
        assert!(!text.contains("= -") && !text.contains("p50 -"), "{text}");
    }

    #[test]
    fn paced_run_that_kept_the_plan() {
        let cfg = config(Mode::Paced(PlanSpec::constant(1000.0)));
        let text = report(&cfg, &kept_plan());
        assert!(text.ends_with(
            "Requests/sec:   1000.00\nTransfer/sec:     97.66KB\nSchedule lag: p50 20.00us, p99 20.00us, max 20.00us (actual send - intended send; measures the load generator)\n"
        ), "{text}");
        assert!(!text.contains("Warning"));
    }

    #[test]
    fn empty_paced_run_does_not_panic() {
        let mut cfg = config(Mode::Paced(PlanSpec::constant(100.0)));
        cfg.options.u_latency = true;
        let text = report(&cfg, &result(Stats::new(3), Duration::ZERO));
        assert!(text.contains("Schedule lag: p50 -, p99 -, max -"), "{text}");
        // Nothing answered, nothing failed, nothing due: nothing to blame.
        assert!(!text.contains("Warning"), "{text}");
    }
}
