//! The figures as Prometheus reads them: the text format 0.0.4, or
//! OpenMetrics 1.0.0 when the scraper asks for it (Prometheus does).
//!
//! The two differ in little: OpenMetrics names a counter's family without
//! its `_total`, has `# UNIT` lines and ends with `# EOF`. Every series
//! carries the `shard` label (`I/N` of `--shard`, `0/1` without), so that
//! the instances of one plan add up with `sum` in PromQL.

use std::fmt::Write;

use super::figures::{Buckets, Figures, LATENCY_BOUNDS_NS};
use crate::grpc_status;

/// How the figures are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Prometheus' text format, version 0.0.4.
    Text,
    /// OpenMetrics 1.0.0.
    OpenMetrics,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// OpenMetrics when the request's `Accept` takes it (a media range
    /// `application/openmetrics-text` without `q=0`), else the text format
    /// every Prometheus reads.
    pub fn accepted(accept: Option<&str>) -> Format {
        let takes_openmetrics = accept.unwrap_or("").split(',').any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            let refused = parts.any(|parameter| {
                parameter.strip_prefix("q=").is_some_and(|q| q.parse::<f64>() == Ok(0.0))
            });
            media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
        });
        if takes_openmetrics {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// A metric family: what its samples are, and the samples (each with
/// its full name: a counter's `_total`, a histogram's `_bucket`...).
#[derive(Debug)]
pub struct Family {
    /// The family's name (a counter's without `_total`).
    pub name: &'static str,
    pub kind: Kind,
    /// The unit, when the name ends with it.
    pub unit: Option<&'static str>,
    pub help: &'static str,
    pub samples: Vec<Sample>,
}

#[derive(Debug)]
pub struct Sample {
    pub name: String,
    /// The labels after `shard`.
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

/// The error kinds of `pace_errors_total`, named as in the JSON report's
/// `errors`.
const ERROR_KINDS: [&str; 7] =
    ["connect", "read", "write", "timeout", "http_error", "unsent", "stopped"];

/// Every family of `figures`, in the order they are written.
pub fn families(figures: &Figures) -> Vec<Family> {
    let mut all = Vec::new();
    let mut single = |name, kind, unit, help, value: f64| {
        let sample = Sample { name: counted(name, kind), labels: Vec::new(), value };
        all.push(Family { name, kind, unit, help, samples: vec![sample] });
    };
    single("pace_requests", Kind::Counter, None, "Completed responses.", figures.requests as f64);
    single(
        "pace_read_bytes",
        Kind::Counter,
        Some("bytes"),
        "Bytes read from the sockets (headers and bodies, after TLS).",
        figures.bytes as f64,
    );
    if figures.paced() {
        single(
            "pace_target_rate_requests_per_second",
            Kind::Gauge,
            None,
            "The rate the plan wants of this instance over the latest period.",
            figures.target_rate.unwrap_or(f64::NAN),
        );
    }
    single(
        "pace_achieved_rate_requests_per_second",
        Kind::Gauge,
        None,
        "Completed responses per second over the latest second.",
        figures.achieved_rate(),
    );
    single(
        "pace_oldest_waiting_seconds",
        Kind::Gauge,
        Some("seconds"),
        "How long the request waiting longest for its response had waited, at the end of the \
         latest period (0: none waited).",
        figures.oldest_waiting.as_secs_f64(),
    );
    single(
        "pace_measured_seconds",
        Kind::Gauge,
        Some("seconds"),
        "Time measured so far (after any warm-up).",
        figures.measured.as_secs_f64(),
    );
    single(
        "pace_run_finished",
        Kind::Gauge,
        None,
        "1 once the run is over and these figures are its final ones.",
        f64::from(u8::from(figures.finished)),
    );
    let statuses = figures.statuses.iter().map(|(status, n)| Sample {
        name: "pace_responses_total".into(),
        labels: vec![("status", status.to_string())],
        value: *n as f64,
    });
    all.insert(
        1,
        Family {
            name: "pace_responses",
            kind: Kind::Counter,
            unit: None,
            help: "Completed responses by HTTP status code.",
            samples: statuses.collect(),
        },
    );
    let e = figures.errors;
    let counts = [e.connect, e.read, e.write, e.timeout, e.status, e.unsent, e.stopped];
    let errors = ERROR_KINDS.iter().zip(counts).map(|(kind, n)| Sample {
        name: "pace_errors_total".into(),
        labels: vec![("kind", kind.to_string())],
        value: n as f64,
    });
    all.insert(
        2,
        Family {
            name: "pace_errors",
            kind: Kind::Counter,
            unit: None,
            help: "Errors by kind, as the report's (http_error: responses with a status above \
                   399; unsent: requests of the plan never sent).",
            samples: errors.collect(),
        },
    );
    // Only a --grpc run has the family (gRPC calls not OK are among the
    // http_error errors above).
    if !figures.grpc_codes.is_empty() {
        let codes = figures.grpc_codes.iter().map(|(&code, n)| Sample {
            name: "pace_grpc_calls_total".into(),
            labels: vec![("code", grpc_status::name(code))],
            value: *n as f64,
        });
        all.insert(
            3,
            Family {
                name: "pace_grpc_calls",
                kind: Kind::Counter,
                unit: None,
                help: "Completed gRPC calls by status code (grpc-status).",
                samples: codes.collect(),
            },
        );
    }
    // Only a run of server-streaming calls has it.
    if let Some(messages) = figures.grpc_messages {
        all.insert(
            4,
            Family {
                name: "pace_grpc_messages_received",
                kind: Kind::Counter,
                unit: None,
                help: "Reply messages of server-streaming gRPC calls.",
                samples: vec![Sample {
                    name: "pace_grpc_messages_received_total".into(),
                    labels: Vec::new(),
                    value: messages as f64,
                }],
            },
        );
    }
    all.push(histogram(
        "pace_latency_corrected_seconds",
        "Latency from each request's intended send time (coordinated-omission corrected).",
        &figures.corrected,
    ));
    all.push(histogram(
        "pace_latency_uncorrected_seconds",
        "Latency from each request's actual send time.",
        &figures.uncorrected,
    ));
    if figures.paced() {
        all.push(histogram(
            "pace_schedule_lag_seconds",
            "How late each request was sent after its intended time (the generator's lag).",
            &figures.lag,
        ));
    }
    all
}

/// A sample's name in a family of `kind`.
fn counted(name: &str, kind: Kind) -> String {
    match kind {
        Kind::Counter => format!("{name}_total"),
        _ => name.to_string(),
    }
}

/// A histogram in seconds: cumulative buckets, `+Inf`, sum, count.
fn histogram(name: &'static str, help: &'static str, buckets: &Buckets) -> Family {
    let mut samples = Vec::with_capacity(LATENCY_BOUNDS_NS.len() + 3);
    let mut cumulative = 0;
    let bucket = format!("{name}_bucket");
    for (bound, n) in LATENCY_BOUNDS_NS.iter().zip(&buckets.counts) {
        cumulative += n;
        let labels = vec![("le", seconds_text(*bound))];
        samples.push(Sample { name: bucket.clone(), labels, value: cumulative as f64 });
    }
    let count = buckets.count() as f64;
    let labels = vec![("le", "+Inf".to_string())];
    samples.push(Sample { name: bucket, labels, value: count });
    // One division of a whole number: the nearest float to the exact sum,
    // written as its shortest decimal (0.0313, not 0.031299999999999995).
    let sum_seconds = buckets.sum_us as f64 / 1e6;
    let sum = Sample { name: format!("{name}_sum"), labels: Vec::new(), value: sum_seconds };
    samples.push(sum);
    samples.push(Sample { name: format!("{name}_count"), labels: Vec::new(), value: count });
    Family { name, kind: Kind::Histogram, unit: Some("seconds"), help, samples }
}

/// The exposition of `figures` in `format`.
pub fn render(figures: &Figures, format: Format) -> String {
    let mut text = String::with_capacity(16 * 1024);
    let shard = escape_label(&figures.shard);
    for family in families(figures) {
        let shown = match format {
            Format::Text => counted(family.name, family.kind),
            Format::OpenMetrics => family.name.to_string(),
        };
        let kind = match family.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(text, "# HELP {shown} {}", escape_help(family.help));
        let _ = writeln!(text, "# TYPE {shown} {kind}");
        if let (Format::OpenMetrics, Some(unit)) = (format, family.unit) {
            let _ = writeln!(text, "# UNIT {shown} {unit}");
        }
        for sample in &family.samples {
            let _ = write!(text, "{}{{shard=\"{shard}\"", sample.name);
            for (label, value) in &sample.labels {
                let _ = write!(text, ",{label}=\"{}\"", escape_label(value));
            }
            let _ = writeln!(text, "}} {}", float(sample.value));
        }
    }
    if format == Format::OpenMetrics {
        text.push_str("# EOF\n");
    }
    text
}

/// Nanoseconds as exact decimal seconds: 12500 -> `0.0000125`,
/// 2000000000 -> `2`.
fn seconds_text(ns: u64) -> String {
    let (whole, fraction) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:09}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// A float as both formats write one (whole numbers without a point).
fn float(value: f64) -> String {
    match value {
        v if v.is_nan() => "NaN".into(),
        f64::INFINITY => "+Inf".into(),
        f64::NEG_INFINITY => "-Inf".into(),
        v => v.to_string(),
    }
}

fn escape_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::metrics::figures::PlanRate;
    use crate::plan::PlanSpec;
    use crate::stats::Outcome;
    use crate::stats::{Interval, Stats};

    fn figures(paced: bool) -> Figures {
        let plan = paced.then(|| PlanRate {
            spec: PlanSpec::constant(1000.0),
            warmup: Duration::ZERO,
            shards: 2,
        });
        let mut figures = Figures::new("0/2".into(), plan);
        let mut stats = Stats::new(3);
        for (us, status) in [(800, 200), (1500, 200), (29_000, 503)] {
            stats.response(Outcome::Http(status));
            stats.corrected.record(us).unwrap();
            stats.uncorrected.record(us / 2).unwrap();
            stats.lag.record(5).unwrap();
        }
        stats.bytes = 300;
        let length = Duration::from_millis(200);
        figures.add(&Interval { index: 0, start: Duration::ZERO, length, stats });
        figures
    }

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    #[test]
    fn grpc_calls_by_code_only_in_grpc_runs() {
        assert!(!render(&figures(false), Format::Text).contains("pace_grpc_calls"));
        let mut figures = figures(false);
        let mut stats = Stats::new(3);
        stats.response(Outcome::Grpc(0));
        stats.response(Outcome::Grpc(14));
        stats.response(Outcome::Grpc(14));
        let length = Duration::from_millis(200);
        figures.add(&Interval { index: 1, start: length, length, stats });
        let text = render(&figures, Format::Text);
        for expected in [
            "# TYPE pace_grpc_calls_total counter",
            "pace_grpc_calls_total{shard=\"0/2\",code=\"OK\"} 1",
            "pace_grpc_calls_total{shard=\"0/2\",code=\"UNAVAILABLE\"} 2",
        ] {
            assert!(lines(&text).contains(&expected), "{expected}\n{text}");
        }
    }

    #[test]
    fn text_format_has_typed_families_and_shard_labels() {
        let text = render(&figures(true), Format::Text);
        let lines = lines(&text);
        for expected in [
            "# TYPE pace_requests_total counter",
            "pace_requests_total{shard=\"0/2\"} 3",
            "pace_responses_total{shard=\"0/2\",status=\"200\"} 2",
            "pace_responses_total{shard=\"0/2\",status=\"503\"} 1",
            "pace_errors_total{shard=\"0/2\",kind=\"http_error\"} 1",
            "pace_errors_total{shard=\"0/2\",kind=\"connect\"} 0",
            "# TYPE pace_read_bytes_total counter",
            "pace_read_bytes_total{shard=\"0/2\"} 300",
            "pace_target_rate_requests_per_second{shard=\"0/2\"} 500",
            "pace_achieved_rate_requests_per_second{shard=\"0/2\"} 15",
            "# TYPE pace_latency_corrected_seconds histogram",
            "pace_latency_corrected_seconds_bucket{shard=\"0/2\",le=\"0.0008\"} 1",
            "pace_latency_corrected_seconds_bucket{shard=\"0/2\",le=\"0.0015\"} 2",
            "pace_latency_corrected_seconds_bucket{shard=\"0/2\",le=\"0.025\"} 2",
            "pace_latency_corrected_seconds_bucket{shard=\"0/2\",le=\"0.03\"} 3",
            "pace_latency_corrected_seconds_bucket{shard=\"0/2\",le=\"100\"} 3",
            "pace_latency_corrected_seconds_bucket{shard=\"0/2\",le=\"+Inf\"} 3",
            "pace_latency_corrected_seconds_count{shard=\"0/2\"} 3",
            "pace_latency_uncorrected_seconds_bucket{shard=\"0/2\",le=\"0.0004\"} 1",
            "pace_schedule_lag_seconds_bucket{shard=\"0/2\",le=\"0.00001\"} 3",
            // The rule's 12.5 us, not 12.
            "pace_schedule_lag_seconds_bucket{shard=\"0/2\",le=\"0.0000125\"} 3",
            // Exact sums: 800 + 1500 + 29000 us, and half of each.
            "pace_latency_corrected_seconds_sum{shard=\"0/2\"} 0.0313",
            "pace_latency_uncorrected_seconds_sum{shard=\"0/2\"} 0.01565",
            "pace_run_finished{shard=\"0/2\"} 0",
            "pace_measured_seconds{shard=\"0/2\"} 0.2",
        ] {
            assert!(lines.contains(&expected), "no line {expected:?} in:\n{text}");
        }
        // Every family is declared once, before its samples, and every
        // sample belongs to the family declared last.
        let mut family = "";
        for line in &lines {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                family = rest.split(' ').next().unwrap();
                assert_eq!(text.matches(&format!("# TYPE {family} ")).count(), 1);
            } else if !line.starts_with('#') {
                assert!(line.starts_with(family), "{line} outside {family}");
            }
        }
        assert!(!text.contains("# EOF") && !text.contains("# UNIT"));
        // Buckets are cumulative.
        let buckets: Vec<u64> = lines
            .iter()
            .filter(|l| l.starts_with("pace_latency_corrected_seconds_bucket"))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(buckets.len(), LATENCY_BOUNDS_NS.len() + 1);
        assert!(buckets.windows(2).all(|pair| pair[0] <= pair[1]));
    }

    /// 0.1 s + 0.2 s is 0.3 s, not the 0.30000000000000004 that adding
    /// the seconds as floats gives.
    #[test]
    fn sums_have_no_float_noise() {
        let mut figures = Figures::new("0/1".into(), None);
        let mut stats = Stats::new(3);
        for us in [100_000, 200_000] {
            stats.response(Outcome::Http(200));
            stats.corrected.record(us).unwrap();
        }
        figures.add(&Interval { index: 0, start: Duration::ZERO, length: Duration::ZERO, stats });
        let text = render(&figures, Format::Text);
        let sum = "pace_latency_corrected_seconds_sum{shard=\"0/1\"} 0.3";
        assert!(lines(&text).contains(&sum), "no line {sum:?} in:\n{text}");
    }

    #[test]
    fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
        let text = render(&figures(true), Format::OpenMetrics);
        let lines = lines(&text);
        for expected in [
            "# TYPE pace_requests counter",
            "pace_requests_total{shard=\"0/2\"} 3",
            "# TYPE pace_read_bytes counter",
            "# UNIT pace_read_bytes bytes",
            "# UNIT pace_latency_corrected_seconds seconds",
        ] {
            assert!(lines.contains(&expected), "no line {expected:?} in:\n{text}");
        }
        assert_eq!(lines.last(), Some(&"# EOF"));
        assert!(!text.contains("pace_requests_total counter"));
    }

    #[test]
    fn a_closed_loop_has_no_plan_figures() {
        let text = render(&figures(false), Format::Text);
        assert!(!text.contains("pace_target_rate") && !text.contains("pace_schedule_lag"));
        assert!(text.contains("pace_latency_corrected_seconds_count{shard=\"0/2\"} 3"));
    }

    #[test]
    fn openmetrics_only_when_asked() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::accepted(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::accepted(Some("text/plain;version=0.0.4")), Format::Text);
        assert_eq!(Format::accepted(Some("*/*")), Format::Text);
        assert_eq!(Format::accepted(None), Format::Text);
        assert_eq!(
            Format::accepted(Some("application/openmetrics-text; q=0, text/plain")),
            Format::Text
        );
    }

    #[test]
    fn numbers_and_labels_are_written_as_the_formats_want() {
        assert_eq!(seconds_text(10_000), "0.00001");
        assert_eq!(seconds_text(12_500), "0.0000125");
        assert_eq!(seconds_text(1_250_000), "0.00125");
        assert_eq!(seconds_text(2_000_000_000), "2");
        assert_eq!(seconds_text(1_500_000_000), "1.5");
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(float(f64::INFINITY), "+Inf");
        assert_eq!(float(0.25), "0.25");
        assert_eq!(float(1200.0), "1200");
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
