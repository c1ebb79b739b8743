//! The JSON report (`-e/--json`): one object per report, on one line. The
//! schema is documented field by field in `docs/json.md`; bump
//! [`SCHEMA_VERSION`] when a field changes meaning or goes away (adding one
//! does not).
//!
//! It keeps the yicwang wrk2 fork's fields with their meaning (`errors`
//! with `connect read write timeout http_error`, `total_req`, `rps`,
//! `rx_bps`, `hist`), including `rx_bps` as the fork's formatted string
//! (`"17.03KB"`), so programs written for the fork keep working; every
//! figure is also there as a plain number with its unit in its name.
//!
//! [`format`] declares the reports' fields, for writing them here and for
//! reading them back (`crate::merge::saved`).

pub mod format;

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use super::concurrency::Concurrency;
use super::hlog::encode_compressed;
use super::text::WRK2_PERCENTILES;
use super::ReportOptions;
use super::{diagnose, plan, series, targets, validity};
use crate::config::Mode;
use crate::description::{targets_order_name, CallKind, Description};
use crate::grpc_status;
use crate::plan::Arrival;
use crate::provenance::masked_url;
use crate::reach::Family;
use crate::slo;
use crate::stats::confidence;
use crate::stats::course::Course;
use crate::stats::spectrum::{self, value_at_percentile};
use crate::stats::{Interval, QuicCounts, RunResult, Stats};
use crate::units::{format_binary, per_second};
pub use format::{
    percentile_key, ConcurrencyReport, CourseInfo, CoursePeriodInfo, ErrorCounts, GeneratorInfo,
    GrpcStream, Latency, LatencyBins, MergedInput, Percentiles, Period, Phase, Phases, PlanInfo,
    QuicInfo, Report, RunOnly, ShardInfo, StageReport, StageSpec, Summary, TargetReport,
    ThreadCounts, TimeSeries, WarmupInfo, SCHEMA_VERSION,
};

/// What QUIC measured, when the run had HTTP/3 connections.
fn quic_info(quic: &QuicCounts) -> Option<QuicInfo> {
    Some(QuicInfo {
        connections: quic.connections,
        packets_sent: quic.packets_sent,
        packets_lost: quic.packets_lost,
        smoothed_rtt_mean_us: quic.smoothed_rtt_mean_us()?,
    })
}

/// When `result`'s run began sending: its measured part began after the
/// warm-up.
pub fn started_at(run: &Description, result: &RunResult) -> SystemTime {
    result.measured_from.checked_sub(run.warmup).unwrap_or(result.measured_from)
}

/// The report of one `-p` period.
pub fn period_report(
    run: &Description,
    options: &ReportOptions,
    interval: &Interval,
) -> io::Result<Report> {
    let mut report = common_fields(run, options, "period", &interval.stats, interval.length)?;
    report.period = Some(Period {
        index: interval.index,
        start_s: interval.start.as_secs_f64(),
        length_s: interval.length.as_secs_f64(),
    });
    Ok(report)
}

/// The report of the whole run.
/// The report of the whole run, with the verdicts on its `--slo`
/// objectives (none without).
pub fn final_report(
    run: &Description,
    options: &ReportOptions,
    result: &RunResult,
    verdicts: &[slo::Verdict],
) -> io::Result<Report> {
    let mut report = common_fields(run, options, "final", &result.total, result.runtime)?;
    let slots = series::slot_count(result, run.duration);
    let per_thread_series = series::per_thread(result, slots);
    let interval_ms = result.series_interval.as_micros() as f64 / 1000.0;
    report.run = Some(RunOnly {
        unsent: result.total.errors.unsent,
        generated_by: format!("pace {}", env!("CARGO_PKG_VERSION")),
        provenance: run.provenance.as_ref().map(|p| p.with_start(started_at(run, result))),
        measured_from_unix_s: unix_seconds(result.measured_from),
        timeout_s: run.timeout.as_secs_f64(),
        interrupted_by: result.interrupted.map(|signal| signal.name().to_string()),
        stopped_by_script: result.script_stopped,
        per_thread: result
            .threads
            .iter()
            .enumerate()
            .map(|(thread, stats)| ThreadCounts {
                thread,
                requests: stats.requests,
                bytes: stats.bytes,
                errors: ErrorCounts::from(&stats.errors),
            })
            .collect(),
        timeseries: options.timeseries.map(|_| TimeSeries {
            interval_ms,
            requests: series::totals(&per_thread_series, slots),
        }),
        thread_timeseries: options
            .thread_timeseries
            .then(|| TimeSeries { interval_ms, requests: per_thread_series.clone() }),
        latency_histogram: options
            .histogram
            .then(|| LatencyBins(series::bins(&result.total.corrected).collect())),
        shard: ShardInfo {
            index: run.shard.index,
            count: run.shard.count,
            connections: run.connections_of_instance(),
        },
        start_at: run.start_at.map(crate::units::format_rfc3339),
        start_at_unix_s: run.start_at.map(unix_seconds),
        plan: plan_info(run),
        warmup: (!run.warmup.is_zero()).then_some(WarmupInfo {
            duration_s: run.warmup.as_secs_f64(),
            requests: result.total.warmup.requests,
            errors: result.total.warmup.errors,
        }),
        stages: stage_reports(run, result)?,
        targets: target_reports(result)?,
        slo: (!verdicts.is_empty()).then(|| verdicts.to_vec()),
        generator: GeneratorInfo {
            waiting_for_connection_us: result.total.generator.waiting_for_connection_us,
            waiting_for_generator_us: result.total.generator.waiting_for_generator_us,
            busiest_thread_cpu_share: result.total.generator.busiest_thread_cpu,
            busiest_thread_work_share: Some(result.total.generator.busiest_thread_work),
            thread_cpu_wait_share: result.total.generator.thread_cpu_wait,
        },
        streams_allowed: result.total.http2.stream_limit,
        retried_after_goaway: result.total.http2.retried_after_goaway,
        goaways_with_error: result.total.http2.goaways_with_error.clone(),
        quic: quic_info(&result.total.quic),
        concurrency: Some(concurrency_report(Concurrency::of(run, result))),
        warnings: diagnose::diagnose(run, result),
        seed: run.uses_seed().then_some(run.seed),
        targets_order: run.targets_order.map(|order| targets_order_name(order).to_string()),
        client_certificate: run.client_certificate,
        merged_from: None,
        merge_notes: None,
        course: course_info(&result.course)?,
        validity: Some(validity::judge(run, result)),
    });
    Ok(report)
}

/// The run's course, when it has periods.
fn course_info(course: &Course) -> io::Result<Option<CourseInfo>> {
    if course.periods.is_empty() {
        return Ok(None);
    }
    let periods = (course.periods.iter())
        .map(|period| {
            Ok(CoursePeriodInfo {
                hist: encode_compressed(&period.corrected)?,
                sent: period.sent,
                ended: period.ended,
                arrival_dof: period.arrival_dof,
                arrival_chi2: period.arrival_chi2,
            })
        })
        .collect::<io::Result<_>>()?;
    Ok(Some(CourseInfo { period_s: course.period.as_secs_f64(), periods }))
}

fn concurrency_report(concurrency: Concurrency) -> ConcurrencyReport {
    ConcurrencyReport {
        slots: concurrency.slots(),
        connections: concurrency.connections,
        streams_per_connection: concurrency.streams,
        // Two decimals, as the text report prints it.
        mean_in_flight: concurrency.mean_in_flight.map(|mean| (mean * 100.0).round() / 100.0),
    }
}

/// `-4`/`-6` as the JSON names them.
pub fn family_name(family: Family) -> &'static str {
    match family {
        Family::V4 => "ipv4",
        Family::V6 => "ipv6",
    }
}

/// Seconds since the Unix epoch (0 before it).
fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH).map_or(0.0, |since| since.as_secs_f64())
}

fn plan_info(run: &Description) -> Option<PlanInfo> {
    let Mode::Paced(spec) = &run.mode else { return None };
    let poisson = spec.arrival == Arrival::Poisson;
    Some(PlanInfo {
        arrival: if poisson { "poisson" } else { "constant" }.to_string(),
        seed: poisson.then_some(run.seed),
        start_rate: spec.rate,
        stages: spec
            .stages
            .iter()
            .map(|s| StageSpec { duration_s: s.duration.as_secs_f64(), rate: s.rate })
            .collect(),
    })
}

fn target_reports(result: &RunResult) -> io::Result<Vec<TargetReport>> {
    let measured = &result.total.targets;
    targets::target_rows(result)
        .into_iter()
        .zip(measured)
        .enumerate()
        .map(|(index, (row, target))| {
            Ok(TargetReport {
                index,
                target: row.label,
                requests: row.requests,
                requests_per_sec: row.rate,
                corrected_p50_us: row.p50_us,
                corrected_p99_us: row.p99_us,
                errors: row.errors,
                unsent: row.unsent,
                status_codes: row.statuses.into_iter().collect(),
                hist: encode_compressed(&target.corrected)?,
            })
        })
        .collect()
}

fn stage_reports(run: &Description, result: &RunResult) -> io::Result<Vec<StageReport>> {
    let Mode::Paced(spec) = &run.mode else { return Ok(Vec::new()) };
    let stages = &result.total.stages;
    plan::stage_rows(run, spec, result)
        .into_iter()
        .map(|row| {
            let hist = match stages.get(row.index) {
                Some(stage) => encode_compressed(&stage.corrected)?,
                None => encode_compressed(&crate::stats::latency_histogram(run.digits))?,
            };
            Ok(StageReport {
                index: row.index,
                start_s: row.start.as_secs_f64(),
                duration_s: row.duration.as_secs_f64(),
                from_rate: row.from_rate,
                to_rate: row.to_rate,
                target_rate: row.target_rate,
                achieved_rate: row.achieved_rate,
                requests: row.requests,
                corrected_p50_us: row.p50_us,
                corrected_p99_us: row.p99_us,
                hist,
            })
        })
        .collect()
}

/// Writes `report` as one line.
pub fn write_line(out: &mut dyn Write, report: &Report) -> io::Result<()> {
    serde_json::to_writer(&mut *out, report)?;
    writeln!(out)
}

/// The fields periods and the whole run have in common: `stats` measured
/// over `elapsed`.
fn common_fields(
    run: &Description,
    options: &ReportOptions,
    kind: &'static str,
    stats: &Stats,
    elapsed: Duration,
) -> io::Result<Report> {
    // As the text report: whole microseconds, so the figures agree.
    let seconds = elapsed.as_micros() as f64 / 1_000_000.0;
    let requests_per_sec = per_second(stats.requests, seconds);
    let bytes_per_sec = per_second(stats.bytes, seconds);
    let percentiles = options.percentiles.as_deref().unwrap_or(&WRK2_PERCENTILES);
    let mode = match run.mode {
        Mode::ClosedLoop => "closed_loop",
        Mode::Paced(_) => "paced",
    };
    let target = run.target_rate();
    let reached = &run.reached;
    Ok(Report {
        schema_version: SCHEMA_VERSION,
        report: kind.to_string(),
        errors: ErrorCounts::from(&stats.errors),
        total_req: stats.requests,
        rps: requests_per_sec,
        rx_bps: format!("{}B", format_binary(bytes_per_sec)),
        hist: encode_compressed(&stats.corrected)?,
        url: masked_url(&run.url),
        mode: mode.to_string(),
        threads: run.threads,
        connections: run.connections,
        protocol: run.protocol_name().to_string(),
        streams: run.streams,
        grpc_method: run.grpc.clone(),
        grpc_kind: run.grpc_kind.map(|kind| kind.name().to_string()),
        grpc_stream_count: run.grpc_kind.and_then(CallKind::plan).map(|plan| plan.count),
        grpc_stream_interval_us: (run.grpc_kind.and_then(CallKind::plan))
            .map(|plan| plan.interval.as_micros() as u64),
        proxy: reached.proxy.clone(),
        connected_to: reached.origins.first().and_then(|origin| origin.connected_to.clone()),
        ip_family: reached.family.map(|family| family_name(family).to_string()),
        origins: reached.origins.clone(),
        digits: run.digits,
        target_requests_per_sec: target,
        duration_s: run.duration.map(|d| d.as_secs_f64()),
        requests_limit: run.requests,
        period: None,
        elapsed_s: seconds,
        requests: stats.requests,
        bytes: stats.bytes,
        requests_per_sec,
        bytes_per_sec,
        status_codes: stats.outcomes.http().collect(),
        grpc_codes: stats.outcomes.grpc().map(|(code, n)| (grpc_status::name(code), n)).collect(),
        error_causes: stats.error_causes.clone(),
        nil_requests: stats.nil_requests,
        latency: Latency {
            corrected: summary(&stats.corrected, percentiles),
            uncorrected: summary(&stats.uncorrected, percentiles),
        },
        schedule_lag: summary(&stats.lag, percentiles),
        uncorrected_hist: encode_compressed(&stats.uncorrected)?,
        lag_hist: encode_compressed(&stats.lag)?,
        unsent_wait: summary(&stats.unsent_wait, percentiles),
        unsent_wait_hist: Some(encode_compressed(&stats.unsent_wait)?),
        phases: Some(phases(&stats.phases, percentiles)?),
        grpc_stream: grpc_stream(&stats.streamed, seconds, percentiles)?,
        rate_samples: stats.rate_samples.clone(),
        run: None,
    })
}

/// What server-streaming calls received; None in other runs.
fn grpc_stream(
    streamed: &crate::stats::Streamed,
    seconds: f64,
    percentiles: &[f64],
) -> io::Result<Option<GrpcStream>> {
    if streamed.is_empty() {
        return Ok(None);
    }
    let per_call = &streamed.messages_per_call;
    let recorded = !per_call.is_empty();
    let phase = |h: &Histogram<u64>| -> io::Result<Phase> {
        Ok(Phase { summary: summary(h, percentiles), hist: encode_compressed(h)? })
    };
    let replies = &streamed.reply_latency;
    Ok(Some(GrpcStream {
        messages: streamed.messages,
        messages_per_sec: per_second(streamed.messages, seconds),
        messages_per_call_mean: recorded.then(|| spectrum::mean(per_call)),
        messages_per_call_max: recorded.then(|| per_call.max()),
        messages_per_call_hist: encode_compressed(per_call)?,
        first_message: phase(&streamed.first_message)?,
        messages_sent: streamed.sent,
        reply_latency: (!replies.is_empty()).then(|| phase(replies)).transpose()?,
    }))
}

fn phases(phases: &crate::stats::Phases, percentiles: &[f64]) -> io::Result<Phases> {
    let phase = |h: &Histogram<u64>| -> io::Result<Phase> {
        Ok(Phase { summary: summary(h, percentiles), hist: encode_compressed(h)? })
    };
    Ok(Phases {
        connect: phase(&phases.connect)?,
        tls_handshake: phase(&phases.tls_handshake)?,
        first_byte: phase(&phases.first_byte)?,
    })
}

pub fn summary(h: &Histogram<u64>, percentiles: &[f64]) -> Summary {
    let recorded = !h.is_empty();
    let some_if = |value: u64| recorded.then_some(value);
    fn each<T>(percentiles: &[f64], f: impl Fn(f64) -> T) -> Percentiles<T> {
        Percentiles(percentiles.iter().map(|&p| (p, f(p))).collect())
    }
    Summary {
        count: h.len(),
        min_us: some_if(h.min()),
        max_us: some_if(h.max()),
        mean_us: recorded.then(|| spectrum::mean(h)),
        stdev_us: recorded.then(|| spectrum::stddev(h)),
        percentiles_us: each(percentiles, |p| some_if(value_at_percentile(h, p))),
        percentiles_ci95_us: each(percentiles, |p| {
            confidence::interval(h, p).map(|(low, high)| [low, high])
        }),
        percentiles_samples_beyond: each(percentiles, |p| confidence::samples_beyond(h.len(), p)),
        percentiles_too_few_samples: (percentiles.iter())
            .filter(|&&p| !confidence::enough(h.len(), p))
            .map(|&p| percentile_key(p))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BenchConfig;
    use crate::plan::PlanSpec;
    use crate::signals::Interruption;
    use crate::stats::Outcome;
    use crate::stats::{latency_histogram, ErrorKind, ThreadTotals};
    use crate::target::Target;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use hdrhistogram::serialization::Deserializer;
    use serde_json::{json, Value};

    fn config(mode: Mode) -> Description {
        Description::of(&BenchConfig {
            duration: Some(Duration::from_secs(2)),
            mode,
            ..BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap())
        })
    }

    /// The final report of `result`, as `run` describes it, shown as
    /// `options` say.
    fn final_of(run: &Description, options: &ReportOptions, result: &RunResult) -> Report {
        final_report(run, options, result, &[]).unwrap()
    }

    /// Two threads: thread 0 answered 300 requests at 1..=300 us
    /// (corrected; uncorrected half of that), thread 1 answered 100 at
    /// 5 ms, 10 of them 503, and saw 2 connect errors.
    fn run() -> RunResult {
        let mut a = Stats::new(3);
        for v in 1..=300 {
            a.response(Outcome::Http(200));
            a.corrected.record(v).unwrap();
            a.uncorrected.record(v / 2 + 1).unwrap();
            a.lag.record(10).unwrap();
        }
        a.bytes = 30_000;
        let mut b = Stats::new(3);
        for i in 0..100 {
            b.response(Outcome::Http(if i < 10 { 503 } else { 200 }));
            b.corrected.record(5000).unwrap();
            b.uncorrected.record(4000).unwrap();
            b.lag.record(20).unwrap();
        }
        b.bytes = 10_000;
        b.error(ErrorKind::Connect, "Connection refused");
        b.error(ErrorKind::Connect, "Connection refused");
        b.errors.unsent = 3;
        let mut total = Stats::new(3);
        total.merge(&a);
        total.merge(&b);
        RunResult {
            total,
            threads: vec![ThreadTotals::from(&a), ThreadTotals::from(&b)],
            runtime: Duration::from_secs(2),
            interrupted: None,
            script_stopped: false,
            series: vec![vec![150, 150], vec![60, 40]],
            series_interval: Duration::from_secs(1),
            measured_from: std::time::UNIX_EPOCH,
            course: crate::stats::course::Course::default(),
        }
    }

    fn to_value(report: &Report) -> Value {
        let mut line = Vec::new();
        write_line(&mut line, report).unwrap();
        let text = String::from_utf8(line).unwrap();
        assert_eq!(text.matches('\n').count(), 1, "one line: {text}");
        assert!(text.ends_with('\n'));
        serde_json::from_str(&text).unwrap()
    }

    fn decode(text: &Value) -> Histogram<u64> {
        let bytes = STANDARD.decode(text.as_str().unwrap()).unwrap();
        Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap()
    }

    #[test]
    fn final_report_fields() {
        let cfg = config(Mode::Paced(PlanSpec::constant(200.0)));
        let result = run();
        let v = to_value(&final_of(&cfg, &ReportOptions::default(), &result));
        assert_eq!(v["schema_version"], 2);
        assert_eq!(v["report"], "final");
        assert_eq!(
            v["errors"],
            json!({"connect": 2, "read": 0, "write": 0, "timeout": 0, "http_error": 10, "unsent": 3,
                   "stopped": 0})
        );
        assert_eq!(v["total_req"], 400);
        assert_eq!(v["rps"], 200.0);
        assert_eq!(v["rx_bps"], "19.53KB");
        assert_eq!(v["url"], "http://127.0.0.1:8080/");
        assert_eq!(v["mode"], "paced");
        assert_eq!((v["threads"].clone(), v["connections"].clone()), (json!(2), json!(10)));
        assert_eq!(v["digits"], 3);
        assert_eq!(v["target_requests_per_sec"], 200.0);
        assert_eq!(v["duration_s"], 2.0);
        assert!(v.get("period").is_none());
        assert_eq!(v["elapsed_s"], 2.0);
        assert_eq!(v["requests"], 400);
        assert_eq!(v["bytes"], 40_000);
        assert_eq!(v["requests_per_sec"], 200.0);
        assert_eq!(v["bytes_per_sec"], 20_000.0);
        assert_eq!(v["status_codes"], json!({"200": 390, "503": 10}));
        assert_eq!(v["error_causes"], json!({"connect: Connection refused": 2}));
        assert_eq!(v["unsent"], 3);
        assert_eq!(v["errors"]["unsent"], 3);
        assert_eq!(v["interrupted_by"], Value::Null);
        assert_eq!(
            v["per_thread"],
            json!([
                {"thread": 0, "requests": 300, "bytes": 30000,
                 "errors": {"connect": 0, "read": 0, "write": 0, "timeout": 0, "http_error": 0,
                            "unsent": 0, "stopped": 0}},
                {"thread": 1, "requests": 100, "bytes": 10000,
                 "errors": {"connect": 2, "read": 0, "write": 0, "timeout": 0, "http_error": 10,
                            "unsent": 3, "stopped": 0}}
            ])
        );
        // Only what was asked for.
        for absent in ["timeseries", "thread_timeseries", "latency_histogram"] {
            assert!(v.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn totals_equal_the_text_reports() {
        let cfg = config(Mode::Paced(PlanSpec::constant(200.0)));
        let mut result = run();
        result.runtime = Duration::from_nanos(1_999_876_543);
        let v = to_value(&final_of(&cfg, &ReportOptions::default(), &result));
        let mut text = Vec::new();
        super::super::text::write_report(&mut text, &cfg, &ReportOptions::default(), &result)
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        let rps = v["rps"].as_f64().unwrap();
        let e = &v["errors"];
        for line in [
            format!("  {} requests in 2.00s, 39.06KB read\n", v["total_req"]),
            format!(
                "  Socket errors: connect {}, read {}, write {}, timeout {}, unsent {}\n",
                e["connect"], e["read"], e["write"], e["timeout"], e["unsent"]
            ),
            format!("  Non-2xx or 3xx responses: {}\n", e["http_error"]),
            format!("Requests/sec: {rps:>9.2}\n"),
            format!("Transfer/sec: {:>11}\n", v["rx_bps"].as_str().unwrap()),
        ] {
            assert!(text.contains(&line), "{line:?} not in\n{text}");
        }
        assert_eq!(v["requests_per_sec"], v["rps"]);
        assert_eq!(v["elapsed_s"], 1.999876);
    }

    #[test]
    fn warnings_and_what_they_rest_on() {
        let cfg = config(Mode::Paced(PlanSpec::constant(200.0)));
        let mut result = run();
        result.total.generator.waiting_for_connection_us = 1200;
        result.total.generator.waiting_for_generator_us = 30;
        result.total.generator.busiest_thread_cpu = 0.25;
        result.total.generator.busiest_thread_work = 0.125;
        result.total.generator.thread_cpu_wait = 0.0625;
        let v = to_value(&final_of(&cfg, &ReportOptions::default(), &result));
        assert_eq!(
            v["generator"],
            json!({"waiting_for_connection_us": 1200, "waiting_for_generator_us": 30,
                   "busiest_thread_cpu_share": 0.25, "busiest_thread_work_share": 0.125,
                   "thread_cpu_wait_share": 0.0625})
        );
        // The text report's warnings, one object each.
        let warnings = v["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), 1, "{v}");
        assert_eq!(warnings[0]["code"], "unsent");
        assert_eq!(
            warnings[0]["figures"],
            json!({"unsent": 3, "wait_p50_us": null, "wait_max_us": null})
        );
        let mut text = Vec::new();
        super::super::text::write_report(&mut text, &cfg, &ReportOptions::default(), &result)
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        let message = warnings[0]["message"].as_str().unwrap();
        assert!(text.contains(&format!("Warning: {message} [unsent]\n")), "{text}");
        // The plan was not kept: the run is not to be trusted, and the
        // text report's Validity: line says the same.
        assert_eq!(v["validity"]["trusted"], false);
        let causes = v["validity"]["causes"].as_array().unwrap();
        assert_eq!(causes.len(), 1, "{v}");
        assert_eq!(causes[0]["code"], "schedule_not_kept");
        assert_eq!(causes[0]["figures"], json!({"warnings": ["unsent"]}));
        let message = causes[0]["message"].as_str().unwrap();
        let line = format!("Validity: not trusted: {message} [schedule_not_kept]\n");
        assert!(text.contains(&line), "{text}");
        // None in closed loop; the array is always there.
        let v = to_value(&final_of(&config(Mode::ClosedLoop), &ReportOptions::default(), &result));
        assert_eq!(v["warnings"], json!([]));
        assert_eq!(v["validity"], json!({"trusted": true, "causes": []}));
        // Not in period reports.
        let interval = Interval {
            index: 0,
            start: Duration::ZERO,
            length: Duration::from_secs(1),
            stats: result.total.clone(),
        };
        let v = to_value(&period_report(&cfg, &ReportOptions::default(), &interval).unwrap());
        assert!(v.get("warnings").is_none() && v.get("generator").is_none());
        assert!(v.get("validity").is_none() && v.get("course").is_none());
    }

    #[test]
    fn latency_summaries_match_the_histograms() {
        let cfg = config(Mode::Paced(PlanSpec::constant(200.0)));
        let result = run();
        let v = to_value(&final_of(&cfg, &ReportOptions::default(), &result));
        let corrected = &v["latency"]["corrected"];
        assert_eq!(corrected["count"], 400);
        assert_eq!(corrected["min_us"], 1);
        assert_eq!(corrected["max_us"], result.total.corrected.max());
        let mean = corrected["mean_us"].as_f64().unwrap();
        assert_eq!(mean, spectrum::mean(&result.total.corrected));
        assert_eq!(
            corrected["stdev_us"].as_f64().unwrap(),
            spectrum::stddev(&result.total.corrected)
        );
        // wrk2's list by default, in order (serde_json's Value would sort
        // the keys), keys as typed.
        let text =
            serde_json::to_string(&final_of(&cfg, &ReportOptions::default(), &result)).unwrap();
        assert!(text.contains(
            r#""percentiles_us":{"50":200,"75":300,"90":5003,"99":5003,"99.9":5003,"99.99":5003,"99.999":5003,"100":5003}"#
        ), "{text}");
        assert_eq!(corrected["percentiles_us"]["50"], 200);
        assert_eq!(corrected["percentiles_us"]["75"], 300);
        assert_eq!(corrected["percentiles_us"]["99"], 5003);
        assert_eq!(v["latency"]["uncorrected"]["percentiles_us"]["50"], 101);
        assert_eq!(v["schedule_lag"]["percentiles_us"]["50"], 10);
        assert_eq!(v["schedule_lag"]["max_us"], 20);
        // Each percentile's 95% interval (the median of 400 lies between
        // the 180th and the 221st value, p75 between the 283rd and the
        // 318th: one of the 5 ms), the samples beyond it, and those with
        // too few.
        let ci = &corrected["percentiles_ci95_us"];
        assert_eq!(ci["50"], json!([180, 221]));
        assert_eq!(ci["75"], json!([283, 5003]));
        assert_eq!(ci["100"], json!([5000, null]));
        let beyond = &corrected["percentiles_samples_beyond"];
        assert_eq!((beyond["50"].as_u64(), beyond["90"].as_u64()), (Some(200), Some(40)));
        assert_eq!((beyond["99"].as_u64(), beyond["100"].as_u64()), (Some(4), Some(0)));
        assert!(
            text.contains(r#""percentiles_too_few_samples":["99","99.9","99.99","99.999","100"]"#),
            "{text}"
        );
        // The histograms decode to what was recorded.
        assert_eq!(decode(&v["hist"]), result.total.corrected);
        assert_eq!(decode(&v["uncorrected_hist"]), result.total.uncorrected);
    }

    #[test]
    fn custom_percentiles() {
        let cfg = config(Mode::ClosedLoop);
        let options = ReportOptions { percentiles: Some(vec![50.0, 99.9]), ..Default::default() };
        let v = to_value(&final_of(&cfg, &options, &run()));
        assert_eq!(v["mode"], "closed_loop");
        assert_eq!(v["target_requests_per_sec"], Value::Null);
        let keys: Vec<&String> =
            v["latency"]["uncorrected"]["percentiles_us"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["50", "99.9"]);
        assert!(v["latency"]["uncorrected"]["percentiles_us"].get("99").is_none());
    }

    #[test]
    fn empty_histograms_give_nulls() {
        let cfg = config(Mode::ClosedLoop);
        let mut result = run();
        result.total = Stats::new(3);
        let v = to_value(&final_of(&cfg, &ReportOptions::default(), &result));
        let lag = &v["schedule_lag"];
        assert_eq!(lag["count"], 0);
        for field in ["min_us", "max_us", "mean_us", "stdev_us"] {
            assert_eq!(lag[field], Value::Null, "{field}");
        }
        assert_eq!(lag["percentiles_us"]["99"], Value::Null);
        assert_eq!(lag["percentiles_ci95_us"]["99"], Value::Null);
        assert_eq!(lag["percentiles_samples_beyond"]["50"], 0);
        assert_eq!(lag["percentiles_too_few_samples"].as_array().unwrap().len(), 8);
        assert_eq!(v["rps"], 0.0);
        assert_eq!(decode(&v["hist"]).len(), 0);
    }

    #[test]
    fn wrx_outputs_on_request() {
        let cfg = config(Mode::ClosedLoop);
        let options = ReportOptions {
            timeseries: Some(Duration::from_secs(1)),
            thread_timeseries: true,
            histogram: true,
            ..Default::default()
        };
        let mut result = run();
        result.interrupted = Some(Interruption::Interrupt);
        let v = to_value(&final_of(&cfg, &options, &result));
        assert_eq!(v["interrupted_by"], "SIGINT");
        assert_eq!(v["timeseries"], json!({"interval_ms": 1000.0, "requests": [210, 190]}));
        assert_eq!(
            v["thread_timeseries"],
            json!({"interval_ms": 1000.0, "requests": [[150, 150], [60, 40]]})
        );
        let histogram = &v["latency_histogram"];
        assert_eq!(histogram["bin_width_us"], 1);
        let bins = histogram["bins"].as_array().unwrap();
        assert_eq!(bins[0], json!([1, 1]));
        // 5000 us lies in a 4 us wide bucket starting at 5000.
        assert_eq!(bins.last().unwrap(), &json!([5000, 100]));
        let sum: u64 = bins.iter().map(|b| b[1].as_u64().unwrap()).sum();
        assert_eq!(sum, 400);
    }

    #[test]
    fn period_report_covers_the_period() {
        let cfg = config(Mode::Paced(PlanSpec::constant(200.0)));
        let mut stats = Stats::new(3);
        for _ in 0..100 {
            stats.response(Outcome::Http(200));
            stats.corrected.record(900).unwrap();
        }
        stats.bytes = 2048;
        let interval = Interval {
            index: 3,
            start: Duration::from_millis(1500),
            length: Duration::from_millis(500),
            stats,
        };
        let v = to_value(&period_report(&cfg, &ReportOptions::default(), &interval).unwrap());
        assert_eq!(v["report"], "period");
        assert_eq!(v["period"], json!({"index": 3, "start_s": 1.5, "length_s": 0.5}));
        assert_eq!(v["elapsed_s"], 0.5);
        assert_eq!(v["total_req"], 100);
        assert_eq!(v["rps"], 200.0);
        assert_eq!(v["rx_bps"], "4.00KB");
        assert_eq!(v["latency"]["corrected"]["max_us"], 900);
        for absent in ["unsent", "interrupted_by", "per_thread"] {
            assert!(v.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn digits_reach_the_encoding() {
        let mut cfg = config(Mode::ClosedLoop);
        cfg.digits = 2;
        let mut result = run();
        result.total = Stats::new(2);
        result.total.corrected = latency_histogram(2);
        result.total.corrected.record(12_345).unwrap();
        let v = to_value(&final_of(&cfg, &ReportOptions::default(), &result));
        assert_eq!(v["digits"], 2);
        assert_eq!(decode(&v["hist"]).sigfig(), 2);
    }

    /// The verdicts on latency percentiles give the figures the JSON and
    /// the text report print.
    #[test]
    fn slo_verdicts_agree_with_the_reports() {
        use crate::slo::{parse, Metric, Stat};
        let cfg = config(Mode::Paced(PlanSpec::constant(500.0)));
        let options = ReportOptions { latency: true, ..ReportOptions::default() };
        let result = run();
        let objectives = parse("p50<1s,p99<1s,p99.9<1s,p100<1s").unwrap();
        let verdicts = slo::verdicts(&objectives, &cfg, &result);
        let json = to_value(&final_report(&cfg, &options, &result, &verdicts).unwrap());
        let mut text = Vec::new();
        super::super::text::write_report(&mut text, &cfg, &options, &result).unwrap();
        let text = String::from_utf8(text).unwrap();
        for verdict in &verdicts {
            let Metric::Latency(_, Stat::Percentile(p)) = verdict.objective.metric else {
                unreachable!()
            };
            let value = verdict.value.unwrap();
            assert_eq!(json["latency"]["corrected"]["percentiles_us"][p.to_string()], value);
            let line = format!("{p:>7.3}%{:>10}", crate::units::format_time_us(value));
            assert!(text.contains(&line), "{line:?} not in\n{text}");
        }
        // In the final report only with objectives, one object each.
        assert_eq!(json["slo"].as_array().unwrap().len(), 4);
        assert_eq!(json["slo"][1]["objective"], "p99<1s");
        let without = to_value(&final_of(&cfg, &ReportOptions::default(), &result));
        assert!(without.get("slo").is_none());
    }
}
