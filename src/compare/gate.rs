//! `--max-regression 'p99:+10%,p50:+1ms,rate:-2%,errors:+0.1%'`: how much
//! worse NEW may be than BASE before `pace compare` fails a CI job (exit
//! code 4, as `--slo`). The grammar mirrors `--slo`'s (same metric names,
//! one-line errors naming the limit and the wrong part):
//!
//! ```text
//! list   = limit { "," limit }           (--max-regression may be repeated)
//! limit  = metric ":" [ sign ] amount    (spaces allowed around the parts)
//! metric = as --slo: [ "u." | "lag." ] ( "p" N | "mean" | "stdev" | "max" )
//!        | "errors" | "requests" | "rate"
//! ```
//!
//! - Latency may rise by at most the amount: `+10%` of the base value, or
//!   a time (`+1ms`). Its sign is `+` (or none).
//! - `rate` and `requests` may fall by at most `-2%` of the base value, or
//!   a number (`-100`: requests/s for the rate). Their sign is `-` (or none).
//! - `errors` may rise by `+0.1%`: percentage points of the share of the
//!   requests issued that failed (as `--slo errors<N%` counts them); or by
//!   a count (`+10`).
//!
//! A limit judges the measured figures, not their noise: a limit tighter
//! than the runs' noise fails on noise (the table's verdicts say when).
//! So does a limit on a percentile that a run has too few samples beyond
//! ([`crate::stats::confidence`]): it is judged all the same, so that no
//! regression passes unseen, and its line says `too few samples`, so
//! that a failure is not taken for more than it is.

use std::io::{self, Write};

use serde_json::{json, Value};

use super::verdicts::measure;
use crate::slo::{self, Metric, Source, Stat, Unit};
use crate::stats::confidence;
use crate::stats::RunResult;
use crate::units::{format_time_us, parse_metric, parse_time};

/// One limit: how much worse a figure may get.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    pub metric: Metric,
    /// How much worse, positive, in `unit`.
    pub amount: f64,
    /// [`Unit::Percent`]: of the base value (percentage points for errors);
    /// otherwise the metric's own unit.
    pub unit: Unit,
    /// `p99:+10%`, as typed without spaces and with its sign.
    pub text: String,
}

/// One limit judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    pub limit: Limit,
    /// NEW - BASE in the limit's unit (for a percentage, of the base); None
    /// when a run has no such figure.
    pub change: Option<f64>,
    pub ok: bool,
    /// A percentile that a run has too few samples beyond.
    pub too_few_samples: bool,
}

/// Which way a metric gets worse.
fn worse_upwards(metric: Metric) -> bool {
    !matches!(metric, Metric::Rate | Metric::Requests)
}

/// Reads a comma-separated list of limits.
pub fn parse(list: &str) -> Result<Vec<Limit>, String> {
    if list.trim().is_empty() {
        return Err("no limit given (e.g. 'p99:+10%,rate:-2%')".to_string());
    }
    list.split(',')
        .map(|item| {
            let item = item.trim();
            if item.is_empty() {
                return Err(format!("empty limit in '{list}' (limits are separated by commas)"));
            }
            limit(item).map_err(|why| format!("'{item}': {why}"))
        })
        .collect()
}

fn limit(text: &str) -> Result<Limit, String> {
    let Some((metric_text, amount_text)) = text.split_once(':') else {
        return Err("expected metric:limit (e.g. p99:+10%, rate:-2%)".to_string());
    };
    let metric_text = metric_text.trim();
    if metric_text.is_empty() {
        return Err("missing metric before ':'".to_string());
    }
    let metric = slo::metric(metric_text)?;
    let amount_text: String = amount_text.split_whitespace().collect();
    if amount_text.is_empty() {
        return Err("missing limit after ':'".to_string());
    }
    let (sign, unsigned) = match amount_text.chars().next() {
        Some(sign @ ('+' | '-')) => (Some(sign), &amount_text[1..]),
        _ => (None, amount_text.as_str()),
    };
    let upwards = worse_upwards(metric);
    let (worse, expected) = if upwards { ('+', "rise") } else { ('-', "fall") };
    if sign.is_some_and(|sign| sign != worse) {
        return Err(format!(
            "{} gets worse as it {expected}s: its limit is how much it may {expected}, \
             e.g. {}:{worse}{}",
            metric.name(),
            metric.name(),
            unsigned
        ));
    }
    let (amount, unit) = amount(metric, unsigned, &amount_text)?;
    Ok(Limit { metric, amount, unit, text: format!("{}:{worse}{unsigned}", metric.name()) })
}

/// The amount of a limit and its unit.
fn amount(metric: Metric, text: &str, typed: &str) -> Result<(f64, Unit), String> {
    if let Some(number) = text.strip_suffix('%') {
        let plain = !number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.');
        return match number.parse::<f64>() {
            Ok(value) if plain => Ok((value, Unit::Percent)),
            _ => Err(format!("'{typed}' is not a percentage (examples: +10%, -2%)")),
        };
    }
    match metric {
        Metric::Latency(..) => {
            let bad = || format!("'{typed}' is not a time or a percentage (examples: +1ms, +10%)");
            if text.ends_with(|c: char| c.is_ascii_digit() || c == '.') {
                return Err(format!(
                    "'{typed}' needs a unit: a time (+1ms, +500us) or a percentage (+10%)"
                ));
            }
            let duration = parse_time(text).map_err(|_| bad())?;
            Ok((duration.as_nanos() as f64 / 1000.0, Unit::Micros))
        }
        _ => {
            let unit = if metric == Metric::Rate { Unit::PerSecond } else { Unit::Count };
            match parse_metric(text) {
                Ok(value) if value.is_finite() => Ok((value, unit)),
                _ => Err(format!("'{typed}' is not a number or a percentage (examples: 10, 2%)")),
            }
        }
    }
}

/// Refuses limits the runs cannot measure: the schedule lag of a run
/// without a plan. `paced` is whether both runs had one.
pub fn check(limits: &[Limit], paced: bool) -> Result<(), String> {
    match limits.iter().find(|l| matches!(l.metric, Metric::Latency(Source::Lag, _))) {
        Some(lag) if !paced => Err(format!(
            "'{}': the schedule lag is measured only with a plan (-R or --stages), and a run \
             has none",
            lag.text
        )),
        _ => Ok(()),
    }
}

/// Judges each limit on NEW against BASE.
pub fn judge(limits: &[Limit], base: &RunResult, new: &RunResult) -> Vec<Judged> {
    limits
        .iter()
        .map(|limit| {
            // The figure in the metric's own unit (a share for errors in %).
            let unit = match (limit.metric, limit.unit) {
                (Metric::Latency(..), _) => Unit::Micros,
                (Metric::Rate, _) => Unit::PerSecond,
                (Metric::Errors, Unit::Percent) => Unit::Percent,
                _ => Unit::Count,
            };
            let relative = limit.unit == Unit::Percent && limit.metric != Metric::Errors;
            let change = match (measure(base, limit.metric, unit), measure(new, limit.metric, unit))
            {
                (Some(b), Some(n)) if relative => Some(if b != 0.0 {
                    100.0 * (n - b) / b
                } else if n == b {
                    0.0
                } else {
                    f64::INFINITY.copysign(n - b)
                }),
                (Some(b), Some(n)) => Some(n - b),
                _ => None,
            };
            let ok = change.is_some_and(|change| {
                if worse_upwards(limit.metric) {
                    change <= limit.amount
                } else {
                    change >= -limit.amount
                }
            });
            let too_few_samples = match limit.metric {
                Metric::Latency(source, Stat::Percentile(p)) => {
                    let count = |r: &RunResult| {
                        let s = &r.total;
                        match source {
                            Source::Corrected => s.corrected.len(),
                            Source::Uncorrected => s.uncorrected.len(),
                            Source::Lag => s.lag.len(),
                        }
                    };
                    !(confidence::enough(count(base), p) && confidence::enough(count(new), p))
                }
                _ => false,
            };
            Judged { limit: limit.clone(), change, ok, too_few_samples }
        })
        .collect()
}

/// `Regression limits crossed: p50:+1ms (measured +1.05ms), ...`, or None
/// when every limit holds.
pub fn failures(judged: &[Judged]) -> Option<String> {
    let failed: Vec<String> = judged
        .iter()
        .filter(|j| !j.ok)
        .map(|j| format!("{} ({})", j.limit.text, j.measured()))
        .collect();
    (!failed.is_empty()).then(|| format!("Regression limits crossed: {}", failed.join(", ")))
}

/// The verdict block after the table (nothing without limits), as
/// `--slo`'s:
///
/// ```text
/// Regression verdict: FAIL (1 of 2 limits held)
///   ok    p99:+10%   measured +3.20%
///   FAIL  p50:+1ms   measured +1.05ms
/// ```
pub fn write(out: &mut dyn Write, judged: &[Judged]) -> io::Result<()> {
    if judged.is_empty() {
        return Ok(());
    }
    let held = judged.iter().filter(|j| j.ok).count();
    let overall = if held == judged.len() { "pass" } else { "FAIL" };
    writeln!(out, "Regression verdict: {overall} ({held} of {} limits held)", judged.len())?;
    let width = judged.iter().map(|j| j.limit.text.chars().count()).max().unwrap_or(0);
    for j in judged {
        let status = if j.ok { "ok" } else { "FAIL" };
        writeln!(out, "  {status:<4}  {:<width$}  {}", j.limit.text, j.measured())?;
    }
    Ok(())
}

impl Judged {
    /// `measured +1.05ms` (`measured +73.00%, too few samples`), or
    /// `nothing measured`.
    pub fn measured(&self) -> String {
        match self.change {
            Some(change) if self.too_few_samples => {
                format!("measured {}, too few samples", signed(change, self.limit.unit))
            }
            Some(change) => format!("measured {}", signed(change, self.limit.unit)),
            None => "nothing measured".to_string(),
        }
    }

    /// In the comparison's JSON: `{"limit": "p99:+10%", "metric": "p99",
    /// "max": 10, "unit": "%", "change": 3.2, "ok": true}`.
    pub fn json(&self) -> Value {
        json!({
            "limit": self.limit.text,
            "metric": self.limit.metric.name(),
            "max": if worse_upwards(self.limit.metric) { self.limit.amount } else { -self.limit.amount },
            "unit": self.limit.unit.name(),
            "change": self.change.filter(|c| c.is_finite()),
            "ok": self.ok,
            "too_few_samples": self.too_few_samples,
        })
    }
}

/// A change with its sign, as the reports print its kind.
pub fn signed(change: f64, unit: Unit) -> String {
    let sign = if change < 0.0 { "-" } else { "+" };
    let size = change.abs();
    match unit {
        Unit::Micros => format!("{sign}{}", format_time_us(size)),
        Unit::Percent if size.is_infinite() => format!("{sign}inf%"),
        _ => format!("{sign}{}", slo::format_value(size, unit)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::slo::Stat;
    use crate::stats::Outcome;
    use crate::stats::Stats;

    fn one(text: &str) -> Limit {
        let mut list = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(list.len(), 1);
        list.remove(0)
    }

    #[test]
    fn limits() {
        let p = |n| Metric::Latency(Source::Corrected, Stat::Percentile(n));
        let cases = [
            ("p99:+10%", p(99.0), 10.0, Unit::Percent, "p99:+10%"),
            ("p50:+1ms", p(50.0), 1000.0, Unit::Micros, "p50:+1ms"),
            ("P50 : 500us", p(50.0), 500.0, Unit::Micros, "p50:+500us"),
            ("rate:-2%", Metric::Rate, 2.0, Unit::Percent, "rate:-2%"),
            ("rate:1.5k", Metric::Rate, 1500.0, Unit::PerSecond, "rate:-1.5k"),
            ("errors:+0.1%", Metric::Errors, 0.1, Unit::Percent, "errors:+0.1%"),
            ("errors:+10", Metric::Errors, 10.0, Unit::Count, "errors:+10"),
            ("requests:-1k", Metric::Requests, 1000.0, Unit::Count, "requests:-1k"),
            (
                "u.max:+1s",
                Metric::Latency(Source::Uncorrected, Stat::Max),
                1e6,
                Unit::Micros,
                "u.max:+1s",
            ),
        ];
        for (text, metric, amount, unit, shown) in cases {
            let l = one(text);
            assert_eq!(
                (l.metric, l.amount, l.unit, l.text.as_str()),
                (metric, amount, unit, shown)
            );
        }
        assert_eq!(parse("p99:+10%,p50:+1ms,rate:-2%,errors:+0.1%").unwrap().len(), 4);
    }

    #[test]
    fn every_error_names_the_limit_and_the_part() {
        for (text, message) in [
            ("", "no limit given (e.g. 'p99:+10%,rate:-2%')"),
            ("p99:+1ms,,", "empty limit in 'p99:+1ms,,' (limits are separated by commas)"),
            ("p99<1ms", "'p99<1ms': expected metric:limit (e.g. p99:+10%, rate:-2%)"),
            (":+1ms", "':+1ms': missing metric before ':'"),
            ("p99:", "'p99:': missing limit after ':'"),
            ("p99x:+1ms", "'p99x:+1ms': unknown metric 'p99x' (metrics: pN, mean, stdev, max"),
            (
                "p99:-10%",
                "'p99:-10%': p99 gets worse as it rises: its limit is how much it may rise, \
                 e.g. p99:+10%",
            ),
            (
                "rate:+2%",
                "'rate:+2%': rate gets worse as it falls: its limit is how much it may fall, \
                 e.g. rate:-2%",
            ),
            ("p99:+10", "'p99:+10': '+10' needs a unit: a time (+1ms, +500us) or a percentage"),
            ("p99:+1x", "'p99:+1x': '+1x' is not a time or a percentage (examples: +1ms, +10%)"),
            ("errors:+x%", "'errors:+x%': '+x%' is not a percentage (examples: +10%, -2%)"),
            ("rate:-fast", "'rate:-fast': '-fast' is not a number or a percentage"),
        ] {
            match parse(text) {
                Err(got) => assert!(got.starts_with(message), "{text}: {got}"),
                Ok(list) => panic!("{text}: accepted as {list:?}"),
            }
        }
    }

    fn run(latency_us: u64, requests: u64, failed: u64) -> RunResult {
        let mut total = Stats::new(3);
        for _ in 0..requests {
            total.response(Outcome::Http(200));
            total.corrected.record(latency_us).unwrap();
        }
        total.errors.timeout = failed;
        RunResult::measured(total, Duration::from_secs(1))
    }

    #[test]
    fn judged_on_the_change() {
        let base = run(1000, 1000, 0);
        let new = run(1150, 980, 5);
        let limits = parse("p99:+10%,p50:+50us,rate:-2%,errors:+0.1%,errors:+10").unwrap();
        let judged = judge(&limits, &base, &new);
        let oks: Vec<bool> = judged.iter().map(|j| j.ok).collect();
        // p99 rose by 15%, p50 by 150us,
        // the rate fell 2%, errors rose 0.5 points and by 5.
        assert_eq!(oks, [false, false, true, false, true], "{judged:?}");
        assert!((judged[2].change.unwrap() + 2.0).abs() < 1e-9);
        assert_eq!(judged[4].change, Some(5.0));
        assert_eq!(
            failures(&judged).unwrap(),
            format!(
                "Regression limits crossed: p99:+10% ({}), p50:+50us (measured +150.00us), \
                 errors:+0.1% (measured +0.51%)",
                judged[0].measured()
            )
        );
        let mut text = Vec::new();
        write(&mut text, &judged[2..]).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "Regression verdict: FAIL (2 of 3 limits held)\n  ok    rate:-2%      measured \
             -2.00%\n  FAIL  errors:+0.1%  measured +0.51%\n  ok    errors:+10    measured +5\n"
        );
        assert!(failures(&judge(&parse("rate:-3%").unwrap(), &base, &new)).is_none());
        assert_eq!(judge(&parse("p50:+1%").unwrap(), &base, &run(1, 0, 1))[0].change, None);
    }

    /// A percentile with too few samples beyond it is judged all the
    /// same, and says so.
    #[test]
    fn too_few_samples_are_judged_and_said() {
        let (base, new) = (run(1000, 1000, 0), run(1150, 1000, 0));
        let limits = parse("p99:+10%,p99.9:+10%,u.p99.9:+1h,max:+1h,rate:-2%").unwrap();
        let judged = judge(&limits, &base, &new);
        let few: Vec<bool> = judged.iter().map(|j| j.too_few_samples).collect();
        // 1000 samples: 10 beyond p99, 1 beyond p99.9 (none recorded
        // uncorrected); the maximum is a limit of its own.
        assert_eq!(few, [false, true, true, false, false]);
        let oks: Vec<bool> = judged.iter().map(|j| j.ok).collect();
        assert_eq!(oks, [false, false, false, true, true]);
        assert_eq!(judged[1].measured(), format!("measured +15.00%, too few samples"));
        assert_eq!(judged[1].json()["too_few_samples"], true);
        assert_eq!(judged[0].json()["too_few_samples"], false);
    }

    #[test]
    fn lag_needs_plans() {
        let lag = parse("lag.p99:+1ms").unwrap();
        assert!(check(&lag, false).unwrap_err().contains("only with a plan"));
        assert!(check(&lag, true).is_ok());
        assert!(check(&parse("p99:+1ms").unwrap(), false).is_ok());
    }
}
