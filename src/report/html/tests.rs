use std::time::Duration;

use super::*;
use crate::config::BenchConfig;
use crate::plan::PlanSpec;
use crate::stats::Outcome;
use crate::stats::{Interval, Stats};
use crate::target::Target;

fn config(paced: bool) -> Description {
    Description::of(&BenchConfig {
        duration: Some(Duration::from_secs(1)),
        mode: if paced { Mode::Paced(PlanSpec::constant(100.0)) } else { Mode::ClosedLoop },
        ..BenchConfig::new(Target::parse("http://127.0.0.1:8080/a?b=<c>&d='e'").unwrap())
    })
}

/// A page of `result` of the run `run` describes, with no objectives.
fn page<'a>(
    run: &'a Description,
    result: &'a RunResult,
    timeline: &'a [PeriodPoint],
    origin: Origin<'a>,
) -> Page<'a> {
    static DEFAULT: ReportOptions = ReportOptions {
        latency: false,
        u_latency: false,
        percentiles: None,
        timeseries: None,
        thread_timeseries: false,
        histogram: false,
    };
    Page { run, report: &DEFAULT, result, verdicts: &[], timeline, origin }
}

fn stats(requests: u64) -> Stats {
    let mut stats = Stats::new(3);
    for i in 0..requests {
        stats.response(Outcome::Http(if i % 10 == 0 { 503 } else { 200 }));
        stats.corrected.record(1000 + i * 10).unwrap();
        stats.uncorrected.record(500 + i).unwrap();
        stats.lag.record(20).unwrap();
    }
    stats.error_causes.insert("read: <injected> & \"quoted\"".into(), 2);
    stats.errors.read = 2;
    stats
}

fn result(total: Stats) -> RunResult {
    RunResult::measured(total, Duration::from_secs(1))
}

fn render(page: &Page) -> String {
    let mut out = Vec::new();
    write(&mut out, page).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_paced_run_has_every_chart_and_only_escaped_text() {
    let cfg = config(true);
    let timeline: Vec<PeriodPoint> = (0..10)
        .map(|i| {
            let interval = Interval {
                index: i,
                start: Duration::from_millis(100 * i),
                length: Duration::from_millis(100),
                stats: stats(10),
            };
            PeriodPoint::of(&cfg, &interval)
        })
        .collect();
    let result = result(stats(100));
    let html = render(&page(&cfg, &result, &timeline, Origin::Live));
    for chart in ["spectrum", "latency", "throughput", "statuses", "lag"] {
        assert!(html.contains(&format!("data-chart=\"{chart}\"")), "{chart} missing");
    }
    assert!(html.contains("http://127.0.0.1:8080/a?b=&lt;c&gt;&amp;d=&#39;e&#39;"));
    assert!(html.contains("read: &lt;injected&gt; &amp; &quot;quoted&quot;"));
    assert!(!html.contains("<injected>") && !html.contains("<script"));
    assert!(html.contains("@page { size: A4"));
    assert!(html.contains("prefers-color-scheme: dark"));
    assert!(html.trim_end().ends_with("</html>"));
}

#[test]
fn a_closed_loop_run_without_periods_says_so() {
    let cfg = config(false);
    let result = result(stats(50));
    let html = render(&page(&cfg, &result, &[], Origin::Saved("x.json")));
    assert!(html.contains("data-chart=\"spectrum\""));
    // Nothing to correct in a closed loop: no latency is called corrected.
    assert!(!html.contains("data-chart=\"lag\"") && !html.contains("corrected"));
    assert!(html.contains("No per-period data: the run was saved without -p"));
    assert!(html.contains("x.json"));
}

#[test]
fn a_merge_lists_its_inputs_and_notes() {
    let cfg = config(true);
    let result = result(stats(20));
    let notes = vec!["periods left out: <why>".to_string()];
    let merged = Merged {
        what: "the 2 shards of one plan".into(),
        label: "shard",
        inputs: vec![Input {
            name: "0/2".into(),
            source: "a<b>.json".into(),
            requests: 20,
            requests_per_sec: 20.0,
            latency_p99_us: Some(1500),
            lag_p99_us: None,
            errors: 2,
        }],
        notes: &notes,
    };
    let html = render(&page(&cfg, &result, &[], Origin::Merged(merged)));
    assert!(html.contains("a&lt;b&gt;.json") && html.contains("periods left out: &lt;why&gt;"));
    assert!(html.contains("<th>shard</th>") && html.contains("<td>1.50ms</td>"));
}

/// The latency table gains a column per phase that happened, with its
/// count: none for a phase that did not (here no TLS).
#[test]
fn the_phases_that_happened_are_columns_of_the_latency_table() {
    let cfg = config(false);
    let mut total = stats(20);
    total.phases.connect.record_n(70, 4).unwrap();
    total.phases.first_byte.record_n(900, 20).unwrap();
    let result = result(total);
    let html = render(&page(&cfg, &result, &[], Origin::Live));
    assert!(html.contains("<th>connect</th>") && html.contains("<th>first byte</th>"), "{html}");
    assert!(!html.contains("TLS handshake"));
    assert!(html.contains("<td>count</td>"), "{html}");
}

#[test]
fn a_grpc_run_counts_its_calls_by_status() {
    let cfg = config(false);
    let mut total = Stats::new(3);
    for i in 0..20u64 {
        total.response(Outcome::Grpc(if i % 4 == 0 { 14 } else { 0 }));
        total.corrected.record(1000 + i).unwrap();
        total.uncorrected.record(1000 + i).unwrap();
    }
    let result = result(total);
    let html = render(&page(&cfg, &result, &[], Origin::Live));
    assert!(html.contains("gRPC calls not OK"), "{html}");
    assert!(html.contains("OK: 15, UNAVAILABLE: 5"), "{html}");
}

#[test]
fn an_untrusted_run_says_why_at_the_top() {
    let cfg = config(true);
    let mut total = stats(100);
    // A tenth of the sends 50 ms late on a constant rate's grid.
    total.lag.record_n(50_000, 10).unwrap();
    let result = result(total);
    let html = render(&page(&cfg, &result, &[], Origin::Live));
    assert!(html.contains(r#"<p class="verdict warn">not trusted: arrivals off the plan</p>"#));
    assert!(html.contains("<li>Not trusted: arrivals did not match the plan: 1% of the sends"));
    assert!(html.contains("[arrivals_off_plan]</li>"), "{html}");
    // A trusted one says nothing of it.
    let result = self::result(stats(100));
    assert!(!render(&page(&cfg, &result, &[], Origin::Live)).contains("trusted"));
}

/// The latency table lists the percentiles the run backs (1000 samples:
/// up to p99), each with its 95% interval, names those left out, and
/// marks one asked for with too few samples.
#[test]
fn the_latency_table_lists_what_the_samples_back_with_intervals() {
    let cfg = config(true);
    let result = result(stats(1000));
    let html = render(&page(&cfg, &result, &[], Origin::Live));
    let table = &html[html.find("<th>percentile</th>").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("<td>99%</td>") && !table.contains("<td>99.9%</td>"), "{table}");
    // The median of 1000..10990 by 10: 5990, between the 469th and the
    // 532nd values (5680 and 6310).
    assert!(
        table.contains(r#"<td>50%</td><td>5.99ms<span class="ci">[5.68ms, 6.31ms]</span></td>"#),
        "{table}"
    );
    assert!(!table.contains('†'), "{table}");
    assert!(html.contains("Left out for too few samples: 99.9%, 99.99%, 99.999%, 100%"), "{html}");
    // Asked for, the maximum is shown, marked, and bounded from below only.
    let asked = ReportOptions { percentiles: Some(vec![50.0, 100.0]), ..ReportOptions::default() };
    let html = render(&Page { report: &asked, ..page(&cfg, &result, &[], Origin::Live) });
    assert!(
        html.contains(
            r#"<td>100%</td><td><span class="few" title="too few samples">10.99ms†</span><span class="ci">[10.98ms, ∞)</span></td>"#
        ),
        "{html}"
    );
    assert!(!html.contains("Left out"), "{html}");
}
