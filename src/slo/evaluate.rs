//! Judging a finished run: each objective's measured value and whether it
//! holds, printed after the report, serialized into the JSON report, and
//! turned into the exit code.

use std::io::{self, Write};

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::{Metric, Objective, Source, Stat, Unit};
use crate::description::Description;
use crate::error::SLO_FAILED;
use crate::stats::spectrum::{self, value_at_percentile};
use crate::stats::{RunResult, Stats};
use crate::units::format_time_us;
use crate::units::per_second;

/// What the run was meant to do, for the objectives measured against it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expectation {
    /// Requests per second the plan asked for; None in closed loop (no
    /// plan, no target).
    pub target_rate: Option<f64>,
}

impl Expectation {
    /// The expectation of the run `run` describes: the plan's mean rate
    /// over the measured part of the run (after the warm-up), as the
    /// report's warnings and the JSON's `target_requests_per_sec`.
    pub fn of(run: &Description) -> Expectation {
        Expectation { target_rate: run.target_rate() }
    }
}

/// One objective judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub objective: Objective,
    /// In the objective's unit; None when the run gives no such figure
    /// (an empty histogram, no request issued, no target rate).
    pub value: Option<f64>,
    /// The objective holds. An objective without a value fails.
    pub ok: bool,
}

/// The requests that failed: socket errors, statuses above 399, and
/// requests of the plan never sent (see the module's comment).
fn failed(stats: &Stats) -> u64 {
    let e = &stats.errors;
    e.socket_total() + e.status + e.unsent
}

/// The requests issued: completed, failed on the socket, or never sent.
fn issued(stats: &Stats) -> u64 {
    stats.requests + stats.errors.socket_total() + stats.errors.unsent
}

/// The share of the requests issued that failed (0 to 1), as `errors<N%`
/// judges it; None when none was issued.
pub fn error_share(stats: &Stats) -> Option<f64> {
    let issued = issued(stats);
    (issued > 0).then(|| failed(stats) as f64 / issued as f64)
}

/// Judges `result` against each objective.
pub fn evaluate(
    objectives: &[Objective],
    result: &RunResult,
    expectation: &Expectation,
) -> Vec<Verdict> {
    objectives
        .iter()
        .map(|objective| {
            let value = measure(objective, result, expectation);
            let ok = value.is_some_and(|v| objective.op.holds(v, objective.threshold));
            Verdict { objective: objective.clone(), value, ok }
        })
        .collect()
}

/// The verdicts on the `--slo` objectives of the run `run` describes
/// (none without `--slo`).
pub fn verdicts(objectives: &[Objective], run: &Description, result: &RunResult) -> Vec<Verdict> {
    evaluate(objectives, result, &Expectation::of(run))
}

/// The exit code of a run that ended normally with these `verdicts`: 0,
/// or [`SLO_FAILED`] when an objective fails. With `-e` (`json`: stdout
/// carries only JSON) the failures are also said on stderr, so that a CI
/// log shows why.
pub fn gate(verdicts: &[Verdict], json: bool) -> i32 {
    match failures(verdicts) {
        None => 0,
        Some(line) => {
            if json {
                eprintln!("pace: {line}");
            }
            SLO_FAILED
        }
    }
}

/// `SLO failed: p99<5ms (measured 20.10ms), ...`, or None when every
/// objective holds.
pub fn failures(verdicts: &[Verdict]) -> Option<String> {
    let failed: Vec<String> = verdicts
        .iter()
        .filter(|v| !v.ok)
        .map(|v| format!("{} ({})", v.objective.text(), v.measured()))
        .collect();
    (!failed.is_empty()).then(|| format!("SLO failed: {}", failed.join(", ")))
}

/// The verdict block printed after the text report (nothing without
/// objectives):
///
/// ```text
/// SLO verdict: FAIL (1 of 2 objectives met)
///   ok    p99 < 10ms     measured 9.12ms
///   FAIL  errors < 0.1%  measured 0.35%
/// ```
pub fn write_verdicts(out: &mut dyn Write, verdicts: &[Verdict]) -> io::Result<()> {
    if verdicts.is_empty() {
        return Ok(());
    }
    let met = verdicts.iter().filter(|v| v.ok).count();
    let overall = if met == verdicts.len() { "pass" } else { "FAIL" };
    writeln!(out, "SLO verdict: {overall} ({met} of {} objectives met)", verdicts.len())?;
    let shown: Vec<String> = verdicts.iter().map(|v| v.objective.spaced()).collect();
    let width = shown.iter().map(|s| s.chars().count()).max().unwrap_or(0);
    for (verdict, objective) in verdicts.iter().zip(&shown) {
        let status = if verdict.ok { "ok" } else { "FAIL" };
        writeln!(out, "  {status:<4}  {objective:<width$}  {}", verdict.measured())?;
    }
    Ok(())
}

impl Verdict {
    /// `measured 9.12ms`, or `nothing measured` without a value.
    pub fn measured(&self) -> String {
        match self.value {
            Some(value) => format!("measured {}", format_value(value, self.objective.unit)),
            None => "nothing measured".to_string(),
        }
    }
}

/// A value as the report prints its kind: times as wrk does (`9.12ms`),
/// shares with two decimals or as many as it takes to show two digits
/// (`0.0043%`), counts whole, rates with two decimals.
pub fn format_value(value: f64, unit: Unit) -> String {
    match unit {
        Unit::Micros => format_time_us(value),
        Unit::Percent => {
            let decimals = if value > 0.0 && value < 0.01 {
                (1 - value.log10().floor() as i32).clamp(2, 6) as usize
            } else {
                2
            };
            format!("{value:.decimals$}%")
        }
        Unit::Count => format!("{value:.0}"),
        Unit::PerSecond => format!("{value:.2} requests/s"),
    }
}

/// The objective's figure, computed as the reports compute it.
fn measure(objective: &Objective, result: &RunResult, expectation: &Expectation) -> Option<f64> {
    let stats = &result.total;
    match objective.metric {
        Metric::Latency(source, stat) => {
            let h = match source {
                Source::Corrected => &stats.corrected,
                Source::Uncorrected => &stats.uncorrected,
                Source::Lag => &stats.lag,
            };
            if h.is_empty() {
                return None;
            }
            Some(match stat {
                Stat::Percentile(p) => value_at_percentile(h, p) as f64,
                Stat::Mean => spectrum::mean(h),
                Stat::Stdev => spectrum::stddev(h),
                Stat::Max => h.max() as f64,
            })
        }
        Metric::Errors => match objective.unit {
            Unit::Percent => {
                let issued = issued(stats);
                (issued > 0).then(|| 100.0 * failed(stats) as f64 / issued as f64)
            }
            _ => Some(failed(stats) as f64),
        },
        Metric::Requests => Some(stats.requests as f64),
        Metric::Rate => {
            // As the report's Requests/sec: whole microseconds of run time.
            let seconds = result.runtime.as_micros() as f64 / 1_000_000.0;
            let achieved = per_second(stats.requests, seconds);
            match objective.unit {
                Unit::Percent => expectation
                    .target_rate
                    .filter(|&rate| rate > 0.0)
                    .map(|rate| 100.0 * achieved / rate),
                _ => Some(achieved),
            }
        }
    }
}

/// In the JSON report: `{"objective": "p99<10ms", "metric": "p99", "op":
/// "<", "threshold": 10000, "value": 9120, "unit": "us", "ok": true}`.
impl Serialize for Verdict {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let objective = &self.objective;
        let mut map = serializer.serialize_map(Some(7))?;
        map.serialize_entry("objective", &objective.text())?;
        map.serialize_entry("metric", &objective.metric.name())?;
        map.serialize_entry("op", objective.op.symbol())?;
        map.serialize_entry("threshold", &Number(objective.threshold))?;
        map.serialize_entry("value", &self.value.map(Number))?;
        map.serialize_entry("unit", objective.unit.name())?;
        map.serialize_entry("ok", &self.ok)?;
        map.end()
    }
}

/// A number written as an integer when it is one (`10000`, not
/// `10000.0`), as the other microsecond figures of the report.
struct Number(f64);

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        const EXACT: f64 = (1u64 << 53) as f64;
        if self.0.fract() == 0.0 && self.0.abs() < EXACT {
            serializer.serialize_i64(self.0 as i64)
        } else {
            serializer.serialize_f64(self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{json, Value};

    use super::*;
    use crate::slo::parse;
    use crate::stats::Outcome;
    use crate::stats::{ErrorKind, Stats};

    /// 1000 responses over 2 s: corrected 1..=1000 us, uncorrected half of
    /// that, lag 5 us (3 of them 200 us); 10 of them 503; 2 read errors,
    /// 1 connect error, 3 unsent.
    fn run() -> RunResult {
        let mut total = Stats::new(3);
        for v in 1..=1000u64 {
            total.response(Outcome::Http(if v % 100 == 0 { 503 } else { 200 }));
            total.corrected.record(v).unwrap();
            total.uncorrected.record(v / 2 + 1).unwrap();
            total.lag.record(if v <= 3 { 200 } else { 5 }).unwrap();
        }
        total.error(ErrorKind::Read, "Connection reset by peer");
        total.error(ErrorKind::Read, "Connection reset by peer");
        total.error(ErrorKind::Connect, "Connection refused");
        total.errors.unsent = 3;
        RunResult::measured(total, Duration::from_secs(2))
    }

    fn paced(rate: f64) -> Expectation {
        Expectation { target_rate: Some(rate) }
    }

    /// The value and verdict of each objective of `list`.
    fn judge(
        list: &str,
        result: &RunResult,
        expectation: &Expectation,
    ) -> Vec<(Option<f64>, bool)> {
        evaluate(&parse(list).unwrap(), result, expectation)
            .into_iter()
            .map(|v| (v.value, v.ok))
            .collect()
    }

    #[test]
    fn latency_figures_are_the_reports() {
        let result = run();
        let h = &result.total.corrected;
        let expect = paced(500.0);
        let got = judge("p50<1s,p99.9<1s,p100<1s,p0<1s,max<1s,mean<1s,stdev<1s", &result, &expect);
        let values: Vec<f64> = got.iter().map(|(v, _)| v.unwrap()).collect();
        assert_eq!(
            values,
            [
                value_at_percentile(h, 50.0) as f64,
                value_at_percentile(h, 99.9) as f64,
                h.max() as f64,
                h.min() as f64,
                h.max() as f64,
                spectrum::mean(h),
                spectrum::stddev(h),
            ]
        );
        assert_eq!(values[0], 500.0);
        assert_eq!(values[2], 1000.0);
        // The uncorrected and lag histograms.
        let got = judge("u.p50<1s,u.max<1s,lag.p99<1s,lag.max<1s,lag.mean<1s", &result, &expect);
        let values: Vec<f64> = got.iter().map(|(v, _)| v.unwrap()).collect();
        assert_eq!(values[..4], [251.0, 501.0, 5.0, 200.0]);
        assert_eq!(values[4], spectrum::mean(&result.total.lag));
    }

    #[test]
    fn operators() {
        let result = run();
        let expect = paced(500.0);
        let got = judge("p50<500us,p50<=500us,p50>500us,p50>=500us,p50<501us", &result, &expect);
        let oks: Vec<bool> = got.iter().map(|(_, ok)| *ok).collect();
        assert_eq!(oks, [false, true, false, true, true]);
    }

    #[test]
    fn errors_requests_and_rates() {
        let result = run();
        // Failed: 2 read + 1 connect + 10 status + 3 unsent = 16; issued:
        // 1000 completed + 3 socket errors + 3 unsent = 1006.
        let share = 100.0 * 16.0 / 1006.0;
        let got = judge(
            "errors<2%,errors<1%,errors<=16,errors<16,requests>=1000,rate>=500,rate>=100%,rate>50%",
            &result,
            &paced(1000.0),
        );
        assert_eq!(
            got,
            [
                (Some(share), true),
                (Some(share), false),
                (Some(16.0), true),
                (Some(16.0), false),
                (Some(1000.0), true),
                (Some(500.0), true),
                (Some(50.0), false),
                (Some(50.0), false),
            ]
        );
    }

    #[test]
    fn undefined_values_fail() {
        // Closed loop: no lag, no target; nothing issued at all.
        let empty = RunResult::measured(Stats::new(3), Duration::ZERO);
        let closed = Expectation { target_rate: None };
        let got = judge("p99<1s,u.mean<1s,lag.max<1s,errors<=100%,rate>=0%", &empty, &closed);
        assert_eq!(got, vec![(None, false); 5]);
        // Counts are always defined.
        assert_eq!(
            judge("errors<=0,requests>=0,rate>=0", &empty, &closed),
            vec![(Some(0.0), true); 3]
        );
    }

    #[test]
    fn verdict_block() {
        let result = run();
        let verdicts = evaluate(
            &parse("p50<1ms,errors<0.1%,lag.p99<=1ms,errors<0.001%").unwrap(),
            &result,
            &paced(500.0),
        );
        let mut out = Vec::new();
        write_verdicts(&mut out, &verdicts).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SLO verdict: FAIL (2 of 4 objectives met)\n\
             \x20 ok    p50 < 1ms        measured 500.00us\n\
             \x20 FAIL  errors < 0.1%    measured 1.59%\n\
             \x20 ok    lag.p99 <= 1ms   measured 5.00us\n\
             \x20 FAIL  errors < 0.001%  measured 1.59%\n"
        );
        assert_eq!(
            failures(&verdicts).unwrap(),
            "SLO failed: errors<0.1% (measured 1.59%), errors<0.001% (measured 1.59%)"
        );
        let empty = RunResult::measured(Stats::new(3), Duration::ZERO);
        let verdicts = evaluate(&parse("p99<1s").unwrap(), &empty, &paced(1.0));
        let mut out = Vec::new();
        write_verdicts(&mut out, &verdicts).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SLO verdict: FAIL (0 of 1 objectives met)\n  FAIL  p99 < 1s  nothing measured\n"
        );
        let mut out = Vec::new();
        write_verdicts(&mut out, &[]).unwrap();
        assert!(out.is_empty());
        assert_eq!(failures(&[]), None);
    }

    #[test]
    fn values_print_in_their_units() {
        assert_eq!(format_value(9120.0, Unit::Micros), "9.12ms");
        assert_eq!(format_value(0.35, Unit::Percent), "0.35%");
        assert_eq!(format_value(0.0, Unit::Percent), "0.00%");
        assert_eq!(format_value(0.0043, Unit::Percent), "0.0043%");
        assert_eq!(format_value(0.0000001, Unit::Percent), "0.000000%");
        assert_eq!(format_value(100.0, Unit::Percent), "100.00%");
        assert_eq!(format_value(35.0, Unit::Count), "35");
        assert_eq!(format_value(987.654, Unit::PerSecond), "987.65 requests/s");
    }

    #[test]
    fn json_fields() {
        let result = run();
        let verdicts = evaluate(
            &parse("p99<10ms,mean>1ms,errors<0.1%,rate>99%,lag.max<1s").unwrap(),
            &result,
            &Expectation { target_rate: Some(500.0) },
        );
        let mut line = Vec::new();
        serde_json::to_writer(&mut line, &verdicts).unwrap();
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            v[0],
            json!({"objective": "p99<10ms", "metric": "p99", "op": "<", "threshold": 10000,
                   "value": 990, "unit": "us", "ok": true})
        );
        assert_eq!(v[1]["value"], spectrum::mean(&result.total.corrected));
        assert_eq!((v[1]["unit"].clone(), v[1]["ok"].clone()), (json!("us"), json!(false)));
        assert_eq!(v[2]["threshold"], 0.1);
        assert_eq!(v[2]["unit"], "%");
        assert_eq!(v[3]["value"], 100);
        assert_eq!(v[3]["ok"], true);
        assert_eq!(v[4]["metric"], "lag.max");
        let empty = evaluate(
            &parse("p99<1s").unwrap(),
            &RunResult::measured(Stats::new(3), Duration::ZERO),
            &paced(1.0),
        );
        let v = serde_json::to_value(&empty).unwrap();
        assert_eq!(v[0]["value"], Value::Null);
        assert_eq!(v[0]["ok"], false);
    }

    #[test]
    fn gate_decides_the_exit_code() {
        let result = run();
        let gated = |objectives: &str| {
            let objectives = parse(objectives).unwrap();
            gate(&evaluate(&objectives, &result, &paced(500.0)), false)
        };
        assert_eq!(gate(&[], false), 0);
        assert_eq!(gated("p99<10ms,requests>=1000"), 0);
        assert_eq!(gated("p99<10ms,requests>1000"), 4);
    }
}
