//! How each run was made, in a line, and what makes two runs not
//! comparable: they are compared anyway, with a warning that says what
//! differs.

use crate::description::Description;
use crate::merge::saved::SavedRun;
use crate::plan::{Arrival, PlanSpec};
use crate::units::format_time_us;
use crate::units::per_second;

/// `http://host/: 1000 requests in 2.00s, paced at 500/s, 1 thread, 4
/// connections`.
pub fn describe(run: &SavedRun) -> String {
    let s = &run.description;
    let seconds = run.result.runtime.as_secs_f64();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    format!(
        "{}: {} requests in {} ({:.2} requests/s), {}, {}, {}",
        s.url,
        run.result.total.requests,
        format_time_us(seconds * 1e6),
        per_second(run.result.total.requests, seconds),
        plan(s.plan()),
        plural(s.threads, "thread"),
        plural(s.connections, "connection"),
    )
}

/// `closed loop`, `paced at 500/s`, `paced from 100/s in 2 stages`.
fn plan(plan: Option<&PlanSpec>) -> String {
    let Some(spec) = plan else { return "closed loop".to_string() };
    let poisson = if spec.arrival == Arrival::Poisson { " (Poisson)" } else { "" };
    match spec.stages.len() {
        0 => format!("paced at {}/s{poisson}", spec.rate),
        stages => format!("paced from {}/s in {stages} stages{poisson}", spec.rate),
    }
}

/// What differs between the runs' settings that makes their figures not
/// comparable, one phrase each: the URL, the plan, how long it lasted
/// (`-d`) and how many requests it was limited to (`-n`), the
/// connections, the protocol, the histograms' precision (`-D`). Empty
/// when none does. (A longer run reaches further into the tail, and
/// warms caches, pools and JITs longer: its percentiles are not the
/// shorter one's.)
pub fn differences(base: &Description, new: &Description) -> Vec<String> {
    let mut differ = Vec::new();
    let mut check = |what: &str, a: String, b: String| {
        if a != b {
            differ.push(format!("{what} ({a} and {b})"));
        }
    };
    check("URL", base.url.clone(), new.url.clone());
    if base.plan() != new.plan() {
        check("plan", plan_words(base.plan()), plan_words(new.plan()));
    }
    check("duration (-d)", duration_words(base.duration), duration_words(new.duration));
    check("-n", limit_words(base.requests), limit_words(new.requests));
    check("connections (-c)", base.connections.to_string(), new.connections.to_string());
    check("protocol", base.protocol.to_string(), new.protocol.to_string());
    check("precision (-D)", base.digits.to_string(), new.digits.to_string());
    differ
}

/// How long a run was planned to last: `2s`, or `open-ended` (a closed
/// loop bounded by `-n` only).
fn duration_words(duration: Option<std::time::Duration>) -> String {
    duration.map_or("open-ended".to_string(), |d| format_time_us(d.as_micros() as f64))
}

/// `-n`: `1000 requests`, or `none`.
fn limit_words(requests: Option<u64>) -> String {
    requests.map_or("none".to_string(), |n| format!("{n} requests"))
}

/// A plan in words, detailed enough that two different plans never read
/// the same.
fn plan_words(plan: Option<&PlanSpec>) -> String {
    let Some(spec) = plan else { return "closed loop".to_string() };
    let arrival = match spec.arrival {
        Arrival::Constant => "",
        Arrival::Poisson => " Poisson",
    };
    let stages: Vec<String> = (spec.stages.iter())
        .map(|s| format!("{}s to {}/s", s.duration.as_secs_f64(), s.rate))
        .collect();
    match stages.is_empty() {
        true => format!("-R {}{arrival}", spec.rate),
        false => format!("from {}/s: {}{arrival}", spec.rate, stages.join(", ")),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::{BenchConfig, Mode};
    use crate::merge::saved;
    use crate::report::{json, ReportOptions};
    use crate::stats::RunResult;
    use crate::target::Target;

    /// `result` as a run of `cfg` saved with `-e` and read back.
    pub fn saved_run(cfg: &BenchConfig, result: &RunResult) -> SavedRun {
        let mut text = Vec::new();
        let run = Description::of(cfg);
        let report = json::final_report(&run, &ReportOptions::default(), result, &[]).unwrap();
        json::write_line(&mut text, &report).unwrap();
        saved::parse("run.json", std::str::from_utf8(&text).unwrap()).unwrap()
    }

    /// A closed-loop configuration of `url`, one thread, 4 connections.
    pub fn config(url: &str) -> BenchConfig {
        BenchConfig {
            threads: 1,
            connections: 4,
            duration: Some(Duration::from_secs(2)),
            ..BenchConfig::new(Target::parse(url).unwrap())
        }
    }

    fn paced(url: &str, rate: f64) -> BenchConfig {
        BenchConfig { mode: Mode::Paced(PlanSpec::constant(rate)), ..config(url) }
    }

    fn run() -> RunResult {
        RunResult::measured(crate::stats::Stats::new(3), Duration::from_secs(2))
    }

    #[test]
    fn runs_in_a_line() {
        let saved = saved_run(&paced("http://h:1/", 500.0), &run());
        assert_eq!(
            describe(&saved),
            "http://h:1/: 0 requests in 2.00s (0.00 requests/s), paced at 500/s, 1 thread, \
             4 connections"
        );
        let closed = saved_run(&config("http://h:1/"), &run());
        assert!(describe(&closed).contains(", closed loop, "), "{}", describe(&closed));
    }

    #[test]
    fn what_differs_is_named() {
        let base = saved_run(&paced("http://h:1/", 500.0), &run()).description;
        assert!(differences(&base, &base).is_empty());
        let mut other = paced("http://h:2/", 1000.0);
        other.connections = 8;
        other.digits = 2;
        let mut result = run();
        result.total = crate::stats::Stats::new(2);
        let new = saved_run(&other, &result).description;
        assert_eq!(
            differences(&base, &new),
            [
                "URL (http://h:1/ and http://h:2/)",
                "plan (-R 500 and -R 1000)",
                "connections (-c) (4 and 8)",
                "precision (-D) (3 and 2)",
            ]
        );
        let closed = saved_run(&config("http://h:1/"), &run()).description;
        assert_eq!(differences(&base, &closed), ["plan (-R 500 and closed loop)"]);
    }

    /// Issue 34, item 2: a 2 s and a 5 s run compared without a word.
    #[test]
    fn the_duration_and_the_request_limit_are_settings() {
        let base = saved_run(&paced("http://h:1/", 500.0), &run()).description;
        let longer =
            BenchConfig { duration: Some(Duration::from_secs(5)), ..paced("http://h:1/", 500.0) };
        let new = saved_run(&longer, &run()).description;
        assert_eq!(differences(&base, &new), ["duration (-d) (2.00s and 5.00s)"]);
        let bounded = BenchConfig { requests: Some(1000), duration: None, ..config("http://h:1/") };
        let closed = saved_run(&config("http://h:1/"), &run()).description;
        let new = saved_run(&bounded, &run()).description;
        assert_eq!(
            differences(&closed, &new),
            ["duration (-d) (2.00s and open-ended)", "-n (none and 1000 requests)"]
        );
    }
}
