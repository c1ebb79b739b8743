//! The live progress: two lines on stderr, redrawn at every short period
//! the engine hands over (five times a second), and erased before anything
//! else is printed, so the report reads exactly as without them.
//!
//! Shown only when stderr is a terminal and `--no-progress` is not given;
//! stdout (the report, `-e` JSON) never carries it. Its figures come from
//! the periods the engine threads already hand over (see
//! `engine/periods.rs`): the threads do nothing per request for it.
//!
//! Terminal handling is three ECMA-48 sequences every terminal emulator
//! in use understands (cursor up, carriage return, erase to the end of
//! the screen) and the terminal's width, read with `rustix` (already a
//! dependency) at each redraw so that a resize is followed. A terminal
//! crate (crossterm) would bring a dependency tree for exactly that.

mod line;

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use crate::config::Mode;
use crate::description::Description;
use crate::engine::Before;
use crate::report::diagnose::lag_weight;
use crate::stats::spectrum::value_at_percentile;
use crate::stats::{Interval, Stats};
use line::{Figures, Stall};

/// How often the lines are redrawn: a multiple of the engine threads'
/// 100 ms Req/Sec sample, so the hand-overs need no extra wake-up.
pub const EVERY: Duration = Duration::from_millis(200);

/// Width assumed when the terminal does not say (a pty nobody sized).
const DEFAULT_WIDTH: usize = 80;

/// The progress lines of one run.
pub struct Progress {
    /// What the run was meant to do.
    planned: Option<Duration>,
    planned_requests: Option<u64>,
    /// `-R` and friends: the plan, to give the target rate of a period.
    paced: Option<PlanRate>,
    /// Lines now on the screen (the cursor is at the end of the last).
    drawn: usize,
    /// The end of the latest period in which responses came.
    last_answered: Duration,
}

/// The plan's rate, for this instance.
struct PlanRate {
    spec: crate::plan::PlanSpec,
    warmup: Duration,
    shards: f64,
}

impl Progress {
    /// The progress of the run `run` describes, or None when it is not to
    /// be shown: not `wanted` (`--no-progress`), or stderr is no terminal.
    pub fn start(run: &Description, wanted: bool) -> Option<Progress> {
        if !wanted || !io::stderr().is_terminal() {
            return None;
        }
        let planned_requests = match run.mode {
            // A paced run's -n is its duration already.
            Mode::Paced(_) => None,
            Mode::ClosedLoop => run.requests_of_instance(),
        };
        let paced = match &run.mode {
            Mode::ClosedLoop => None,
            Mode::Paced(spec) => Some(PlanRate {
                spec: spec.clone(),
                warmup: run.warmup,
                shards: run.shard.count as f64,
            }),
        };
        Some(Progress {
            planned: run.duration,
            planned_requests,
            paced,
            drawn: 0,
            last_answered: Duration::ZERO,
        })
    }

    /// Redraws the lines for the run so far: `latest` is the period just
    /// ended, `total` everything measured up to its end.
    pub fn show(&mut self, latest: &Interval, total: &Stats) {
        let figures = self.figures(latest, total);
        self.note_answers(latest);
        let [first, second] = line::lines(&figures, terminal_width());
        let mut text = self.erase_sequence();
        text.push_str(&first);
        text.push('\n');
        text.push_str(&second);
        // One write, so the lines never show half drawn; a failed write
        // (stderr gone) only costs the progress.
        if io::stderr().lock().write_all(text.as_bytes()).is_ok() {
            self.drawn = 2;
        }
    }

    /// Shows what the run does before its measured part (one line, until
    /// the first period replaces it).
    pub fn before(&mut self, before: Before) {
        let text = self.erase_sequence() + &line::before_line(before, terminal_width());
        if io::stderr().lock().write_all(text.as_bytes()).is_ok() {
            self.drawn = 1;
        }
    }

    /// Erases the lines, leaving the cursor where they began.
    pub fn clear(&mut self) {
        if self.drawn > 0 {
            let _ = io::stderr().lock().write_all(self.erase_sequence().as_bytes());
            self.drawn = 0;
        }
    }

    /// Back to the start of the first line drawn, and erase to the end
    /// of the screen.
    fn erase_sequence(&self) -> String {
        match self.drawn {
            0 => String::new(),
            1 => "\r\x1b[J".to_string(),
            drawn => format!("\x1b[{}A\r\x1b[J", drawn - 1),
        }
    }

    fn figures(&self, latest: &Interval, total: &Stats) -> Figures {
        let end = latest.start + latest.length;
        let seconds = latest.length.as_secs_f64();
        let recorded = !total.corrected.is_empty();
        let percentile = |p| recorded.then(|| value_at_percentile(&total.corrected, p));
        Figures {
            elapsed: end,
            planned: self.planned,
            requests: total.requests,
            planned_requests: self.planned_requests,
            rate: if seconds > 0.0 { latest.stats.requests as f64 / seconds } else { 0.0 },
            target_rate: self.paced.as_ref().map(|t| {
                let (from, to) = (t.warmup + latest.start, t.warmup + end);
                t.spec.mean_rate(t.warmup, from, to) / t.shards
            }),
            p50_us: percentile(50.0),
            p99_us: percentile(99.0),
            errors: total.errors,
            lag_p99_us: self.paced.as_ref().and_then(|_| {
                let lag = lag_weight(total);
                lag.matters.then_some(lag.lag_p99_us)
            }),
            stall: self.stall(latest),
        }
    }

    /// Keeps when responses last came.
    fn note_answers(&mut self, latest: &Interval) {
        if latest.stats.requests > 0 {
            self.last_answered = latest.start + latest.length;
        }
    }

    /// A stall: nothing answered in the latest period while requests
    /// waited.
    fn stall(&self, latest: &Interval) -> Option<Stall> {
        let waiting = latest.stats.oldest_waiting_us;
        (latest.stats.requests == 0 && waiting > 0).then(|| Stall {
            quiet_for: (latest.start + latest.length).saturating_sub(self.last_answered),
            oldest_waiting: Duration::from_micros(waiting),
        })
    }
}

impl Drop for Progress {
    /// A run that ends in an error leaves no progress behind either.
    fn drop(&mut self) {
        self.clear();
    }
}

/// The terminal's columns, from stderr.
fn terminal_width() -> usize {
    match rustix::termios::tcgetwinsize(io::stderr()) {
        Ok(size) if size.ws_col > 0 => usize::from(size.ws_col),
        _ => DEFAULT_WIDTH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Outcome;

    fn progress(drawn: usize) -> Progress {
        Progress {
            planned: None,
            planned_requests: None,
            paced: None,
            drawn,
            last_answered: Duration::ZERO,
        }
    }

    #[test]
    fn erasing_goes_back_to_the_first_line() {
        assert_eq!(progress(0).erase_sequence(), "");
        assert_eq!(progress(1).erase_sequence(), "\r\x1b[J");
        assert_eq!(progress(2).erase_sequence(), "\x1b[1A\r\x1b[J");
    }

    #[test]
    fn figures_of_a_paced_period() {
        let mut p = progress(0);
        p.planned = Some(Duration::from_secs(10));
        p.paced = Some(PlanRate {
            spec: crate::plan::PlanSpec::constant(1000.0),
            warmup: Duration::ZERO,
            shards: 2.0,
        });
        let mut stats = Stats::new(3);
        for _ in 0..100 {
            stats.response(Outcome::Http(200));
            stats.corrected.record(2_000).unwrap();
            stats.uncorrected.record(2_000).unwrap();
            stats.lag.record(10).unwrap();
        }
        let latest = Interval {
            index: 4,
            start: Duration::from_millis(800),
            length: Duration::from_millis(200),
            stats: stats.clone(),
        };
        let figures = p.figures(&latest, &stats);
        assert_eq!(figures.elapsed, Duration::from_secs(1));
        assert_eq!(figures.rate, 500.0);
        // Half the plan's rate: this instance is one of two shards.
        assert_eq!(figures.target_rate, Some(500.0));
        assert_eq!(figures.p99_us, Some(2_000));
        // 10 us of lag does not weigh on 2 ms latencies.
        assert_eq!(figures.lag_p99_us, None);
        assert_eq!(figures.stall, None);
    }

    #[test]
    fn a_period_with_no_response_while_requests_wait_is_a_stall() {
        let mut p = progress(0);
        let period = |index: u32, requests: u64, waiting_us: u64| {
            let mut stats = Stats::new(3);
            stats.requests = requests;
            stats.oldest_waiting_us = waiting_us;
            let length = Duration::from_millis(200);
            Interval { index: u64::from(index), start: length * index, length, stats }
        };
        let total = Stats::new(3);
        // Answered up to 1 s, then nothing for three periods.
        p.note_answers(&period(4, 100, 300));
        for index in 5..8 {
            assert!(p.figures(&period(index, 0, 0), &total).stall.is_none(), "nothing waits");
            let stall = p.figures(&period(index, 0, 750_000), &total).stall.unwrap();
            assert_eq!(stall.quiet_for, Duration::from_millis(200) * (index - 4));
            assert_eq!(stall.oldest_waiting, Duration::from_millis(750));
            p.note_answers(&period(index, 0, 750_000));
        }
    }
}
