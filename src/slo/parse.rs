//! Reading `--slo` lists. Every error names the objective it is about and
//! says which part is wrong; the command line adds the option's name.

use super::{Expectation, Metric, Objective, Op, Source, Stat, Unit};
use crate::units::{parse_metric, parse_time};

/// Characters an operator is made of; a run of them is one operator, so
/// `=<` and `==` are reported as wrong operators, not as wrong thresholds.
const OP_CHARS: [char; 4] = ['<', '>', '=', '!'];

const TIME_EXAMPLES: &str = "examples: 10ms, 500us, 1.5s";

/// Reads a comma-separated list of objectives (`p99<10ms,errors<0.1%`).
pub fn parse(list: &str) -> Result<Vec<Objective>, String> {
    if list.trim().is_empty() {
        return Err("no objective given (e.g. 'p99<10ms,errors<1%')".to_string());
    }
    list.split(',')
        .map(|item| {
            let item = item.trim();
            if item.is_empty() {
                return Err(format!(
                    "empty objective in '{list}' (objectives are separated by commas)"
                ));
            }
            objective(item).map_err(|why| format!("'{item}': {why}"))
        })
        .collect()
}

/// Refuses objectives that `expectation` makes impossible to measure: a
/// share of the target rate, or the schedule lag, of a run without a plan
/// (closed loop).
pub fn check(objectives: &[Objective], expectation: &Expectation) -> Result<(), String> {
    if expectation.target_rate.is_some() {
        return Ok(());
    }
    for objective in objectives {
        match (objective.metric, objective.unit) {
            (Metric::Rate, Unit::Percent) => {
                return Err(format!(
                    "'{}': a share of the target rate needs a plan (-R or --stages); without \
                     one, give requests/s (e.g. rate>1000)",
                    objective.text()
                ))
            }
            (Metric::Latency(Source::Lag, _), _) => {
                return Err(format!(
                    "'{}': the schedule lag is measured only with a plan (-R or --stages)",
                    objective.text()
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// One `metric op threshold`.
fn objective(text: &str) -> Result<Objective, String> {
    let start = text.find(OP_CHARS).ok_or_else(|| {
        "expected one of < <= > >= between the metric and the threshold (e.g. p99<10ms)".to_string()
    })?;
    let rest = &text[start..];
    let op_len = rest.find(|c| !OP_CHARS.contains(&c)).unwrap_or(rest.len());
    let (op_text, threshold) = rest.split_at(op_len);
    let op = match op_text {
        "<" => Op::Lt,
        "<=" => Op::Le,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        other => return Err(format!("'{other}' is not a comparison: expected one of < <= > >=")),
    };
    let metric_text = text[..start].trim();
    if metric_text.is_empty() {
        return Err(format!("missing metric before '{op_text}'"));
    }
    let threshold = threshold.trim();
    if threshold.is_empty() {
        return Err(format!("missing threshold after '{op_text}'"));
    }
    let metric = metric(metric_text)?;
    let (value, unit) = read_threshold(metric, threshold)?;
    Ok(Objective {
        metric,
        op,
        threshold: value,
        unit,
        threshold_text: threshold.split_whitespace().collect(),
    })
}

/// A metric's name, case-insensitive.
pub fn metric(typed: &str) -> Result<Metric, String> {
    let name = typed.to_ascii_lowercase();
    match name.as_str() {
        "errors" => return Ok(Metric::Errors),
        "requests" => return Ok(Metric::Requests),
        "rate" => return Ok(Metric::Rate),
        _ => {}
    }
    let (source, stat) = if let Some(stat) = name.strip_prefix("u.") {
        (Source::Uncorrected, stat)
    } else if let Some(stat) = name.strip_prefix("lag.") {
        (Source::Lag, stat)
    } else {
        (Source::Corrected, name.as_str())
    };
    let stat = match stat {
        "mean" => Stat::Mean,
        "stdev" => Stat::Stdev,
        "max" => Stat::Max,
        _ => match percentile(stat) {
            Some(Ok(p)) => Stat::Percentile(p),
            Some(Err(why)) => return Err(why),
            None => {
                return Err(format!(
                    "unknown metric '{typed}' (metrics: pN, mean, stdev, max of the latency, \
                     also as u.pN... for the uncorrected latency and lag.pN... for the \
                     schedule lag; errors, requests, rate)"
                ))
            }
        },
    };
    Ok(Metric::Latency(source, stat))
}

/// `p99.9` as 99.9; None if `stat` is not `p` and a number.
fn percentile(stat: &str) -> Option<Result<f64, String>> {
    let number = stat.strip_prefix('p')?;
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let p: f64 = number.parse().ok()?;
    if p > 100.0 {
        return Some(Err(format!(
            "percentile {number} is above 100 (percentiles go from p0 to p100; the 99.9th is \
             p99.9)"
        )));
    }
    Some(Ok(p))
}

/// The threshold of `metric`, in the unit the metric is measured in.
fn read_threshold(metric: Metric, text: &str) -> Result<(f64, Unit), String> {
    let share = text.strip_suffix('%');
    match (metric, share) {
        (Metric::Latency(..), _) => time(text).map(|us| (us, Unit::Micros)),
        (Metric::Errors, Some(number)) => {
            let share = percentage(text, number)?;
            if share > 100.0 {
                return Err(format!("'{text}' is above 100%, the share of all requests"));
            }
            Ok((share, Unit::Percent))
        }
        (Metric::Errors, None) => {
            number(text, "is not a share or a count (examples: 0.1%, 10)", Unit::Count)
        }
        (Metric::Requests, _) => number(text, "is not a count (examples: 1000, 10k)", Unit::Count),
        (Metric::Rate, Some(number)) => Ok((percentage(text, number)?, Unit::Percent)),
        (Metric::Rate, None) => number(
            text,
            "is not a rate (examples: 99% of the target rate, 1000 or 1.5k requests/s)",
            Unit::PerSecond,
        ),
    }
}

/// A time with its unit, in microseconds.
fn time(text: &str) -> Result<f64, String> {
    if text.ends_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Err(format!("'{text}' needs a time unit ({TIME_EXAMPLES})"));
    }
    let duration =
        parse_time(text).map_err(|_| format!("'{text}' is not a time ({TIME_EXAMPLES})"))?;
    Ok(duration.as_nanos() as f64 / 1000.0)
}

/// The number of `text` = `number%`: a plain decimal number.
fn percentage(text: &str, number: &str) -> Result<f64, String> {
    let number = number.trim_end();
    let plain = !number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.');
    match number.parse::<f64>() {
        Ok(value) if plain => Ok(value),
        _ => Err(format!("'{text}' is not a percentage (examples: 0.1%, 99%)")),
    }
}

/// A count or rate with an optional SI suffix (`10k`).
fn number(text: &str, not_this: &str, unit: Unit) -> Result<(f64, Unit), String> {
    match parse_metric(text) {
        Ok(value) if value.is_finite() => Ok((value, unit)),
        Ok(_) => Err(format!("'{text}' is too large")),
        Err(_) => Err(format!("'{text}' {not_this}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Objective {
        let mut list = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(list.len(), 1);
        list.remove(0)
    }

    fn error(text: &str) -> String {
        match parse(text) {
            Err(message) => message,
            Ok(list) => panic!("{text}: accepted as {list:?}"),
        }
    }

    fn latency(source: Source, stat: Stat) -> Metric {
        Metric::Latency(source, stat)
    }

    #[test]
    fn latency_objectives() {
        let o = one("p99<10ms");
        assert_eq!(o.metric, latency(Source::Corrected, Stat::Percentile(99.0)));
        assert_eq!((o.op, o.threshold, o.unit), (Op::Lt, 10_000.0, Unit::Micros));
        assert_eq!(o.text(), "p99<10ms");
        assert_eq!(o.spaced(), "p99 < 10ms");
        let cases = [
            ("p99.9<=50ms", latency(Source::Corrected, Stat::Percentile(99.9)), Op::Le, 50e3),
            ("p100<1s", latency(Source::Corrected, Stat::Percentile(100.0)), Op::Lt, 1e6),
            ("p0>1us", latency(Source::Corrected, Stat::Percentile(0.0)), Op::Gt, 1.0),
            ("p50>=1.5ms", latency(Source::Corrected, Stat::Percentile(50.0)), Op::Ge, 1500.0),
            ("mean<2ms", latency(Source::Corrected, Stat::Mean), Op::Lt, 2000.0),
            ("stdev<500us", latency(Source::Corrected, Stat::Stdev), Op::Lt, 500.0),
            ("max<1s", latency(Source::Corrected, Stat::Max), Op::Lt, 1e6),
            ("u.p99<3ms", latency(Source::Uncorrected, Stat::Percentile(99.0)), Op::Lt, 3000.0),
            ("u.mean<1ms", latency(Source::Uncorrected, Stat::Mean), Op::Lt, 1000.0),
            ("u.max<2s", latency(Source::Uncorrected, Stat::Max), Op::Lt, 2e6),
            ("lag.p99<1ms", latency(Source::Lag, Stat::Percentile(99.0)), Op::Lt, 1000.0),
            ("lag.max<0.1s", latency(Source::Lag, Stat::Max), Op::Lt, 100_000.0),
            ("lag.stdev<1m", latency(Source::Lag, Stat::Stdev), Op::Lt, 60e6),
        ];
        for (text, metric, op, threshold) in cases {
            let o = one(text);
            assert_eq!(
                (o.metric, o.op, o.threshold, o.unit),
                (metric, op, threshold, Unit::Micros)
            );
            assert_eq!(o.text(), text);
        }
    }

    #[test]
    fn counts_shares_and_rates() {
        let cases = [
            ("errors<0.1%", Metric::Errors, 0.1, Unit::Percent),
            ("errors<=0%", Metric::Errors, 0.0, Unit::Percent),
            ("errors<10", Metric::Errors, 10.0, Unit::Count),
            ("errors<1k", Metric::Errors, 1000.0, Unit::Count),
            ("requests>=10k", Metric::Requests, 10_000.0, Unit::Count),
            ("rate>99%", Metric::Rate, 99.0, Unit::Percent),
            ("rate>1.5k", Metric::Rate, 1500.0, Unit::PerSecond),
            ("rate>=250", Metric::Rate, 250.0, Unit::PerSecond),
        ];
        for (text, metric, threshold, unit) in cases {
            let o = one(text);
            assert_eq!((o.metric, o.threshold, o.unit), (metric, threshold, unit), "{text}");
        }
    }

    #[test]
    fn lists_spaces_and_case() {
        let list = parse(" P99 < 10 ms , errors<0.1% ,Lag.Max>=1ms,U.P99.90<1s").unwrap();
        let texts: Vec<String> = list.iter().map(Objective::text).collect();
        assert_eq!(texts, ["p99<10ms", "errors<0.1%", "lag.max>=1ms", "u.p99.9<1s"]);
        assert_eq!(list[0].threshold, 10_000.0);
        // The example.
        let example = "p99<10ms,p99.9<50ms,mean<2ms,max<1s,errors<0.1%,rate>99%,lag.p99<1ms";
        assert_eq!(parse(example).unwrap().len(), 7);
    }

    #[test]
    fn every_error_names_the_objective_and_the_part() {
        let cases = [
            ("", "no objective given (e.g. 'p99<10ms,errors<1%')"),
            (" ", "no objective given (e.g. 'p99<10ms,errors<1%')"),
            (
                "p99<1ms,,max<1s",
                "empty objective in 'p99<1ms,,max<1s' (objectives are separated by commas)",
            ),
            ("p99<1ms,", "empty objective in 'p99<1ms,' (objectives are separated by commas)"),
            (
                "p99 10ms",
                "'p99 10ms': expected one of < <= > >= between the metric and the threshold \
                 (e.g. p99<10ms)",
            ),
            ("p99=10ms", "'p99=10ms': '=' is not a comparison: expected one of < <= > >="),
            ("p99=<10ms", "'p99=<10ms': '=<' is not a comparison: expected one of < <= > >="),
            ("p99<<10ms", "'p99<<10ms': '<<' is not a comparison: expected one of < <= > >="),
            ("p99!=10ms", "'p99!=10ms': '!=' is not a comparison: expected one of < <= > >="),
            ("<10ms", "'<10ms': missing metric before '<'"),
            ("p99<=", "'p99<=': missing threshold after '<='"),
            (
                "p999x<1ms",
                "'p999x<1ms': unknown metric 'p999x' (metrics: pN, mean, stdev, max of the \
                 latency, also as u.pN... for the uncorrected latency and lag.pN... for the \
                 schedule lag; errors, requests, rate)",
            ),
            (
                "p999<1ms",
                "'p999<1ms': percentile 999 is above 100 (percentiles go from p0 to p100; the \
                 99.9th is p99.9)",
            ),
            ("p99<1x", "'p99<1x': '1x' is not a time (examples: 10ms, 500us, 1.5s)"),
            ("p99<10", "'p99<10': '10' needs a time unit (examples: 10ms, 500us, 1.5s)"),
            ("mean<5%", "'mean<5%': '5%' is not a time (examples: 10ms, 500us, 1.5s)"),
            ("errors<x%", "'errors<x%': 'x%' is not a percentage (examples: 0.1%, 99%)"),
            ("errors<1k%", "'errors<1k%': '1k%' is not a percentage (examples: 0.1%, 99%)"),
            ("errors<150%", "'errors<150%': '150%' is above 100%, the share of all requests"),
            ("errors<lots", "'errors<lots': 'lots' is not a share or a count (examples: 0.1%, 10)"),
            ("requests>5%", "'requests>5%': '5%' is not a count (examples: 1000, 10k)"),
            (
                "rate>fast",
                "'rate>fast': 'fast' is not a rate (examples: 99% of the target rate, 1000 or \
                 1.5k requests/s)",
            ),
            ("rate>%", "'rate>%': '%' is not a percentage (examples: 0.1%, 99%)"),
            (
                "rate>-5",
                "'rate>-5': '-5' is not a rate (examples: 99% of the target rate, 1000 or 1.5k \
                 requests/s)",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(error(text), message, "{text}");
        }
        let huge = format!("requests>1{}", "0".repeat(400));
        assert!(error(&huge).ends_with("is too large"), "{}", error(&huge));
        // The first wrong objective of a list is the one reported.
        assert_eq!(
            error("p99<1ms,p50<2x,p1<y"),
            "'p50<2x': '2x' is not a time (examples: 10ms, 500us, 1.5s)"
        );
    }

    #[test]
    fn closed_loop_refuses_what_needs_a_plan() {
        let closed = Expectation { target_rate: None };
        let paced = Expectation { target_rate: Some(100.0) };
        let list = parse("p99<1ms,errors<1%,rate>100,requests>1,u.max<1s").unwrap();
        assert_eq!(check(&list, &closed), Ok(()));
        for (text, message) in [
            (
                "rate > 99%",
                "'rate>99%': a share of the target rate needs a plan (-R or --stages); without \
                 one, give requests/s (e.g. rate>1000)",
            ),
            (
                "lag.p99<1ms",
                "'lag.p99<1ms': the schedule lag is measured only with a plan (-R or --stages)",
            ),
        ] {
            let list = parse(text).unwrap();
            assert_eq!(check(&list, &closed), Err(message.to_string()));
            assert_eq!(check(&list, &paced), Ok(()));
        }
    }
}
