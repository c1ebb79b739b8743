//! The report's words and tables: the settings, the verdict, the summary
//! figures, the latency percentiles, statuses and error causes, stages,
//! threads and merged inputs. Figures are formatted as the text report
//! formats them ([`crate::units`]); every text is escaped.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::escape::escape;
use super::{Origin, Page};
use crate::config::Mode;
use crate::grpc_status;
use crate::plan::Arrival;
use crate::provenance::masked_url;
use crate::report::concurrency::Concurrency;
use crate::report::plan::stage_rows;
use crate::report::targets::{statuses_text, target_rows};
use crate::report::text::WRK2_PERCENTILES;
use crate::report::{diagnose, validity};
use crate::stats::confidence::{self, MIN_SAMPLES_BEYOND};
use crate::stats::spectrum::{self, value_at_percentile};
use crate::units::per_second;
use crate::units::{format_binary, format_metric, format_rfc3339, format_time_us, UNDEFINED};

/// A time in microseconds as the text report prints it, or a dash.
fn time(us: Option<u64>) -> String {
    us.map_or(UNDEFINED.to_string(), |us| format_time_us(us as f64))
}

fn seconds(duration: std::time::Duration) -> String {
    format_time_us(duration.as_micros() as f64)
}

/// A two-column table of names and (already escaped) values.
pub(crate) fn facts(rows: &[(&str, String)]) -> String {
    let mut out = String::from(r#"<table class="facts">"#);
    for (name, value) in rows {
        let _ = write!(out, "<tr><th>{}</th><td>{value}</td></tr>", escape(name));
    }
    out.push_str("</table>\n");
    out
}

/// A table with a header row; cells are already escaped.
pub(crate) fn grid(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from(r#"<table class="grid"><thead><tr>"#);
    for name in head {
        let _ = write!(out, "<th>{}</th>", escape(name));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// How the run was run.
pub fn settings(page: &Page) -> String {
    let run = page.run;
    let mut rows = vec![("URL", escape(&masked_url(&run.url)))];
    let mode = match &run.mode {
        Mode::ClosedLoop => "closed loop (wrk: as fast as responses come)".to_string(),
        Mode::Paced(spec) => {
            let arrival = match spec.arrival {
                Arrival::Constant => "evenly spaced",
                Arrival::Poisson => "Poisson arrivals",
            };
            let rate = run.target_rate().map_or(UNDEFINED.to_string(), format_metric);
            format!("paced (wrk2): {rate} requests/s on average, {arrival}")
        }
    };
    rows.push(("Mode", escape(&mode)));
    if let Mode::Paced(spec) = &run.mode {
        if spec.arrival == Arrival::Poisson {
            rows.push(("Seed", run.seed.to_string()));
        }
    }
    rows.push((
        "Threads, connections",
        format!("{} threads, {} connections", run.threads, run.connections_of_instance()),
    ));
    let planned = match (run.duration, run.requests) {
        (Some(d), None) => seconds(d),
        (Some(d), Some(n)) => format!("{}, at most {n} requests", seconds(d)),
        (None, n) => format!("{} requests", n.unwrap_or_default()),
    };
    rows.push(("Duration", planned));
    if !run.warmup.is_zero() {
        rows.push(("Warm-up", format!("{} (sent, not counted)", seconds(run.warmup))));
    }
    rows.push(("Timeout", seconds(run.timeout)));
    if run.shard.count > 1 {
        rows.push((
            "Shard",
            format!(
                "{}/{}: {} of the {} connections",
                run.shard.index,
                run.shard.count,
                run.connections_of_instance(),
                run.connections
            ),
        ));
    }
    if let Some(at) = run.start_at {
        rows.push(("Plan start", escape(&format_rfc3339(at))));
    }
    rows.push(("Measured from", escape(&format_rfc3339(page.result.measured_from))));
    rows.push(("Sending window", seconds(page.result.runtime)));
    rows.push(("Histograms", format!("HdrHistogram, {} significant digits", run.digits)));
    if let Some(provenance) = &run.provenance {
        let started = crate::report::json::started_at(run, page.result);
        rows.push(("Command line", format!("<code>{}</code>", escape(&provenance.shell_line()))));
        rows.push((
            "Run by",
            escape(&format!("pace {} on {}", provenance.version, provenance.host)),
        ));
        rows.push(("Started", escape(&provenance.started(started))));
    }
    match &page.origin {
        Origin::Live => {}
        Origin::Saved(source) => rows.push(("Saved in", escape(source))),
        Origin::Merged(merged) => rows.push(("Merged", escape(&merged.what))),
    }
    facts(&rows)
}

/// The verdict: one line saying whether the run is to be trusted, then
/// the warnings, the SLO verdicts and what cut the run short.
pub fn verdict(page: &Page) -> String {
    let (run, result) = (page.run, page.result);
    let warnings = diagnose::diagnose(run, result);
    let validity = validity::judge(run, result);
    let verdicts = page.verdicts;
    let failed = verdicts.iter().filter(|v| !v.ok).count();
    let e = &result.total.errors;
    let errors = e.socket_total() + e.status + e.unsent;
    let (class, headline) = if failed > 0 {
        ("bad", format!("SLO failed: {failed} of {} objectives not met", verdicts.len()))
    } else if !validity.trusted() {
        let causes: Vec<&str> = validity.causes.iter().map(|c| c.code.short()).collect();
        ("warn", format!("not trusted: {}", causes.join(", ")))
    } else if !warnings.is_empty() {
        let n = warnings.len();
        let noun = if n == 1 { "warning" } else { "warnings" };
        ("warn", format!("{n} {noun}: the run did not keep its plan"))
    } else if errors > 0 {
        ("warn", format!("{errors} errors"))
    } else if result.total.requests == 0 {
        ("bad", "no response was measured".to_string())
    } else if !verdicts.is_empty() {
        ("ok", "every objective met".to_string())
    } else {
        ("ok", "no warnings".to_string())
    };
    let mut out = format!(r#"<p class="verdict {class}">{}</p>"#, escape(&headline));
    let mut notes = Vec::new();
    if errors > 0 {
        notes.push(format!(
            "{errors} errors: connect {}, read {}, write {}, timeout {}, status > 399 {}, \
             unsent {}.",
            e.connect, e.read, e.write, e.timeout, e.status, e.unsent
        ));
    }
    if let Some(signal) = result.interrupted {
        notes.push(format!(
            "Stopped early by {}: the report covers what was measured.",
            signal.name()
        ));
    }
    if result.script_stopped {
        notes.push("The script stopped every thread (thread:stop()) before the end.".to_string());
    }
    if let Origin::Merged(merged) = &page.origin {
        notes.extend(merged.notes.iter().cloned());
    }
    for d in &warnings {
        notes.push(format!("Warning: {} [{}]", d.message, d.code.name()));
    }
    for cause in &validity.causes {
        notes.push(format!("Not trusted: {} [{}]", cause.message, cause.code.name()));
    }
    if !notes.is_empty() {
        out.push_str(r#"<ul class="notes">"#);
        for note in notes {
            let _ = write!(out, "<li>{}</li>", escape(&note));
        }
        out.push_str("</ul>\n");
    }
    if !verdicts.is_empty() {
        let rows: Vec<Vec<String>> = verdicts
            .iter()
            .map(|v| {
                let (class, word) = if v.ok { ("ok", "ok") } else { ("bad", "FAIL") };
                vec![
                    format!(r#"<span class="{class}">{word}</span>"#),
                    escape(&v.objective.spaced()),
                    escape(&v.measured()),
                ]
            })
            .collect();
        out.push_str(&grid(&["SLO", "objective", "measured"], &rows));
    }
    out
}

/// Requests, rates, bytes and errors of the whole run.
pub fn summary(page: &Page) -> String {
    let (run, result) = (page.run, page.result);
    let stats = &result.total;
    let runtime = result.runtime.as_secs_f64();
    let mut rows = vec![
        ("Requests", stats.requests.to_string()),
        ("Requests/sec", format_metric(per_second(stats.requests, runtime))),
    ];
    if let Some(target) = run.target_rate() {
        rows.push(("Target requests/sec", format_metric(target)));
    }
    let concurrency = Concurrency::of(run, result);
    if let Some(mean) = concurrency.mean_in_flight {
        rows.push((
            "In flight",
            format!("{mean:.2} on average, of {}", concurrency.describe_slots()),
        ));
    }
    rows.push(("Read", format!("{}B", format_binary(stats.bytes as f64))));
    rows.push(("Transfer/sec", format!("{}B", format_binary(per_second(stats.bytes, runtime)))));
    let e = &stats.errors;
    rows.push((
        "Socket errors",
        format!(
            "connect {}, read {}, write {}, timeout {}{}",
            e.connect,
            e.read,
            e.write,
            e.timeout,
            if e.unsent > 0 { format!(", unsent {}", e.unsent) } else { String::new() }
        ),
    ));
    if e.unsent > 0 {
        let wait = &stats.unsent_wait;
        let waited = if wait.is_empty() {
            String::new()
        } else {
            format!(
                "; they had waited median {}, max {}",
                format_time_us(value_at_percentile(wait, 50.0) as f64),
                format_time_us(wait.max() as f64)
            )
        };
        rows.push((
            "Unsent",
            format!("{}: due, but no connection was free before the end{waited}", e.unsent),
        ));
    }
    if e.stopped > 0 {
        rows.push((
            "In flight when stopped",
            format!("{}: cut off by the stop, neither answered nor timed out", e.stopped),
        ));
    }
    // gRPC calls that failed are counted by their code, in rows of their
    // own, as in the text report.
    let codes: Vec<String> = stats
        .outcomes
        .grpc()
        .map(|(code, n)| format!("{}: {n}", grpc_status::name(code)))
        .collect();
    let grpc_failed = stats.outcomes.grpc_failed();
    rows.push(("Status > 399", e.status.saturating_sub(grpc_failed).to_string()));
    let statuses: Vec<String> = stats.outcomes.http().map(|(s, n)| format!("{s}: {n}")).collect();
    rows.push(("Status codes", escape(&statuses.join(", "))));
    if !codes.is_empty() {
        rows.push(("gRPC calls not OK", grpc_failed.to_string()));
        rows.push(("gRPC status", codes.join(", ")));
    }
    let streamed = &stats.streamed;
    if !streamed.is_empty() {
        let per_call = &streamed.messages_per_call;
        let mean = if per_call.is_empty() { 0.0 } else { spectrum::mean(per_call) };
        let received =
            format!("{} ({mean:.2} per call, max {})", streamed.messages, per_call.max());
        rows.push(("gRPC messages received", received));
        if streamed.sent > 0 {
            rows.push(("gRPC messages sent", streamed.sent.to_string()));
        }
        let timed = [
            ("gRPC first message", &streamed.first_message, "call's"),
            ("gRPC reply latency", &streamed.reply_latency, "message's"),
        ];
        for (name, h, of) in timed.into_iter().filter(|(_, h, _)| !h.is_empty()) {
            let at = |p: f64| format_time_us(value_at_percentile(h, p) as f64);
            let text = format!("p50 {}, p99 {}, from each {of} intended time", at(50.0), at(99.0));
            rows.push((name, text));
        }
    }
    if stats.nil_requests > 0 {
        rows.push(("request() returned nil", stats.nil_requests.to_string()));
    }
    if stats.warmup.requests + stats.warmup.errors > 0 {
        rows.push((
            "Warm-up",
            format!(
                "{} requests, {} errors (not counted)",
                stats.warmup.requests, stats.warmup.errors
            ),
        ));
    }
    let mut out = facts(&rows);
    if !stats.error_causes.is_empty() {
        let rows: Vec<Vec<String>> = stats
            .error_causes
            .iter()
            .map(|(cause, n)| vec![escape(cause), n.to_string()])
            .collect();
        out.push_str(&grid(&["error cause", "count"], &rows));
    }
    out
}

/// The latency percentiles, with the mean, stdev and count, for each
/// histogram the run has. Each value has its 95% confidence interval
/// under it, and a mark when it has too few samples beyond it
/// ([`confidence`]). The list is `--percentiles`, or wrk2's that the
/// first column's samples back (at least the median); a note names the
/// others.
pub fn latency(page: &Page) -> String {
    let (run, stats) = (page.run, &page.result.total);
    let paced = matches!(run.mode, Mode::Paced(_));
    // The closed loop has nothing to correct: its requests are sent when
    // they are meant to be, so its one latency is just that.
    let first = if paced { "corrected" } else { "latency" };
    let mut columns: Vec<(&str, &Histogram<u64>)> = vec![(first, &stats.corrected)];
    if paced {
        columns.push(("uncorrected", &stats.uncorrected));
        columns.push(("schedule lag", &stats.lag));
    }
    // Where the time went, for the phases that happened (the connect and
    // TLS handshake per connection, the first byte from each send).
    let phases = &stats.phases;
    let phase_columns = [
        ("connect", &phases.connect),
        ("TLS handshake", &phases.tls_handshake),
        ("first byte", &phases.first_byte),
    ];
    columns.extend(phase_columns.into_iter().filter(|(_, h)| !h.is_empty()));
    let (percentiles, left_out) = match page.report.percentiles.as_deref() {
        Some(asked) => (asked.to_vec(), Vec::new()),
        None => confidence::backed(&WRK2_PERCENTILES, stats.corrected.len()),
    };
    let value = |h: &Histogram<u64>, p: f64| {
        let Some((low, high)) = confidence::interval(h, p) else { return time(None) };
        let shown = time(Some(value_at_percentile(h, p)));
        let bound = |v: Option<u64>| v.map(|v| format_time_us(v as f64));
        let interval = format!(
            "{}, {}",
            bound(low).map_or("(0".to_string(), |low| format!("[{low}")),
            bound(high).map_or("∞)".to_string(), |high| format!("{high}]")),
        );
        let shown = if confidence::enough(h.len(), p) {
            shown
        } else {
            format!(r#"<span class="few" title="too few samples">{shown}†</span>"#)
        };
        format!(r#"{shown}<span class="ci">{}</span>"#, escape(&interval))
    };
    let mut rows: Vec<Vec<String>> = percentiles
        .iter()
        .map(|&p| {
            let mut row = vec![format!("{p}%")];
            row.extend(columns.iter().map(|(_, h)| value(h, p)));
            row
        })
        .collect();
    let stat = |name: &str, f: fn(&Histogram<u64>) -> f64| {
        let mut row = vec![name.to_string()];
        row.extend(columns.iter().map(|(_, h)| {
            let v = f(h);
            if v.is_finite() {
                format_time_us(v)
            } else {
                UNDEFINED.to_string()
            }
        }));
        row
    };
    rows.push(stat("mean", spectrum::mean));
    rows.push(stat("stdev", spectrum::stddev));
    let mut count = vec!["count".to_string()];
    count.extend(columns.iter().map(|(_, h)| h.len().to_string()));
    rows.push(count);
    let mut head = vec!["percentile"];
    head.extend(columns.iter().map(|(name, _)| *name));
    let mut out = grid(&head, &rows);
    let mut note = format!(
        "Under each value its 95% confidence interval (distribution-free, from the order \
         statistics). † fewer than {MIN_SAMPLES_BEYOND} samples beyond the percentile (below \
         it under 50%): too few to tell it from chance."
    );
    if !left_out.is_empty() {
        let names: Vec<String> = left_out.iter().map(|p| format!("{p}%")).collect();
        let _ = write!(
            note,
            " Left out for too few samples: {} (--percentiles shows them).",
            names.join(", ")
        );
    }
    let _ = writeln!(out, r#"<p class="note">{}</p>"#, escape(&note));
    out
}

/// One row per stage of `--stages`; nothing without stages.
pub fn stages(page: &Page) -> String {
    let Mode::Paced(spec) = &page.run.mode else { return String::new() };
    if spec.stages.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = stage_rows(page.run, spec, page.result)
        .iter()
        .map(|row| {
            vec![
                (row.index + 1).to_string(),
                format!("{} to {}", seconds(row.start), seconds(row.start + row.duration)),
                format!("{} to {}", format_metric(row.from_rate), format_metric(row.to_rate)),
                format_metric(row.target_rate),
                format_metric(row.achieved_rate),
                row.requests.to_string(),
                time(row.p50_us),
                time(row.p99_us),
            ]
        })
        .collect();
    grid(&["stage", "time", "rate/s", "target/s", "achieved/s", "requests", "p50", "p99"], &rows)
}

/// One row per target of a targets file of several; nothing otherwise.
pub fn targets(page: &Page) -> String {
    let rows: Vec<Vec<String>> = target_rows(page.result)
        .iter()
        .map(|row| {
            vec![
                escape(&row.label),
                row.requests.to_string(),
                format_metric(row.rate),
                time(row.p50_us),
                time(row.p99_us),
                row.errors.to_string(),
                row.unsent.to_string(),
                escape(&statuses_text(&row.statuses)),
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    grid(&["target", "requests", "req/s", "p50", "p99", "errors", "unsent", "statuses"], &rows)
}

/// One row per engine thread (of every input, when merged).
pub fn threads(page: &Page) -> String {
    let rows: Vec<Vec<String>> = page
        .result
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let e = &t.errors;
            vec![
                i.to_string(),
                t.requests.to_string(),
                format!("{}B", format_binary(t.bytes as f64)),
                e.connect.to_string(),
                e.read.to_string(),
                e.write.to_string(),
                e.timeout.to_string(),
                e.status.to_string(),
            ]
        })
        .collect();
    grid(
        &[
            "thread",
            "requests",
            "bytes read",
            "connect",
            "read errors",
            "write",
            "timeout",
            "status > 399",
        ],
        &rows,
    )
}

/// One row per merged input; nothing for a single run.
pub fn inputs(page: &Page) -> String {
    let Origin::Merged(merged) = &page.origin else { return String::new() };
    let paced = matches!(page.run.mode, Mode::Paced(_));
    let rows: Vec<Vec<String>> = merged
        .inputs
        .iter()
        .map(|input| {
            let mut row = vec![
                escape(&input.name),
                input.requests.to_string(),
                format_metric(input.requests_per_sec),
                time(input.latency_p99_us),
            ];
            if paced {
                row.push(time(input.lag_p99_us));
            }
            row.push(input.errors.to_string());
            row.push(escape(&input.source));
            row
        })
        .collect();
    let mut head = vec![merged.label, "requests", "req/sec", "latency p99"];
    if paced {
        head.push("lag p99");
    }
    head.extend(["errors", "file"]);
    format!("<h3>Per {}</h3>\n{}", merged.label, grid(&head, &rows))
}
