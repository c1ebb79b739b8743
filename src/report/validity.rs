//! Whether a run can be taken at its word, and if not, why: a line in the
//! text report (`Validity: not trusted: ...`, only when it cannot), a
//! `validity` object in the JSON, a note in the HTML page, and with
//! `--strict` exit code 5 ([`crate::error::UNTRUSTED`]).
//!
//! Like [`super::diagnose`], a pure function of the description of the
//! run and its result (its course of periods included,
//! [`crate::stats::course`]), so `pace report` of a saved run says the
//! same, and `pace merge` judges the merged run. The causes, and how each
//! is judged:
//!
//! - **The schedule was not kept** (paced runs): a warning says that pace
//!   fell behind its plan or never sent some of it (`generator_cpu`,
//!   `too_few_connections`, `unsent`); the cause names them rather than
//!   repeat them. A closed loop whose slots waited for pace
//!   (`generator_held_slots`) measured pace more than the server.
//! - **The arrivals did not match the plan** (paced runs). A Poisson plan:
//!   the sends of all threads counted per 10 ms slot, and the index of
//!   dispersion test against the slots' mean (within each second, so that
//!   a ramp is no burst), over windows of about [`WINDOW_DOF`] slots (a
//!   second; the course's periods are pooled up to that). Poisson
//!   arrivals vary as much as their mean: a kept plan gives a dispersion
//!   of about 1; sends held up and then sent at once give empty slots and
//!   a burst, many times that. A window fails when its dispersion is at
//!   least [`DISPERSION_LIMIT`] (an effect size: the hiccups of a shared
//!   machine move sends by a few milliseconds, within a slot or to the
//!   next, and stay well below it) and the chi-square is significant
//!   (Wilson-Hilferty z of at least [`DISPERSION_Z`], one-sided p below
//!   1e-4, for runs of many windows). A constant rate (evenly spaced):
//!   the grid error, the schedule lag's p99 (each send against its time
//!   on the even grid), above the larger of [`GRID_ERROR_FLOOR_US`] and
//!   one gap of the plan.
//! - **Latency was not stationary across the periods**: the rules of
//!   [`crate::stats::stationarity`] (a Mann-Kendall trend and a size) on
//!   the course's periods: latency, or requests in flight, kept growing.
//! - **The warm-up was too short**: the start's median corrected latency
//!   at least [`stationarity::GROWTH`] times the rest's and
//!   [`stationarity::LATENCY_FLOOR_US`] above it (the stationarity rules'
//!   size). The start is the first period, or the first few up to
//!   [`MIN_FIRST_RESPONSES`] responses (a period records the responses
//!   that arrived in it, and a server that stalled at the start answers
//!   later), at most a third of the periods, with at least two after it.
//!
//! Without a course (a file of an earlier pace) only the checks that need
//! none are made.

use std::io::{self, Write};
use std::time::Duration;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Value};

use super::diagnose::{self, Code, Figures};
use crate::description::Description;
use crate::plan::Arrival;
use crate::stats::course::{self, CoursePeriod};
use crate::stats::spectrum::value_at_percentile;
use crate::stats::stationarity::{self, Stationarity};
use crate::stats::RunResult;
use crate::units::format_time_us;

/// The arrivals are judged over windows of at least this many degrees of
/// freedom (slots less one per second): a second.
pub const WINDOW_DOF: u64 = 99;
/// A window's sends per slot must vary at least this many times as much
/// as Poisson arrivals do...
pub const DISPERSION_LIMIT: f64 = 3.0;
/// ...and significantly: a z (Wilson-Hilferty) of at least this.
pub const DISPERSION_Z: f64 = 3.72;
/// A constant rate's schedule lag p99 must exceed this (us)...
pub const GRID_ERROR_FLOOR_US: f64 = 10_000.0;
/// The start and the rest need this many responses to be judged.
pub const MIN_FIRST_RESPONSES: u64 = 20;

/// What makes a run untrustworthy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CauseCode {
    /// pace fell behind its plan, or never sent some of it.
    ScheduleNotKept,
    /// A closed loop's slots waited for pace.
    SlotsHeldIdle,
    /// The sends did not arrive as the plan has them.
    ArrivalsOffPlan,
    /// Latency or requests in flight kept growing through the periods.
    NotStationary,
    /// The start of the run was slower than the rest.
    WarmupTooShort,
}

impl CauseCode {
    /// The code in the report and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            CauseCode::ScheduleNotKept => "schedule_not_kept",
            CauseCode::SlotsHeldIdle => "slots_held_idle",
            CauseCode::ArrivalsOffPlan => "arrivals_off_plan",
            CauseCode::NotStationary => "not_stationary",
            CauseCode::WarmupTooShort => "warmup_too_short",
        }
    }

    /// In a few words, for a headline.
    pub fn short(self) -> &'static str {
        match self {
            CauseCode::ScheduleNotKept => "schedule not kept",
            CauseCode::SlotsHeldIdle => "connections held idle",
            CauseCode::ArrivalsOffPlan => "arrivals off the plan",
            CauseCode::NotStationary => "latency not stationary",
            CauseCode::WarmupTooShort => "warm-up too short",
        }
    }
}

/// One cause, with the figures it rests on (times in microseconds).
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    pub code: CauseCode,
    pub message: String,
    pub figures: Vec<(&'static str, Value)>,
}

/// The verdict on a run: trusted when nothing is wrong.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Validity {
    pub causes: Vec<Cause>,
}

impl Validity {
    pub fn trusted(&self) -> bool {
        self.causes.is_empty()
    }

    /// `the schedule was not kept (...); latency was not stationary (...)`.
    pub fn why(&self) -> String {
        let causes: Vec<&str> = self.causes.iter().map(|c| c.message.as_str()).collect();
        causes.join("; ")
    }
}

/// `{"trusted": false, "causes": [{"code", "message", "figures"}]}`.
impl Serialize for Validity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("trusted", &self.trusted())?;
        map.serialize_entry("causes", &self.causes)?;
        map.end()
    }
}

impl Serialize for Cause {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("code", self.code.name())?;
        map.serialize_entry("message", &self.message)?;
        map.serialize_entry("figures", &Figures(&self.figures))?;
        map.end()
    }
}

/// The verdict on the run `run` describes (see the module's rules).
pub fn judge(run: &Description, result: &RunResult) -> Validity {
    let mut causes = Vec::new();
    causes.extend(schedule(run, result));
    causes.extend(arrivals(run, result));
    let periods = &result.course.periods;
    causes.extend(stationary(result.course.period, periods));
    causes.extend(warmup(run, result.course.period, periods));
    Validity { causes }
}

/// Writes `Validity: not trusted: ...` when the run is not to be trusted.
pub fn write_line(out: &mut dyn Write, validity: &Validity) -> io::Result<()> {
    if validity.trusted() {
        return Ok(());
    }
    let causes: Vec<String> =
        validity.causes.iter().map(|c| format!("{} [{}]", c.message, c.code.name())).collect();
    writeln!(out, "Validity: not trusted: {}", causes.join("; "))
}

/// `--strict`: the exit code of a run that ended normally and met its
/// objectives, [`crate::error::UNTRUSTED`] when it cannot be trusted.
/// With `-e` (`json`: stdout carries only JSON) the causes are also said
/// on stderr.
pub fn gate(validity: &Validity, json: bool) -> i32 {
    if validity.trusted() {
        return 0;
    }
    if json {
        eprintln!("pace: not trusted: {}", validity.why());
    }
    crate::error::UNTRUSTED
}

/// The warnings that say pace did not offer the load asked for.
fn schedule(run: &Description, result: &RunResult) -> Option<Cause> {
    let paced = run.plan().is_some();
    let named: &[Code] = match paced {
        true => &[Code::GeneratorCpu, Code::TooFewConnections, Code::Unsent],
        false => &[Code::GeneratorHeldSlots],
    };
    let codes: Vec<&str> = diagnose::diagnose(run, result)
        .iter()
        .filter(|d| named.contains(&d.code))
        .map(|d| d.code.name())
        .collect();
    if codes.is_empty() {
        return None;
    }
    let warnings = if codes.len() == 1 { "warning" } else { "warnings" };
    let (code, what) = match paced {
        true => (CauseCode::ScheduleNotKept, "the schedule was not kept"),
        false => (CauseCode::SlotsHeldIdle, "pace held its connections idle"),
    };
    Some(Cause {
        code,
        message: format!("{what} (see the {warnings}: {})", codes.join(", ")),
        figures: vec![("warnings", json!(codes))],
    })
}

/// The arrivals against the plan: a Poisson plan's dispersion, a
/// constant rate's grid error.
fn arrivals(run: &Description, result: &RunResult) -> Option<Cause> {
    let plan = run.plan()?;
    match plan.arrival {
        Arrival::Poisson => dispersion(&result.course),
        Arrival::Constant => grid_error(run, result),
    }
}

/// One window of the arrivals' test: its periods and its sums.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Window {
    first: usize,
    periods: usize,
    chi2: f64,
    dof: u64,
}

impl Window {
    fn dispersion(&self) -> f64 {
        self.chi2 / self.dof as f64
    }

    /// The chi-square as a standard normal score (Wilson-Hilferty).
    fn z(&self) -> f64 {
        let k = self.dof as f64;
        let spread = 2.0 / (9.0 * k);
        ((self.chi2 / k).cbrt() - (1.0 - spread)) / spread.sqrt()
    }

    fn fails(&self) -> bool {
        self.dispersion() >= DISPERSION_LIMIT && self.z() >= DISPERSION_Z
    }
}

/// The course's periods pooled into windows of at least [`WINDOW_DOF`]
/// (what is left at the end joins the last window).
fn windows(periods: &[CoursePeriod]) -> Vec<Window> {
    let mut windows: Vec<Window> = Vec::new();
    let mut open: Option<Window> = None;
    for (index, period) in periods.iter().enumerate() {
        let window = open.get_or_insert(Window { first: index, periods: 0, chi2: 0.0, dof: 0 });
        window.periods = index + 1 - window.first;
        window.chi2 += period.arrival_chi2;
        window.dof += period.arrival_dof;
        if window.dof >= WINDOW_DOF {
            windows.extend(open.take());
        }
    }
    match (open, windows.last_mut()) {
        (Some(rest), Some(last)) => {
            last.periods += rest.periods;
            last.chi2 += rest.chi2;
            last.dof += rest.dof;
        }
        (Some(rest), None) if rest.dof > 0 => windows.push(rest),
        _ => {}
    }
    windows
}

/// A Poisson plan's arrivals: the window that varied most, if it fails.
fn dispersion(course: &course::Course) -> Option<Cause> {
    let windows = windows(&course.periods);
    let worst = windows
        .iter()
        .filter(|w| w.fails())
        .max_by(|a, b| a.dispersion().total_cmp(&b.dispersion()))?;
    let from = course.period * worst.first as u32;
    let to = from + course.period * worst.periods as u32;
    let dispersion = worst.dispersion();
    Some(Cause {
        code: CauseCode::ArrivalsOffPlan,
        message: format!(
            "arrivals did not match the plan: from {} to {} the sends per {} ms slot varied \
             {:.1} times as much as Poisson arrivals do (sends held up, then sent together)",
            seconds(from),
            seconds(to),
            course::SLOT.as_millis(),
            dispersion,
        ),
        figures: vec![
            ("dispersion", json!(round2(dispersion))),
            ("z", json!(round2(worst.z()))),
            ("degrees_of_freedom", json!(worst.dof)),
            ("from_s", json!(from.as_secs_f64())),
            ("to_s", json!(to.as_secs_f64())),
        ],
    })
}

/// A constant rate's arrivals: the grid error against its bound.
fn grid_error(run: &Description, result: &RunResult) -> Option<Cause> {
    let lag = &result.total.lag;
    let rate = run.target_rate().filter(|rate| *rate > 0.0)?;
    if lag.is_empty() {
        return None;
    }
    let p99_us = value_at_percentile(lag, 99.0);
    let bound_us = GRID_ERROR_FLOOR_US.max(1e6 / rate);
    if (p99_us as f64) <= bound_us {
        return None;
    }
    Some(Cause {
        code: CauseCode::ArrivalsOffPlan,
        message: format!(
            "arrivals did not match the plan: 1% of the sends went {} or more after their time \
             on the plan's even grid (schedule lag p99; the bound is {})",
            format_time_us(p99_us as f64),
            format_time_us(bound_us),
        ),
        figures: vec![("lag_p99_us", json!(p99_us)), ("bound_us", json!(bound_us.round()))],
    })
}

/// Latency and requests in flight through the course's periods.
fn stationary(period: Duration, periods: &[CoursePeriod]) -> Option<Cause> {
    let judged = stationarity::judge(periods);
    if judged.holds() {
        return None;
    }
    let (measure, from, to) = match judged {
        Stationarity::LatencyGrowing { from_us, to_us } => ("latency_p50_us", from_us, to_us),
        Stationarity::InFlightGrowing { from, to } => ("in_flight", from, to),
        // Too few periods say nothing of a run.
        Stationarity::Stationary | Stationarity::TooFewPeriods(_) => return None,
    };
    Some(Cause {
        code: CauseCode::NotStationary,
        message: format!(
            "latency was not stationary across the {} periods of {}: {}",
            periods.len(),
            seconds(period),
            judged.why()
        ),
        figures: vec![
            ("measure", json!(measure)),
            ("first_third", json!(round2(from))),
            ("last_third", json!(round2(to))),
            ("periods", json!(periods.len())),
            ("period_s", json!(period.as_secs_f64())),
        ],
    })
}

/// The start of the run against the rest.
fn warmup(run: &Description, period: Duration, periods: &[CoursePeriod]) -> Option<Cause> {
    // The start: the first periods, until they hold enough responses (a
    // server that stalled at the start answers later than it was sent to).
    let mut start = course::histogram();
    let mut taken = 0;
    for period in periods {
        start.add(&period.corrected).expect("auto-resizing histogram");
        taken += 1;
        if start.len() >= MIN_FIRST_RESPONSES {
            break;
        }
    }
    let rest = &periods[taken..];
    if start.len() < MIN_FIRST_RESPONSES || rest.len() < 2 || taken * 3 > periods.len() {
        return None;
    }
    let mut after = course::histogram();
    for period in rest {
        after.add(&period.corrected).expect("auto-resizing histogram");
    }
    if after.len() < MIN_FIRST_RESPONSES {
        return None;
    }
    let start_us = value_at_percentile(&start, 50.0) as f64;
    let rest_us = value_at_percentile(&after, 50.0) as f64;
    let slower = start_us >= stationarity::GROWTH * rest_us
        && start_us - rest_us >= stationarity::LATENCY_FLOOR_US;
    if !slower {
        return None;
    }
    let advice = match run.warmup.is_zero() {
        true => "--warmup would leave such a start out",
        false => "a longer --warmup would leave it out",
    };
    let length = period * taken as u32;
    let first = match taken {
        1 => format!("the first period ({})", seconds(length)),
        n => format!("the first {n} periods ({})", seconds(length)),
    };
    Some(Cause {
        code: CauseCode::WarmupTooShort,
        message: format!(
            "the warm-up was too short: {first} answered slower than the rest, p50 {} against \
             {} ({advice})",
            format_time_us(start_us),
            format_time_us(rest_us),
        ),
        figures: vec![
            ("start_p50_us", json!(start_us)),
            ("rest_p50_us", json!(rest_us)),
            ("start_s", json!(length.as_secs_f64())),
        ],
    })
}

/// `0.25s`, `12.00s`.
fn seconds(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BenchConfig, Mode};
    use crate::plan::PlanSpec;
    use crate::stats::course::Course;
    use crate::stats::{Outcome, Stats};
    use crate::target::Target;

    const MS: Duration = Duration::from_millis(1);

    /// `-R 1000` for 2 s, with `arrival`.
    fn paced(arrival: Arrival) -> Description {
        let spec = PlanSpec { arrival, ..PlanSpec::constant(1000.0) };
        Description::of(&BenchConfig {
            connections: 10,
            threads: 1,
            duration: Some(Duration::from_secs(2)),
            mode: Mode::Paced(spec),
            ..BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap())
        })
    }

    /// 2000 requests answered in 1 ms, sent 20 us late.
    fn kept() -> Stats {
        let mut stats = Stats::new(3);
        for _ in 0..2000 {
            stats.response(Outcome::Http(200));
            stats.corrected.record(1020).unwrap();
            stats.uncorrected.record(1000).unwrap();
            stats.lag.record(20).unwrap();
        }
        stats
    }

    /// A period of 100 ms: 100 requests answered in `latency_us`, and
    /// of the arrivals' test `chi2` on 9 degrees of freedom.
    fn period(latency_us: u64, chi2: f64) -> CoursePeriod {
        let mut period = CoursePeriod { sent: 100, ended: 100, ..CoursePeriod::default() };
        period.corrected.record_n(latency_us, 100).unwrap();
        (period.arrival_chi2, period.arrival_dof) = (chi2, 9);
        period
    }

    fn result(periods: Vec<CoursePeriod>) -> RunResult {
        let mut result = RunResult::measured(kept(), Duration::from_secs(2));
        result.course = Course { period: 100 * MS, periods };
        result
    }

    fn codes(run: &Description, result: &RunResult) -> Vec<&'static str> {
        judge(run, result).causes.iter().map(|c| c.code.name()).collect()
    }

    #[test]
    fn a_kept_plan_is_trusted() {
        let steady: Vec<CoursePeriod> = (0..20).map(|_| period(1020, 9.0)).collect();
        let validity = judge(&paced(Arrival::Poisson), &result(steady.clone()));
        assert!(validity.trusted());
        assert_eq!(gate(&validity, false), 0);
        assert_eq!(
            serde_json::to_value(&validity).unwrap(),
            json!({"trusted": true, "causes": []})
        );
        let mut out = Vec::new();
        write_line(&mut out, &validity).unwrap();
        assert!(out.is_empty(), "no line for a trusted run");
        // A Poisson plan's dispersion of 2.5 is noise enough to pass.
        let noisy: Vec<CoursePeriod> = (0..20).map(|_| period(1020, 22.5)).collect();
        assert!(judge(&paced(Arrival::Poisson), &result(noisy)).trusted());
        // Without a course (an earlier pace's file), what needs none.
        assert!(judge(&paced(Arrival::Poisson), &result(Vec::new())).trusted());
    }

    #[test]
    fn poisson_arrivals_held_up_are_not_the_plan() {
        // One period's sends held up and sent at once: a chi-square of
        // 1100 (the rest's is as Poisson's), on the run's one window (the
        // second second's 81 degrees join the first's 99).
        let mut periods: Vec<CoursePeriod> = (0..20).map(|_| period(1020, 9.0)).collect();
        periods[13] = period(1020, 1100.0);
        let result = result(periods);
        let run = paced(Arrival::Poisson);
        let validity = judge(&run, &result);
        assert_eq!(codes(&run, &result), ["arrivals_off_plan"]);
        let cause = &validity.causes[0];
        assert_eq!(
            cause.message,
            "arrivals did not match the plan: from 0.00s to 2.00s the sends per 10 ms slot varied \
             7.1 times as much as Poisson arrivals do (sends held up, then sent together)"
        );
        assert_eq!(cause.figures[0], ("dispersion", json!(7.06)));
        assert_eq!(gate(&validity, false), crate::error::UNTRUSTED);
        let mut out = Vec::new();
        write_line(&mut out, &validity).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(line.starts_with("Validity: not trusted: arrivals did not match the plan: from"));
        assert!(line.ends_with(" (sends held up, then sent together) [arrivals_off_plan]\n"));
        // A constant rate is judged on its schedule lag instead.
        assert!(judge(&paced(Arrival::Constant), &result).trusted());
    }

    #[test]
    fn dispersion_needs_its_size_and_its_significance() {
        let window = |chi2: f64, dof: u64| Window { first: 0, periods: 1, chi2, dof };
        // Three times Poisson's over a second: far beyond chance.
        assert!(window(300.0, 100).fails());
        // Significant, but within what a shared machine's hiccups give.
        assert!(!window(2.9 * 1000.0, 1000).fails());
        // Large, but on too few slots to mean anything.
        assert!(!window(12.0, 2).fails());
        let z = window(100.0, 100).z();
        assert!(z.abs() < 0.2, "{z}");
    }

    #[test]
    fn periods_pool_into_windows_of_a_second() {
        let periods: Vec<CoursePeriod> = (0..25).map(|_| period(1020, 9.0)).collect();
        let windows = windows(&periods);
        // 11 periods of 9 degrees make 99; the last three join the second.
        let spans: Vec<(usize, usize, u64)> =
            windows.iter().map(|w| (w.first, w.periods, w.dof)).collect();
        assert_eq!(spans, [(0, 11, 99), (11, 14, 126)]);
        assert_eq!(super::windows(&periods[..3]).len(), 1);
        assert!(super::windows(&[]).is_empty());
    }

    #[test]
    fn a_constant_rate_late_on_its_grid_is_not_the_plan() {
        let run = paced(Arrival::Constant);
        let mut stats = kept();
        stats.lag.record_n(45_000, 40).unwrap();
        let late = RunResult::measured(stats, Duration::from_secs(2));
        let validity = judge(&run, &late);
        let cause = validity.causes.iter().find(|c| c.code == CauseCode::ArrivalsOffPlan);
        let cause = cause.expect("the grid error");
        assert!(cause.message.contains("1% of the sends went 45."), "{}", cause.message);
        assert!(cause.message.ends_with("(schedule lag p99; the bound is 10.00ms)"));
        // A few milliseconds of a shared machine are no grid error.
        let mut stats = kept();
        stats.lag.record_n(4_000, 40).unwrap();
        assert!(judge(&run, &RunResult::measured(stats, Duration::from_secs(2))).trusted());
    }

    #[test]
    fn a_schedule_not_kept_names_its_warnings() {
        let mut stats = kept();
        stats.errors.unsent = 5;
        let result = RunResult::measured(stats, Duration::from_secs(2));
        let validity = judge(&paced(Arrival::Constant), &result);
        assert_eq!(validity.causes.len(), 1);
        assert_eq!(
            validity.causes[0].message,
            "the schedule was not kept (see the warning: unsent)"
        );
        assert_eq!(validity.causes[0].figures, [("warnings", json!(["unsent"]))]);
    }

    #[test]
    fn latency_that_keeps_growing_is_not_stationary() {
        let growing: Vec<CoursePeriod> = (0..20).map(|i| period(1000 + 2000 * i, 9.0)).collect();
        let result = result(growing);
        let run = paced(Arrival::Poisson);
        assert_eq!(codes(&run, &result), ["not_stationary"]);
        let cause = &judge(&run, &result).causes[0];
        assert!(
            cause.message.starts_with(
                "latency was not stationary across the 20 periods of 0.10s: latency kept \
                 growing, p50 "
            ),
            "{}",
            cause.message
        );
        // The closed loop is judged on its periods too.
        let closed = Description { mode: Mode::ClosedLoop, ..run };
        assert_eq!(codes(&closed, &result), ["not_stationary"]);
    }

    #[test]
    fn a_slow_start_is_a_warmup_too_short() {
        let mut periods: Vec<CoursePeriod> = (0..20).map(|_| period(1020, 9.0)).collect();
        periods[0] = period(8000, 9.0);
        let run = paced(Arrival::Poisson);
        let validity = judge(&run, &result(periods.clone()));
        assert_eq!(validity.causes.len(), 1);
        assert_eq!(
            validity.causes[0].message,
            "the warm-up was too short: the first period (0.10s) answered slower than the rest, \
             p50 8.19ms against 1.02ms (--warmup would leave such a start out)"
        );
        // A server that stalled at the start answers later: the start is
        // the first periods up to enough responses.
        periods[0] = CoursePeriod::default();
        periods[1] = CoursePeriod::default();
        periods[2] = period(300_000, 9.0);
        let validity = judge(&run, &result(periods.clone()));
        assert!(validity.causes[0].message.contains("the first 3 periods (0.30s) answered"));
        // Slower by less than a millisecond, or by less than twice: no.
        periods[2] = period(1900, 9.0);
        assert!(judge(&run, &result(periods.clone())).trusted());
        periods[2] = period(30_000, 9.0);
        for period in &mut periods[3..] {
            *period = self::period(20_000, 9.0);
        }
        assert!(judge(&run, &result(periods)).trusted());
    }
}
