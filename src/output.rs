//! Everything a run writes after its header, in one place: the periodic
//! reports of `-p` (text or JSON lines) and the `--hlog` interval log while
//! the run goes on, then the final report (text, or JSON with `-e`) and
//! wrx's `--thread-timeseries`, `--timeseries` and `--histogram` blocks.
//!
//! With `-e` stdout carries JSON only: the header is not printed (see
//! [`Outputs::text_header`]), wrx's blocks become fields of the final
//! JSON object, and the report's warnings go to stderr as well.
//!
//! With `--html` each period's figures are kept (a few numbers, see
//! [`PeriodPoint`]) and the page is written with the final report.
//!
//! Files named by options are written completely or not at all (see
//! [`crate::outfile`]): committed by [`Outputs::finish`], which also runs
//! after Ctrl-C; on any error, or if `finish` is never reached, nothing is
//! left behind.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::description::Description;
use crate::error::{io_reason, Error};
use crate::outfile::OutputFile;
use crate::report::html::{self, timeline::PeriodPoint};
use crate::report::{diagnose, hlog, json, periodic, series, text, ReportOptions};
use crate::slo::{self, Objective};
use crate::stats::{Interval, RunResult};

/// Reporting period for `--hlog` when `-p` is not given.
const DEFAULT_PERIOD: Duration = Duration::from_secs(1);

/// Points the HTML report's charts over time get, about, when no `-p` or
/// `--hlog` sets the periods.
const HTML_POINTS: u32 = 100;

/// Where the reports go, and when: what to write besides (or instead of)
/// the final text report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutputOptions {
    /// `-e/--json`: one JSON document on stdout instead of the text report.
    pub json: bool,
    /// `-p/--report_interval`: a report for every period of this length.
    pub report_interval: Option<Duration>,
    /// `--hlog FILE`: a standard HdrHistogram interval log.
    pub hlog: Option<PathBuf>,
    /// `-o/--output FILE`: the reports go to this file instead of stdout.
    pub output: Option<PathBuf>,
    /// `--html FILE`: the self-contained HTML report.
    pub html: Option<PathBuf>,
}

impl OutputOptions {
    /// The length of the reporting periods of a run of `duration` (None:
    /// until its `-n` requests are done), when an output needs them:
    /// `-p`'s, or one second for `--hlog` alone; else for `--html` alone
    /// one that gives its charts over time about [`HTML_POINTS`] points:
    /// from 100 ms (a short run still gets a line) to 1 s (a long run's
    /// timeline stays small); 1 s for a run of no set length.
    pub fn period(&self, duration: Option<Duration>) -> Option<Duration> {
        let logged = self.hlog.is_some().then_some(DEFAULT_PERIOD);
        self.report_interval.or(logged).or_else(|| {
            self.html.as_ref().map(|_| {
                let lengths = [100, 200, 250, 500].map(Duration::from_millis);
                let fits = |length: &Duration| duration.is_some_and(|d| *length * HTML_POINTS >= d);
                lengths.into_iter().find(fits).unwrap_or(DEFAULT_PERIOD)
            })
        })
    }
}

/// What a run's reports are made of besides its measurements: the
/// description of the run, what to show, where, and the objectives to
/// judge it by.
#[derive(Clone, Debug)]
pub struct Reporting {
    pub run: Description,
    pub report: ReportOptions,
    pub outputs: OutputOptions,
    pub slo: Vec<Objective>,
}

/// The outputs of one run, opened before it starts.
pub struct Outputs {
    reporting: Reporting,
    /// Where the header and the reports go.
    reports: Destination,
    hlog: Option<HlogFile>,
    html: Option<HtmlFile>,
    json: bool,
}

/// stdout, or the file of `-o`.
enum Destination {
    Stream(Box<dyn Write>),
    File {
        file: OutputFile,
        /// A write failed: the file is incomplete and must not be committed.
        failed: bool,
    },
}

impl Outputs {
    /// Validates and opens what the run will write: the temporary files
    /// next to their targets. Fails (exit code 2) when a file cannot be
    /// created, before any request is sent.
    pub fn start(reporting: Reporting) -> Result<Outputs, Error> {
        let reports = match &reporting.outputs.output {
            Some(path) => Destination::File {
                file: OutputFile::create(path).map_err(|e| file_error(path, e))?,
                failed: false,
            },
            None => Destination::Stream(Box::new(io::stdout())),
        };
        Outputs::to(reporting, reports)
    }

    fn to(reporting: Reporting, reports: Destination) -> Result<Outputs, Error> {
        let hlog = match &reporting.outputs.hlog {
            Some(path) => Some(HlogFile::create(path)?),
            None => None,
        };
        let html = match &reporting.outputs.html {
            Some(path) => Some(HtmlFile {
                file: OutputFile::create(path).map_err(|e| file_error(path, e))?,
                timeline: Vec::new(),
            }),
            None => None,
        };
        let json = reporting.outputs.json;
        Ok(Outputs { reporting, reports, hlog, html, json })
    }

    /// What the reports are made from.
    pub fn reporting(&self) -> &Reporting {
        &self.reporting
    }

    /// What the checks before the run found: the streams per connection a
    /// server allows over HTTP/2 (the header says what the run uses).
    pub fn allowed_streams(&mut self, allowed: Option<u32>) {
        self.reporting.run.allowed_streams = allowed;
    }

    /// How the run's gRPC calls go, once the server's reflection said
    /// (the schema was not known when the outputs started).
    pub fn grpc_kind(&mut self, kind: Option<crate::description::CallKind>) {
        self.reporting.run.grpc_kind = kind;
    }

    /// The `Running ...` header, but not with `-e`, where the output
    /// carries only JSON.
    pub fn header(&mut self) -> Result<(), Error> {
        if self.json {
            return Ok(());
        }
        let run = &self.reporting.run;
        self.reports.write(|out| {
            text::write_header(out, run)?;
            out.flush()
        })
    }

    /// Takes one reporting period as soon as it is complete: with `-p`,
    /// its report (text ending in `=== REPORT END ===`, or one JSON line);
    /// with `--hlog`, its two log lines; with `--html`, its figures.
    /// One output failing does not keep the period from the others.
    pub fn interval(&mut self, interval: &Interval) -> Result<(), Error> {
        let json = self.json;
        let Reporting { run, report, outputs, .. } = &self.reporting;
        let written = match outputs.report_interval {
            Some(_) => self.reports.write(|out| {
                if json {
                    json::write_line(out, &json::period_report(run, report, interval)?)?;
                } else {
                    periodic::write_period(out, run, report, interval)?;
                }
                // Each period is news; a pipe would otherwise hold it back.
                out.flush()
            }),
            None => Ok(()),
        };
        let log = match &mut self.hlog {
            Some(hlog) => hlog.write_interval(interval),
            None => Ok(()),
        };
        if let Some(html) = &mut self.html {
            html.timeline.push(PeriodPoint::of(run, interval));
        }
        written.and(log)
    }

    /// After the run, interrupted or not: the final report and wrx's
    /// blocks, then the files are committed. A file is committed even
    /// when another output fails; the first error is returned.
    pub fn finish(mut self, result: &RunResult) -> Result<(), Error> {
        let reporting = &self.reporting;
        let report = self.reports.write(|out| write_final(out, reporting, result));
        let committed = self.reports.commit();
        let log = match self.hlog {
            Some(hlog) => hlog.commit(result.runtime),
            None => Ok(()),
        };
        let page = match self.html {
            Some(html) => html.commit(reporting, result),
            None => Ok(()),
        };
        report.and(committed).and(log).and(page)
    }
}

impl Destination {
    /// Runs `write` on the destination. On stdout a closed pipe (`pace
    /// ... | head`) is not an error worth a message: the reader has what
    /// it wanted.
    fn write(&mut self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), Error> {
        match self {
            Destination::Stream(out) => match write(out) {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(Error::Setup(format!("cannot write the report: {}", io_reason(&e)))),
                Ok(()) => Ok(()),
            },
            Destination::File { file, failed } => {
                let written = write(file.writer());
                *failed |= written.is_err();
                written.map_err(|e| file_error(file.path(), e))
            }
        }
    }

    /// Puts the file of `-o` in place, if it was written completely.
    fn commit(self) -> Result<(), Error> {
        match self {
            Destination::Stream(_) => Ok(()),
            Destination::File { file, failed: true } => Err(Error::Setup(format!(
                "{} was not written: an earlier write failed",
                file.path().display()
            ))),
            Destination::File { file, failed: false } => {
                let path = file.path().to_path_buf();
                file.commit().map_err(|e| file_error(&path, e))
            }
        }
    }
}

/// The final report: JSON, or the text report followed by wrx's blocks in
/// wrx's order (its thread table comes first, as it printed that live),
/// then the `--slo` verdicts.
fn write_final(out: &mut dyn Write, reporting: &Reporting, result: &RunResult) -> io::Result<()> {
    let Reporting { run, report: options, outputs, slo } = reporting;
    let verdicts = slo::verdicts(slo, run, result);
    if outputs.json {
        let report = json::final_report(run, options, result, &verdicts)?;
        json::write_line(out, &report)?;
        // stdout carries only JSON: the warnings are also said on stderr,
        // as the text report would say them.
        if let Some(run) = &report.run {
            diagnose::write_warnings(&mut io::stderr(), &run.warnings)?;
        }
        return out.flush();
    }
    text::write_report(out, run, options, result)?;
    if options.thread_timeseries || options.timeseries.is_some() {
        let slots = series::slot_count(result, run.duration);
        let per_thread = series::per_thread(result, slots);
        if options.thread_timeseries {
            series::write_thread_timeseries(out, &per_thread)?;
        }
        if options.timeseries.is_some() {
            let totals = series::totals(&per_thread, slots);
            series::write_timeseries(out, result.series_interval, &totals)?;
        }
    }
    if options.histogram {
        series::write_histogram(out, &result.total.corrected)?;
    }
    slo::write_verdicts(out, &verdicts)?;
    out.flush()
}

/// The `--hlog` file being written.
struct HlogFile {
    file: OutputFile,
    /// When the run started, by the wall clock; known at the first period.
    started: Option<SystemTime>,
    /// A write failed: the file is incomplete and must not be committed.
    failed: bool,
}

impl HlogFile {
    fn create(path: &Path) -> Result<HlogFile, Error> {
        let file = OutputFile::create(path).map_err(|e| file_error(path, e))?;
        Ok(HlogFile { file, started: None, failed: false })
    }

    fn write_interval(&mut self, interval: &Interval) -> Result<(), Error> {
        let written = self.try_write_interval(interval);
        self.failed |= written.is_err();
        written.map_err(|e| file_error(self.file.path(), e))
    }

    fn try_write_interval(&mut self, interval: &Interval) -> io::Result<()> {
        // Periods are passed on just after they end, so the run started
        // about the end of this one ago (within milliseconds).
        self.write_header_once(interval.start + interval.length)?;
        let out = self.file.writer();
        let (start, length) = (interval.start, interval.length);
        hlog::write_interval(out, None, start, length, &interval.stats.corrected)?;
        let uncorrected = &interval.stats.uncorrected;
        hlog::write_interval(out, Some(hlog::UNCORRECTED_TAG), start, length, uncorrected)
    }

    /// Writes the header the first time, for a run that started `ago`.
    fn write_header_once(&mut self, ago: Duration) -> io::Result<()> {
        if self.started.is_none() {
            let start = SystemTime::now().checked_sub(ago).unwrap_or(UNIX_EPOCH);
            hlog::write_header(self.file.writer(), start)?;
            self.started = Some(start);
        }
        Ok(())
    }

    /// Completes the log (a run without a single period still gets its
    /// header) and moves it into place.
    fn commit(mut self, runtime: Duration) -> Result<(), Error> {
        let target = self.file.path().to_path_buf();
        if self.failed {
            return Err(Error::Setup(format!(
                "{} was not written: an earlier write failed",
                target.display()
            )));
        }
        self.write_header_once(runtime).map_err(|e| file_error(&target, e))?;
        self.file.commit().map_err(|e| file_error(&target, e))
    }
}

/// The `--html` file, written when the run is over.
struct HtmlFile {
    file: OutputFile,
    /// The figures of every period so far.
    timeline: Vec<PeriodPoint>,
}

impl HtmlFile {
    fn commit(mut self, reporting: &Reporting, result: &RunResult) -> Result<(), Error> {
        let page = html::Page {
            run: &reporting.run,
            report: &reporting.report,
            result,
            verdicts: &slo::verdicts(&reporting.slo, &reporting.run, result),
            timeline: &self.timeline,
            origin: html::Origin::Live,
        };
        let path = self.file.path().to_path_buf();
        html::write(self.file.writer(), &page).map_err(|e| file_error(&path, e))?;
        self.file.commit().map_err(|e| file_error(&path, e))
    }
}

fn file_error(path: &Path, e: io::Error) -> Error {
    Error::Setup(format!("cannot write {}: {}", path.display(), io_reason(&e)))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::config::{BenchConfig, Mode};
    use crate::plan::PlanSpec;
    use crate::signals::Interruption;
    use crate::stats::Outcome;
    use crate::stats::{Stats, ThreadTotals};
    use crate::target::Target;

    /// A `Write` whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// The output and report options of a test, in one.
    #[derive(Default)]
    struct Options {
        json: bool,
        report_interval: Option<Duration>,
        hlog: Option<PathBuf>,
        output: Option<PathBuf>,
        timeseries: Option<Duration>,
        thread_timeseries: bool,
        histogram: bool,
    }

    /// A paced run of 2 s at 100/s, reported as `options` say.
    fn config(options: Options) -> Reporting {
        let run = Description::of(&BenchConfig {
            connections: 2,
            threads: 1,
            duration: Some(Duration::from_secs(2)),
            mode: Mode::Paced(PlanSpec::constant(100.0)),
            ..BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap())
        });
        let Options { json, report_interval, hlog, output, .. } = options;
        let report = ReportOptions {
            timeseries: options.timeseries,
            thread_timeseries: options.thread_timeseries,
            histogram: options.histogram,
            ..ReportOptions::default()
        };
        let outputs = OutputOptions { json, report_interval, hlog, output, html: None };
        Reporting { run, report, outputs, slo: Vec::new() }
    }

    fn period(index: u64, requests: u64) -> Interval {
        let mut stats = Stats::new(3);
        for _ in 0..requests {
            stats.response(Outcome::Http(200));
            stats.corrected.record(1500).unwrap();
            stats.uncorrected.record(700).unwrap();
        }
        Interval { index, start: Duration::from_secs(index), length: Duration::from_secs(1), stats }
    }

    /// Outputs whose reports go to a buffer the test reads.
    fn outputs(cfg: &Reporting, reports: &Shared) -> Outputs {
        Outputs::to(cfg.clone(), Destination::Stream(Box::new(reports.clone()))).unwrap()
    }

    /// Runs `cfg` over two periods of 100 and 50 requests; returns what
    /// was written during the run and at the end.
    fn run(cfg: &Reporting) -> (String, String) {
        let reports = Shared::default();
        let mut outputs = outputs(cfg, &reports);
        let periods = [period(0, 100), period(1, 50)];
        let mut result = RunResult::measured(Stats::new(3), Duration::from_secs(2));
        result.series = vec![vec![100, 50]];
        result.series_interval = Duration::from_secs(1);
        for p in &periods {
            outputs.interval(p).unwrap();
            result.total.merge(&p.stats);
        }
        result.threads = vec![ThreadTotals::from(&result.total)];
        let live = reports.text();
        outputs.finish(&result).unwrap();
        let out = reports.text()[live.len()..].to_string();
        (live, out)
    }

    #[test]
    fn text_mode_prints_only_the_final_report() {
        let cfg = config(Options::default());
        let (live, out) = run(&cfg);
        assert_eq!(live, "");
        assert!(out.starts_with("  Thread Stats"), "{out}");
        assert!(out.contains("  150 requests in 2.00s"), "{out}");
    }

    #[test]
    fn the_header_is_text_only() {
        for (json, expected) in [(false, "Running 2s test @ http://127.0.0.1:8080/\n"), (true, "")]
        {
            let cfg = config(Options { json, ..Options::default() });
            let reports = Shared::default();
            outputs(&cfg, &reports).header().unwrap();
            assert!(reports.text().starts_with(expected), "{}", reports.text());
            assert_eq!(reports.text().is_empty(), json);
        }
    }

    #[test]
    fn an_output_file_gets_the_header_and_every_report() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let cfg = config(Options {
            json: true,
            report_interval: Some(Duration::from_secs(1)),
            output: Some(path.clone()),
            ..Options::default()
        });
        let mut outputs = Outputs::start(cfg.clone()).unwrap();
        outputs.header().unwrap();
        outputs.interval(&period(0, 10)).unwrap();
        assert!(!path.exists(), "visible before the run ended");
        let result = RunResult::measured(period(0, 10).stats, Duration::from_secs(1));
        outputs.finish(&result).unwrap();
        let written = fs::read_to_string(&path).unwrap();
        let kinds: Vec<String> = written
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["report"].to_string())
            .collect();
        assert_eq!(kinds, ["\"period\"", "\"final\""]);
    }

    #[test]
    fn periodic_text_reports_then_the_final_one() {
        let cfg =
            config(Options { report_interval: Some(Duration::from_secs(1)), ..Options::default() });
        let (live, out) = run(&cfg);
        assert_eq!(live.matches("=== REPORT END ===\n").count(), 2, "{live}");
        assert!(live.contains("  100 requests in 1.00s"), "{live}");
        assert!(live.contains("  50 requests in 1.00s"), "{live}");
        assert!(out.contains("  150 requests in 2.00s"), "{out}");
        assert!(!out.contains("REPORT END"));
    }

    #[test]
    fn json_mode_writes_json_lines_only() {
        let cfg = config(Options {
            json: true,
            report_interval: Some(Duration::from_secs(1)),
            timeseries: Some(Duration::from_secs(1)),
            histogram: true,
            ..Options::default()
        });
        let (live, out) = run(&cfg);
        let periods: Vec<serde_json::Value> =
            live.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let requests: Vec<u64> = periods.iter().map(|p| p["total_req"].as_u64().unwrap()).collect();
        assert_eq!(requests, vec![100, 50]);
        assert!(periods.iter().all(|p| p["report"] == "period"));
        assert_eq!(out.lines().count(), 1, "{out}");
        let last: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(last["report"], "final");
        assert_eq!(last["total_req"], 150);
        assert_eq!(last["timeseries"]["requests"], serde_json::json!([100, 50]));
        assert!(last["latency_histogram"]["bins"].is_array());
    }

    #[test]
    fn wrx_blocks_follow_the_text_report() {
        let cfg = config(Options {
            timeseries: Some(Duration::from_secs(1)),
            thread_timeseries: true,
            histogram: true,
            ..Options::default()
        });
        let (_, out) = run(&cfg);
        let tail = out.split_once("Schedule lag:").unwrap().1;
        let table = tail.find("\nTHREAD  |  EPOCH  |  REQUESTS\n").unwrap();
        let series = tail.find("Request counts time series (interval = 1000ms) \n100\n50\n");
        let series = series.unwrap_or_else(|| panic!("{out}"));
        let histogram = tail.find("Latency histogram (bin width = 1us)\n").unwrap();
        assert!(table < series && series < histogram, "{out}");
        let bins: Vec<u64> =
            tail[histogram..].lines().skip(1).map(|l| l.parse().unwrap()).collect();
        assert_eq!(bins.len(), 1501);
        assert_eq!(bins.iter().sum::<u64>(), 150);
    }

    #[test]
    fn hlog_is_written_under_a_temporary_name_then_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.hlog");
        let cfg = config(Options { hlog: Some(path.clone()), ..Options::default() });
        let mut outputs = outputs(&cfg, &Shared::default());
        let temp = dir.path().join(format!("run.hlog.tmp-{}", std::process::id()));
        assert!(temp.exists());
        outputs.interval(&period(0, 10)).unwrap();
        assert!(!path.exists(), "visible before the run ended");
        let mut result = RunResult::measured(period(0, 10).stats, Duration::from_secs(1));
        result.interrupted = Some(Interruption::Interrupt);
        outputs.finish(&result).unwrap();
        assert!(!temp.exists());
        let log = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 5 + 2, "{log}");
        assert_eq!(lines[1], "#[Histogram log format version 1.3]");
        assert!(lines[5].starts_with("0.000,1.000,1.500,HISTFAAA"), "{log}");
        assert!(lines[6].starts_with("Tag=uncorrected,0.000,1.000,0.700,HISTFAAA"), "{log}");
    }

    #[test]
    fn hlog_of_a_run_without_periods_has_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.hlog");
        let cfg = config(Options { hlog: Some(path.clone()), ..Options::default() });
        let outputs = outputs(&cfg, &Shared::default());
        let result = RunResult::measured(Stats::new(3), Duration::ZERO);
        outputs.finish(&result).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 5);
    }

    #[test]
    fn abandoned_outputs_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.hlog");
        fs::write(&path, "previous").unwrap();
        let cfg = config(Options { hlog: Some(path.clone()), ..Options::default() });
        let mut outputs = Outputs::start(cfg.clone()).unwrap();
        outputs.interval(&period(0, 10)).unwrap();
        drop(outputs);
        let names: Vec<_> =
            fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("run.hlog")]);
        assert_eq!(fs::read_to_string(&path).unwrap(), "previous");
    }

    #[test]
    fn a_log_with_a_failed_write_is_not_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.hlog");
        let cfg = config(Options { hlog: Some(path.clone()), ..Options::default() });
        let reports = Shared::default();
        let mut outputs = outputs(&cfg, &reports);
        outputs.interval(&period(0, 10)).unwrap();
        outputs.hlog.as_mut().unwrap().failed = true;
        let result = RunResult::measured(period(0, 10).stats, Duration::from_secs(1));
        match outputs.finish(&result) {
            Err(Error::Setup(message)) => assert!(message.contains("was not written"), "{message}"),
            _ => panic!("committed an incomplete log"),
        }
        // The report was still printed, and nothing is left on disk.
        assert!(reports.text().contains("10 requests in 1.00s"));
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn unwritable_files_fail_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        for path in [dir.path().join("missing/run.hlog"), dir.path().to_path_buf()] {
            let cfg = config(Options { hlog: Some(path.clone()), ..Options::default() });
            match Outputs::start(cfg.clone()) {
                Err(Error::Setup(message)) => {
                    assert!(message.starts_with("cannot write "), "{message}")
                }
                _ => panic!("{} accepted", path.display()),
            }
        }
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
