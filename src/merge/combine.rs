//! Several saved runs made one: the shards of one plan, or runs that have
//! nothing to do with each other (two servers, two days). Histograms are
//! added count by count, which is exact; counts and bytes are summed; the
//! rates are over the union of the runs' time windows. Inputs that cannot
//! be added without a wrong result are refused with the reason.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::saved::{SavedRun, MAX_RUNS};
use crate::config::{Mode, Shard};
use crate::description::reached::Reached;
use crate::description::Description;
use crate::plan::PlanSpec;
use crate::stats::course::{self, Course, CoursePeriod};
use crate::stats::{Interval, RunResult, Stats};

/// Runs whose starts differ by less than this are on one time line (the
/// JSON's Unix seconds carry about a microsecond).
const ALIGNMENT_SLACK: Duration = Duration::from_millis(1);

/// The combined run, ready for the reports.
pub struct Merged {
    pub description: Description,
    pub result: RunResult,
    /// The `-p` periods of the runs added period by period (none when the
    /// runs had none, or their periods do not line up).
    pub periods: Vec<Interval>,
    /// What the reader should know about the merge (missing shards,
    /// periods left out): printed on stderr.
    pub notes: Vec<String>,
    /// How the inputs relate.
    pub kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Shards `--shard I/N` of one plan: `present` of `count`.
    Shards { present: usize, count: usize },
    /// Independent runs, each whole.
    Runs,
}

/// Combines `runs` (at least one).
pub fn combine(runs: &[SavedRun]) -> Result<Merged, String> {
    let first = runs.first().ok_or("nothing to merge")?;
    if runs.len() > MAX_RUNS {
        return Err(format!(
            "{} runs: one merge adds up at most {MAX_RUNS} (their counts would overflow)",
            runs.len()
        ));
    }
    let mut notes: Vec<String> = runs.iter().flat_map(|run| run.caveats.clone()).collect();
    same_everywhere(runs, "-D (significant digits)", |s| s.digits)?;
    same_everywhere(runs, "mode (closed loop or -R)", |s| s.plan().is_some())?;
    let kind = kind(runs, &mut notes)?;
    notes.extend(timing_note(runs, kind));
    if reached_together(runs).is_none() {
        notes.push(
            "the runs reached their servers differently (origins, proxy, --connect-to, \
             --unix-socket or -4/-6): the header says nothing of how"
                .into(),
        );
    }
    let description = match kind {
        Kind::Shards { present, count } => shard_description(runs, present, count),
        Kind::Runs => runs_description(runs, &mut notes),
    };
    let mut total = Stats::new(first.description.digits);
    for run in runs {
        total.merge(&run.result.total);
    }
    let starts = runs.iter().map(|r| r.result.measured_from);
    let ends = runs.iter().map(|r| r.result.measured_from + r.result.runtime);
    let measured_from = starts.min().unwrap_or(first.result.measured_from);
    let ended = ends.max().unwrap_or(measured_from);
    let (series, series_interval) = series(runs, &mut notes);
    let result = RunResult {
        total,
        threads: runs.iter().flat_map(|r| r.result.threads.iter().copied()).collect(),
        runtime: ended.duration_since(measured_from).unwrap_or_default(),
        interrupted: runs.iter().find_map(|r| r.result.interrupted),
        script_stopped: runs.iter().all(|r| r.result.script_stopped),
        series,
        series_interval,
        measured_from,
        course: Course::default(),
    };
    let result = RunResult { course: course(runs, &mut notes), ..result };
    let periods = periods(runs, &mut notes);
    Ok(Merged { description, result, periods, notes, kind })
}

/// Fails unless `field` is the same in every run.
fn same_everywhere<T: PartialEq + std::fmt::Debug>(
    runs: &[SavedRun],
    what: &str,
    field: impl Fn(&Description) -> T,
) -> Result<(), String> {
    let first = &runs[0];
    match runs.iter().find(|r| field(&r.description) != field(&first.description)) {
        None => Ok(()),
        Some(other) => Err(format!(
            "{} and {} differ in {what} ({:?} and {:?}): their results cannot be added exactly",
            first.source,
            other.source,
            field(&first.description),
            field(&other.description)
        )),
    }
}

/// Shards of one plan, or independent runs; duplicates and mixtures are
/// refused, missing shards noted.
fn kind(runs: &[SavedRun], notes: &mut Vec<String>) -> Result<Kind, String> {
    let sharded = runs.iter().filter(|r| r.description.shard.count > 1).count();
    if sharded == 0 {
        refuse_the_same_run_twice(runs)?;
        return Ok(Kind::Runs);
    }
    if sharded < runs.len() {
        let whole = runs.iter().find(|r| r.description.shard.count == 1).unwrap();
        let shard = runs.iter().find(|r| r.description.shard.count > 1).unwrap();
        return Err(format!(
            "{} is a shard of a plan but {} is a whole run: merge the shards of one plan, or \
             whole runs",
            shard.source, whole.source
        ));
    }
    same_everywhere(runs, "the shard count (--shard I/N)", |s| s.shard.count)?;
    let mut seen: BTreeMap<usize, &str> = BTreeMap::new();
    for run in runs {
        if let Some(earlier) = seen.insert(run.description.shard.index, &run.source) {
            let Shard { index, count } = run.description.shard;
            return Err(format!(
                "shard {index}/{count} is there twice: {earlier} and {}",
                run.source
            ));
        }
    }
    // One plan: what decides which request is sent when must agree.
    same_everywhere(runs, "the plan (-R, --stages, --arrival)", |s| s.plan().cloned())?;
    same_everywhere(runs, "--seed", |s| s.seed)?;
    same_everywhere(runs, "--warmup", |s| s.warmup)?;
    same_everywhere(runs, "the duration (-d, -n)", |s| s.duration)?;
    same_everywhere(runs, "-n", |s| s.requests)?;
    same_everywhere(runs, "-c", |s| s.connections)?;
    same_everywhere(runs, "the protocol (--http2, --streams)", |s| (s.protocol, s.streams))?;
    let count = runs[0].description.shard.count;
    let missing: Vec<String> =
        (0..count).filter(|i| !seen.contains_key(i)).map(|i| format!("{i}/{count}")).collect();
    if !missing.is_empty() {
        notes.push(format!(
            "shard{} {} missing: the merged result is {} of the {count} shards, and its target \
             rate theirs",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", "),
            runs.len()
        ));
    }
    Ok(Kind::Shards { present: runs.len(), count })
}

/// What the merge should say of when the runs sent: that they never sent
/// together (their sending windows, warm-up included, have no moment in
/// common: the server never had their load at once, whatever the header
/// says of one plan), or that shards did not share one `--start-at`.
fn timing_note(runs: &[SavedRun], kind: Kind) -> Option<String> {
    let what = match kind {
        Kind::Shards { .. } => "shards",
        Kind::Runs => "runs",
    };
    if runs.len() > 1 && !sent_together(runs) {
        let first = runs.iter().map(sending_window).map(|(from, _)| from).min()?;
        let windows: Vec<String> = (runs.iter())
            .map(|run| {
                let (from, to) = sending_window(run);
                let at = |t: SystemTime| t.duration_since(first).unwrap_or_default().as_secs_f64();
                format!("{} from {:.2}s to {:.2}s", run.source, at(from), at(to))
            })
            .collect();
        let never = match kind {
            Kind::Shards { .. } => "the server never saw the plan's rate",
            Kind::Runs => "the server never had their load at once",
        };
        return Some(format!(
            "the {what} did not send at the same time: their sending windows do not overlap \
             ({}, from the first start); {never}, and the rates are over the union of their \
             windows, the gaps included (give them one --start-at)",
            windows.join(", ")
        ));
    }
    let starts_differ = runs.iter().any(|r| r.description.start_at != runs[0].description.start_at);
    (matches!(kind, Kind::Shards { .. }) && starts_differ).then(|| {
        "the shards did not share one --start-at: the server did not see one schedule, and the \
         rates are over the union of their time windows"
            .to_string()
    })
}

/// When a run sent: from the start of its warm-up to the end of its
/// measured part, by the wall clock.
fn sending_window(run: &SavedRun) -> (SystemTime, SystemTime) {
    (plan_zero(run), run.result.measured_from + run.result.runtime)
}

/// Some moment lies in every run's sending window (for intervals, the
/// same as every two overlapping).
fn sent_together(runs: &[SavedRun]) -> bool {
    let windows = runs.iter().map(sending_window);
    let latest_start = windows.clone().map(|(from, _)| from).max();
    let earliest_end = windows.map(|(_, to)| to).min();
    latest_start < earliest_end
}

/// The same file given twice would count everything twice.
fn refuse_the_same_run_twice(runs: &[SavedRun]) -> Result<(), String> {
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            let same = a.result.measured_from == b.result.measured_from
                && a.result.runtime == b.result.runtime
                && a.result.total.requests == b.result.total.requests
                && a.result.total.corrected == b.result.total.corrected;
            if same {
                return Err(format!("{} and {} are the same run", a.source, b.source));
            }
        }
    }
    Ok(())
}

/// The description of shards of one plan: the plan's, for the shards
/// there.
fn shard_description(runs: &[SavedRun], present: usize, count: usize) -> Description {
    let share = present as f64 / count as f64;
    Description {
        // The shards there send their share of the plan.
        mode: paced(runs[0].description.plan().map(|plan| scaled(plan, share))),
        ..added(runs)
    }
}

/// The description of independent runs: their sum where that has a
/// meaning.
fn runs_description(runs: &[SavedRun], notes: &mut Vec<String>) -> Description {
    let first = &runs[0].description;
    let one_plan = common(runs, |s| (s.plan().cloned(), s.warmup, s.duration, s.seed)).is_some();
    let k = runs.len() as f64;
    let (plan, warmup, duration) = match first.plan() {
        None => (None, Duration::ZERO, common(runs, |s| s.duration).flatten()),
        // The same plan k times over is that plan at k times the rate.
        Some(plan) if one_plan => (Some(scaled(plan, k)), first.warmup, first.duration),
        Some(_) => {
            notes.push(
                "the runs had different plans: the target rate is the sum of their mean rates, \
                 and stages are not shown"
                    .into(),
            );
            let rate = runs.iter().map(|r| r.description.target_rate().unwrap_or(0.0)).sum();
            let longest = runs.iter().filter_map(|r| r.description.duration).max();
            (Some(PlanSpec::constant(rate)), Duration::ZERO, longest)
        }
    };
    if common(runs, |s| (s.protocol, s.streams, s.grpc.clone())).is_none() {
        notes.push(
            "the runs spoke different protocols (HTTP/1.1, HTTP/2, --streams, --grpc): the header names \
             the first's"
                .into(),
        );
    }
    let limits: Option<Vec<u64>> = runs.iter().map(|r| r.description.requests).collect();
    Description {
        mode: paced(plan),
        warmup,
        duration,
        requests: limits.map(|limits| limits.iter().sum()),
        ..added(runs)
    }
}

/// What adds up whatever the inputs are: threads and connections summed,
/// the longest timeout, one start when all had it; the rest the first's.
fn added(runs: &[SavedRun]) -> Description {
    let first = &runs[0].description;
    let connections = runs.iter().map(|r| r.description.instance_connections).sum();
    Description {
        url: urls(runs),
        threads: runs.iter().map(|r| r.description.threads).sum(),
        connections,
        instance_connections: connections,
        timeout: runs.iter().map(|r| r.description.timeout).max().unwrap_or(first.timeout),
        shard: Shard::WHOLE,
        start_at: common(runs, |s| s.start_at).flatten(),
        reached: reached_together(runs).unwrap_or_default(),
        // What the strictest server allowed.
        allowed_streams: runs.iter().filter_map(|r| r.description.allowed_streams).min(),
        // Several command lines made it.
        provenance: None,
        ..first.clone()
    }
}

/// How the runs reached their servers, when they all did it the same way:
/// their connections added up per origin.
fn reached_together(runs: &[SavedRun]) -> Option<Reached> {
    let all: Vec<&Reached> = runs.iter().map(|run| &run.description.reached).collect();
    Reached::together(&all)
}

/// The mode of a run with this plan (None: the closed loop).
fn paced(plan: Option<PlanSpec>) -> Mode {
    plan.map_or(Mode::ClosedLoop, Mode::Paced)
}

/// `plan` at `factor` times its rates.
fn scaled(plan: &PlanSpec, factor: f64) -> PlanSpec {
    let mut plan = plan.clone();
    plan.rate *= factor;
    for stage in &mut plan.stages {
        stage.rate *= factor;
    }
    plan
}

/// `field` when every run has the same, else None.
fn common<T: PartialEq>(runs: &[SavedRun], field: impl Fn(&Description) -> T) -> Option<T> {
    let first = field(&runs[0].description);
    runs.iter().all(|r| field(&r.description) == first).then_some(first)
}

/// The URLs of the runs, each once, in order.
fn urls(runs: &[SavedRun]) -> String {
    let mut urls: Vec<&str> = Vec::new();
    for run in runs {
        if !urls.contains(&run.description.url.as_str()) {
            urls.push(&run.description.url);
        }
    }
    urls.join(", ")
}

/// Where each run's plan started, by the wall clock.
fn plan_zero(run: &SavedRun) -> SystemTime {
    run.result.measured_from.checked_sub(run.description.warmup).unwrap_or(run.result.measured_from)
}

/// How many `slot`s after `zero` each run's plan started, when every run
/// starts on that grid (within [`ALIGNMENT_SLACK`]); None otherwise.
fn slot_offsets(runs: &[SavedRun], slot: Duration) -> Option<(SystemTime, Vec<u64>)> {
    offsets_from(runs, slot, plan_zero)
}

/// [`slot_offsets`] from the start of each run's `start` (its plan's, or
/// its measured part's).
fn offsets_from(
    runs: &[SavedRun],
    slot: Duration,
    start: fn(&SavedRun) -> SystemTime,
) -> Option<(SystemTime, Vec<u64>)> {
    let zero = runs.iter().map(start).min()?;
    let slot_ns = slot.as_nanos();
    if slot_ns == 0 {
        return None;
    }
    let offsets = runs.iter().map(|run| {
        let after = start(run).duration_since(zero).unwrap_or_default().as_nanos();
        let slots = (after + slot_ns / 2) / slot_ns;
        let off = after.abs_diff(slots * slot_ns);
        (off <= ALIGNMENT_SLACK.as_nanos()).then_some(slots as u64)
    });
    Some((zero, offsets.collect::<Option<Vec<u64>>>()?))
}

/// The time series of the runs, one row per thread, on one time line;
/// none unless every run has one with the same slot, lined up.
fn series(runs: &[SavedRun], notes: &mut Vec<String>) -> (Vec<Vec<u64>>, Duration) {
    let interval = runs[0].result.series_interval;
    let with_series = runs.iter().filter(|r| !r.result.series.is_empty()).count();
    if with_series == 0 {
        return (Vec::new(), interval);
    }
    let lined_up = with_series == runs.len()
        && runs.iter().all(|r| r.result.series_interval == interval)
        && slot_offsets(runs, interval).is_some();
    let Some((_, offsets)) = slot_offsets(runs, interval).filter(|_| lined_up) else {
        notes.push(
            "time series left out: not every run has one with the same slot, started on a \
             common grid (give the runs one --start-at)"
                .into(),
        );
        return (Vec::new(), interval);
    };
    let mut rows = Vec::new();
    for (run, offset) in runs.iter().zip(offsets) {
        for row in &run.result.series {
            let mut shifted = vec![0; offset as usize];
            shifted.extend_from_slice(row);
            rows.push(shifted);
        }
    }
    (rows, interval)
}

/// The runs' courses added period by period on one time line (the
/// validity of the merged run is judged on it): none unless every run has
/// one of the same period, lined up. The arrivals' chi-squares and their
/// degrees of freedom add up: of shards, the pooled test of each shard's
/// sends (each shard's stripe of a Poisson plan is more regular than the
/// plan, so a kept plan stays below what a Poisson process gives).
fn course(runs: &[SavedRun], notes: &mut Vec<String>) -> Course {
    let courses: Vec<&Course> = runs.iter().map(|r| &r.result.course).collect();
    if courses.iter().all(|c| c.periods.is_empty()) {
        return Course::default();
    }
    let period = courses[0].period;
    let alike = courses.iter().all(|c| !c.periods.is_empty() && c.period == period);
    let offsets = offsets_from(runs, period, |run| run.result.measured_from).filter(|_| alike);
    let span = offsets.as_ref().and_then(|(_, offsets)| {
        let ends = courses.iter().zip(offsets).map(|(c, &at)| at + c.periods.len() as u64);
        ends.max().filter(|&end| end <= course::MAX_PERIODS as u64)
    });
    let (Some((_, offsets)), Some(span)) = (offsets, span) else {
        notes.push(
            "the validity's checks over periods left out: not every run kept periods of one \
             length, started on a common grid (give the runs one --start-at)"
                .into(),
        );
        return Course::default();
    };
    let mut periods = vec![CoursePeriod::default(); span as usize];
    for (course, offset) in courses.iter().zip(offsets) {
        for (index, period) in course.periods.iter().enumerate() {
            periods[offset as usize + index].merge(period);
        }
    }
    Course { period, periods }
}

/// The runs' `-p` periods added period by period on one time line; none
/// unless every run has periods of one length that line up.
fn periods(runs: &[SavedRun], notes: &mut Vec<String>) -> Vec<Interval> {
    let with_periods = runs.iter().filter(|r| !r.periods.is_empty()).count();
    if with_periods == 0 {
        return Vec::new();
    }
    let length = runs[0].periods.first().map_or(Duration::ZERO, |p| p.length);
    // The last period of a run may be shorter; the others give the length.
    let same_length = runs.iter().all(|r| {
        let full = &r.periods[..r.periods.len().saturating_sub(1)];
        !r.periods.is_empty() && full.iter().chain(r.periods.first()).all(|p| p.length == length)
    });
    let offsets = slot_offsets(runs, length).filter(|_| with_periods == runs.len() && same_length);
    let Some((_, offsets)) = offsets else {
        notes.push(
            "periods left out: not every run has -p periods of one length, started on a common \
             grid (give the runs the same -p and one --start-at)"
                .into(),
        );
        return Vec::new();
    };
    let mut merged: BTreeMap<u64, Interval> = BTreeMap::new();
    for (run, offset) in runs.iter().zip(offsets) {
        for period in &run.periods {
            let index = period.index + offset;
            let slot = merged.entry(index).or_insert_with(|| Interval {
                index,
                start: Duration::from_nanos((length.as_nanos() * u128::from(index)) as u64),
                length: Duration::ZERO,
                stats: Stats::new(run.description.digits),
            });
            slot.length = slot.length.max(period.length);
            slot.stats.merge(&period.stats);
        }
    }
    merged.into_values().collect()
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::protocol::Protocol;
    use crate::stats::Outcome;
    use crate::target::Scheme;

    const T0: u64 = 1_795_428_000;

    /// A run of `latencies` (us) measured from T0 + `from_ms` for
    /// `runtime_ms`, shard `index` of `count` of a 300/s plan (closed
    /// loop when `paced` is false).
    fn run(source: &str, shard: (usize, usize), latencies: &[u64], from_ms: u64) -> SavedRun {
        let mut total = Stats::new(3);
        for &latency in latencies {
            total.response(Outcome::Http(200));
            total.bytes += 100;
            total.corrected.record(latency).unwrap();
            total.uncorrected.record(latency / 2).unwrap();
            total.lag.record(10).unwrap();
        }
        let measured_from = UNIX_EPOCH + Duration::from_millis(T0 * 1000 + from_ms);
        SavedRun {
            source: source.into(),
            description: Description {
                url: "http://10.0.0.1/".into(),
                protocol: Protocol::Http1,
                scheme: Scheme::Http,
                streams: 1,
                grpc: None,
                grpc_kind: None,
                allowed_streams: None,
                threads: 2,
                connections: 12,
                instance_connections: 12 / shard.1,
                duration: Some(Duration::from_secs(2)),
                requests: None,
                timeout: Duration::from_secs(2),
                mode: Mode::Paced(PlanSpec::constant(300.0)),
                warmup: Duration::ZERO,
                seed: 0,
                targets_order: None,
                client_certificate: false,
                shard: Shard { index: shard.0, count: shard.1 },
                start_at: Some(UNIX_EPOCH + Duration::from_secs(T0)),
                digits: 3,
                reached: Reached::default(),
                provenance: None,
            },
            result: RunResult {
                threads: vec![(&total).into()],
                total,
                runtime: Duration::from_secs(2),
                interrupted: None,
                script_stopped: false,
                series: vec![vec![1, 2, 3]],
                series_interval: Duration::from_millis(500),
                measured_from,
                course: course_of(latencies),
            },
            periods: vec![period(0, latencies), period(1, latencies)],
            caveats: Vec::new(),
            merge: None,
        }
    }

    /// A course of eight 250 ms periods, `latencies` in each.
    fn course_of(latencies: &[u64]) -> Course {
        let mut period = CoursePeriod { sent: 1, ended: 1, arrival_dof: 9, ..Default::default() };
        period.arrival_chi2 = 4.5;
        for &latency in latencies {
            period.corrected.record(latency).unwrap();
        }
        Course { period: Duration::from_millis(250), periods: vec![period; 8] }
    }

    fn period(index: u64, latencies: &[u64]) -> Interval {
        let mut stats = Stats::new(3);
        for &latency in latencies {
            stats.response(Outcome::Http(200));
            stats.corrected.record(latency).unwrap();
        }
        let second = Duration::from_secs(1);
        Interval { index, start: second * index as u32, length: second, stats }
    }

    fn shards() -> Vec<SavedRun> {
        vec![
            run("a", (0, 3), &[100, 200], 0),
            run("b", (1, 3), &[300, 5000], 0),
            run("c", (2, 3), &[150], 0),
        ]
    }

    #[test]
    fn shards_add_up_exactly() {
        let runs = shards();
        let merged = combine(&runs).unwrap();
        assert_eq!(merged.kind, Kind::Shards { present: 3, count: 3 });
        assert!(merged.notes.is_empty(), "{:?}", merged.notes);
        let total = &merged.result.total;
        assert_eq!((total.requests, total.bytes), (5, 500));
        let mut expected = Stats::new(3).corrected;
        for run in &runs {
            expected.add(&run.result.total.corrected).unwrap();
        }
        assert_eq!(total.corrected, expected);
        assert_eq!(total.uncorrected.len(), 5);
        assert_eq!(merged.result.threads.len(), 3);
        assert_eq!(merged.result.runtime, Duration::from_secs(2));
        // The whole plan, all connections and threads.
        let cfg = &merged.description;
        assert_eq!(cfg.target_rate(), Some(300.0));
        assert_eq!((cfg.threads, cfg.connections, cfg.shard), (6, 12, Shard::WHOLE));
        // Periods and series on one time line, added.
        let requests: Vec<u64> = merged.periods.iter().map(|p| p.stats.requests).collect();
        assert_eq!(requests, [5, 5]);
        assert_eq!(merged.result.series.len(), 3);
        // The courses too, the arrivals' tests pooled.
        let course = &merged.result.course;
        assert_eq!((course.period, course.periods.len()), (Duration::from_millis(250), 8));
        let first = &course.periods[0];
        assert_eq!((first.sent, first.corrected.len()), (3, 5));
        assert_eq!((first.arrival_dof, first.arrival_chi2), (27, 13.5));
    }

    #[test]
    fn a_missing_shard_is_noted_and_the_target_is_the_shards_there() {
        let runs = &shards()[..2];
        let merged = combine(runs).unwrap();
        assert_eq!(merged.kind, Kind::Shards { present: 2, count: 3 });
        assert!(merged.notes[0].starts_with("shard 2/3 missing"), "{:?}", merged.notes);
        let rate = merged.description.target_rate().unwrap();
        assert!((rate - 200.0).abs() < 1e-9, "{rate}");
    }

    /// Issue 34, item 2: shards run one after the other merged into "the 2
    /// shards of one plan" at half its rate, without a word.
    #[test]
    fn shards_that_did_not_send_together_are_noted() {
        let runs = vec![run("a", (0, 2), &[100], 0), run("b", (1, 2), &[300], 3000)];
        let merged = combine(&runs).unwrap();
        assert_eq!(
            merged.notes,
            ["the shards did not send at the same time: their sending windows do not overlap \
              (a from 0.00s to 2.00s, b from 3.00s to 5.00s, from the first start); the server \
              never saw the plan's rate, and the rates are over the union of their windows, the \
              gaps included (give them one --start-at)"]
        );
        // Whole runs one after the other too; a warm-up is part of the
        // sending window.
        let runs = vec![run("a", (0, 1), &[100], 0), run("b", (0, 1), &[300], 3000)];
        let merged = combine(&runs).unwrap();
        assert!(merged.notes.iter().any(|n| n.starts_with("the runs did not send at the same")));
        let mut warmed = run("b", (0, 1), &[300], 2000);
        warmed.description.warmup = Duration::from_millis(1500);
        let runs = vec![run("a", (0, 1), &[100], 0), warmed];
        let merged = combine(&runs).unwrap();
        assert!(merged.notes.iter().all(|n| !n.contains("did not send")), "{:?}", merged.notes);
        // Overlapping shards with their own --start-at: the other note.
        let mut other_start = run("b", (1, 2), &[300], 1000);
        other_start.description.start_at = None;
        let merged = combine(&[run("a", (0, 2), &[100], 0), other_start]).unwrap();
        assert_eq!(merged.notes.len(), 1, "{:?}", merged.notes);
        assert!(merged.notes[0].starts_with("the shards did not share one --start-at"));
    }

    #[test]
    fn inputs_that_cannot_be_added_are_refused() {
        let cases: Vec<(Vec<SavedRun>, &str)> = vec![
            (
                {
                    let mut runs = shards();
                    runs[1].description.digits = 2;
                    runs
                },
                "differ in -D",
            ),
            (
                {
                    let mut runs = shards();
                    runs[2].description.mode = Mode::ClosedLoop;
                    runs
                },
                "differ in mode",
            ),
            (
                {
                    let mut runs = shards();
                    runs[2].description.shard.index = 0;
                    runs
                },
                "shard 0/3 is there twice: a and c",
            ),
            (
                {
                    let mut runs = shards();
                    runs[1].description.mode = Mode::Paced(PlanSpec::constant(600.0));
                    runs
                },
                "a and b differ in the plan",
            ),
            (
                {
                    let mut runs = shards();
                    runs[1].description.shard = Shard { index: 1, count: 4 };
                    runs
                },
                "differ in the shard count",
            ),
            (
                {
                    let mut runs = shards();
                    runs[0].description.shard = Shard::WHOLE;
                    runs
                },
                "b is a shard of a plan but a is a whole run",
            ),
            (
                vec![run("x", (0, 1), &[100], 0), run("y", (0, 1), &[100], 0)],
                "x and y are the same run",
            ),
        ];
        for (runs, says) in cases {
            let Err(message) = combine(&runs) else { panic!("{says}: merged") };
            assert!(message.contains(says), "{says}: {message}");
        }
    }

    #[test]
    fn independent_runs_add_their_plans_and_take_the_union_of_their_windows() {
        // Two servers, one second apart.
        let mut b = run("b", (0, 1), &[300], 1000);
        b.description.url = "http://10.0.0.2/".into();
        let runs = vec![run("a", (0, 1), &[100, 200], 0), b];
        let merged = combine(&runs).unwrap();
        assert_eq!(merged.kind, Kind::Runs);
        assert_eq!(merged.result.runtime, Duration::from_secs(3));
        let cfg = &merged.description;
        assert_eq!(cfg.url, "http://10.0.0.1/, http://10.0.0.2/");
        assert_eq!(cfg.target_rate(), Some(600.0));
        // One second is two periods of 500 ms: the series line up, shifted.
        assert_eq!(merged.result.series[1], [0, 0, 1, 2, 3]);
        // Periods of 1 s line up one period apart.
        let requests: Vec<u64> = merged.periods.iter().map(|p| p.stats.requests).collect();
        assert_eq!(requests, [2, 3, 1]);
        let sent: Vec<u64> = merged.result.course.periods.iter().map(|p| p.sent).collect();
        assert_eq!(sent, [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1]);
        // Courses of other periods, or off the grid, are left out, said.
        let mut c = run("c", (0, 1), &[300], 100);
        c.result.course.period = Duration::from_millis(300);
        let merged = combine(&[run("a", (0, 1), &[100], 0), c]).unwrap();
        assert!(merged.result.course.periods.is_empty());
        assert!(merged.notes.iter().any(|n| n.starts_with("the validity's checks over periods")));
        // Different plans: their mean rates add up.
        let mut c = run("c", (0, 1), &[300], 0);
        c.description.mode = Mode::Paced(PlanSpec::constant(100.0));
        let merged = combine(&[run("a", (0, 1), &[100], 0), c]).unwrap();
        assert_eq!(merged.description.target_rate(), Some(400.0));
        assert!(merged.notes[0].contains("different plans"), "{:?}", merged.notes);
    }

    #[test]
    fn protocols_must_agree_for_shards_and_are_noted_for_runs() {
        let http2 = |shard| {
            let mut b = run("b", shard, &[200], 0);
            b.description.protocol = Protocol::Http2;
            b
        };
        let error = combine(&[run("a", (0, 3), &[100], 0), http2((1, 3))]).err().unwrap();
        assert!(error.contains("differ in the protocol (--http2, --streams)"), "{error}");
        let b = http2((0, 1));
        let merged = combine(&[run("a", (0, 1), &[100], 0), b]).unwrap();
        assert!(
            merged.notes.iter().any(|n| n.contains("different protocols")),
            "{:?}",
            merged.notes
        );
    }

    #[test]
    fn periods_that_do_not_line_up_are_left_out_with_a_note() {
        let runs = vec![run("a", (0, 1), &[100], 0), run("b", (0, 1), &[200], 300)];
        let merged = combine(&runs).unwrap();
        assert!(merged.periods.is_empty());
        assert!(merged.result.series.is_empty());
        assert!(merged.result.course.periods.is_empty());
        assert_eq!(merged.notes.len(), 3, "{:?}", merged.notes);
        assert_eq!(merged.result.total.requests, 2);
    }
}
