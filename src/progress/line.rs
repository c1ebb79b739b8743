//! The two lines of the live progress, as plain text of a given width:
//!
//! ```text
//! [=========>          ]  4.2s / 10.0s  41876 requests  9987/s of 10000/s
//! latency p50 1.21ms  p99 8.40ms  errors: timeout 3, 4xx/5xx 20  lag p99 12.00ms
//! ```
//!
//! No escape sequences here ([`super`] draws them), so that the layout
//! can be tested as it is.

use std::time::Duration;

use crate::engine::Before;
use crate::stats::Errors;
use crate::units::format_time_us;

/// What the lines show, from the measurements so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Since the start of the measured run.
    pub elapsed: Duration,
    /// How long the run is planned to last, when a duration bounds it.
    pub planned: Option<Duration>,
    /// Completed requests so far.
    pub requests: u64,
    /// The requests `-n` asks of this instance, when they bound the run.
    pub planned_requests: Option<u64>,
    /// Completed requests per second over the latest period.
    pub rate: f64,
    /// What the plan wanted per second over the latest period (paced).
    pub target_rate: Option<f64>,
    /// Corrected latency so far (None before the first response).
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
    pub errors: Errors,
    /// The schedule lag's p99, when it weighs on the latency.
    pub lag_p99_us: Option<u64>,
    /// Nothing was answered in the latest period while requests waited.
    pub stall: Option<Stall>,
}

/// A stall as it happens: the latency figures so far do not show it (they
/// hold only what was answered), so these do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    /// Since the last response (to within a period).
    pub quiet_for: Duration,
    /// How long the oldest request still waiting has waited, from its
    /// intended time.
    pub oldest_waiting: Duration,
}

/// The widest bar, in cells between its brackets.
const BAR_CELLS: usize = 20;

/// Both lines, each cut to `width - 1` columns: a line as wide as the
/// terminal would wrap (or leave the cursor past the edge) on some
/// terminals, and the redraw counts on each line taking exactly one row.
pub fn lines(figures: &Figures, width: usize) -> [String; 2] {
    [fit(&first_line(figures, width), width), fit(&second_line(figures), width)]
}

fn first_line(f: &Figures, width: usize) -> String {
    let seconds = |d: Duration| format!("{:.1}s", d.as_secs_f64());
    let by_time = f.planned.map(|planned| ratio(f.elapsed.as_secs_f64(), planned.as_secs_f64()));
    let by_requests = f.planned_requests.map(|n| ratio(f.requests as f64, n as f64));
    let mut line = match by_time.into_iter().chain(by_requests).reduce(f64::max) {
        // A quarter of the terminal at most, so the figures fit beside it.
        Some(done) => format!("{}  ", bar(done, (width / 4).min(BAR_CELLS))),
        None => String::new(),
    };
    line += &seconds(f.elapsed);
    if let Some(planned) = f.planned {
        line += &format!(" / {}", seconds(planned));
    }
    line += &match f.planned_requests {
        Some(n) => format!("  {} / {n} requests", f.requests),
        None => format!("  {} requests", f.requests),
    };
    line += &format!("  {:.0}/s", f.rate);
    if let Some(target) = f.target_rate {
        line += &format!(" of {target:.0}/s");
    }
    line
}

fn second_line(f: &Figures) -> String {
    let time = |us: Option<u64>| us.map_or("-".to_string(), |us| format_time_us(us as f64));
    let mut line = match f.stall {
        Some(stall) => format!(
            "STALLED: nothing answered for {}, oldest waiting {}  (so far p50 {}  p99 {})",
            format_time_us(stall.quiet_for.as_micros() as f64),
            format_time_us(stall.oldest_waiting.as_micros() as f64),
            time(f.p50_us),
            time(f.p99_us)
        ),
        None => format!("latency p50 {}  p99 {}", time(f.p50_us), time(f.p99_us)),
    };
    line += &format!("  {}", errors(&f.errors));
    if let Some(lag) = f.lag_p99_us {
        line += &format!("  lag p99 {} (sends late)", format_time_us(lag as f64));
    }
    line
}

/// The one line shown before the measured run, cut to `width - 1`:
///
/// ```text
/// opening connections
/// connected; starting in 4.2s (--start-at)
/// [====>               ]  warming up: 2.6s of 10.0s left (not counted)
/// ```
pub fn before_line(before: Before, width: usize) -> String {
    let seconds = |d: Duration| format!("{:.1}s", d.as_secs_f64());
    let line = match before {
        Before::Connecting => "opening connections".to_string(),
        Before::Starting { left } => {
            format!("connected; starting in {} (--start-at)", seconds(left))
        }
        Before::WarmingUp { left, of } => {
            let done = ratio(of.saturating_sub(left).as_secs_f64(), of.as_secs_f64());
            format!(
                "{}  warming up: {} of {} left (not counted)",
                bar(done, (width / 4).min(BAR_CELLS)),
                seconds(left),
                seconds(of)
            )
        }
    };
    fit(&line, width)
}

/// `errors: connect 2, timeout 3`, the kinds that occurred, in wrk's
/// order, then responses with status > 399 and requests never sent.
fn errors(e: &Errors) -> String {
    let kinds = [
        ("connect", e.connect),
        ("read", e.read),
        ("write", e.write),
        ("timeout", e.timeout),
        ("4xx/5xx", e.status),
        ("unsent", e.unsent),
    ];
    let found: Vec<String> =
        kinds.iter().filter(|(_, n)| *n > 0).map(|(kind, n)| format!("{kind} {n}")).collect();
    if found.is_empty() {
        "no errors".to_string()
    } else {
        format!("errors: {}", found.join(", "))
    }
}

/// `done / of`, between 0 and 1 (0 when `of` is not positive).
fn ratio(done: f64, of: f64) -> f64 {
    if of > 0.0 {
        (done / of).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// `[=====>    ]` with `cells` cells between the brackets, `done` (0 to 1)
/// of them filled; a full bar has no arrow head.
pub fn bar(done: f64, cells: usize) -> String {
    let filled = ((done.clamp(0.0, 1.0) * cells as f64).floor() as usize).min(cells);
    let mut bar = String::with_capacity(cells + 2);
    bar.push('[');
    bar.push_str(&"=".repeat(filled));
    if filled < cells {
        bar.push('>');
        bar.push_str(&" ".repeat(cells - filled - 1));
    }
    bar.push(']');
    bar
}

/// `line` cut to at most `width - 1` characters.
fn fit(line: &str, width: usize) -> String {
    line.chars().take(width.saturating_sub(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paced() -> Figures {
        Figures {
            elapsed: Duration::from_millis(4_200),
            planned: Some(Duration::from_secs(10)),
            requests: 41_876,
            rate: 9_987.4,
            target_rate: Some(10_000.0),
            p50_us: Some(1_210),
            p99_us: Some(8_400),
            errors: Errors { timeout: 3, status: 20, ..Errors::default() },
            lag_p99_us: Some(12_000),
            ..Figures::default()
        }
    }

    #[test]
    fn bars() {
        assert_eq!(bar(0.0, 10), "[>         ]");
        assert_eq!(bar(0.42, 10), "[====>     ]");
        assert_eq!(bar(1.0, 10), "[==========]");
        // Out of range is clamped; no cells is just the brackets.
        assert_eq!(bar(7.0, 4), "[====]");
        assert_eq!(bar(-1.0, 4), "[>   ]");
        assert_eq!(bar(0.5, 0), "[]");
    }

    #[test]
    fn a_paced_run() {
        let [first, second] = lines(&paced(), 200);
        assert_eq!(
            first,
            "[========>           ]  4.2s / 10.0s  41876 requests  9987/s of 10000/s"
        );
        assert_eq!(
            second,
            "latency p50 1.21ms  p99 8.40ms  errors: timeout 3, 4xx/5xx 20  \
             lag p99 12.00ms (sends late)"
        );
    }

    #[test]
    fn a_closed_loop_bounded_by_requests_before_any_response() {
        let figures = Figures {
            elapsed: Duration::from_millis(300),
            planned_requests: Some(1000),
            ..Figures::default()
        };
        let [first, second] = lines(&figures, 80);
        assert_eq!(first, "[>                   ]  0.3s  0 / 1000 requests  0/s");
        assert_eq!(second, "latency p50 -  p99 -  no errors");
    }

    #[test]
    fn a_stall_shows_as_it_happens() {
        let stall = Stall {
            quiet_for: Duration::from_millis(1_400),
            oldest_waiting: Duration::from_millis(1_650),
        };
        let figures = Figures { stall: Some(stall), lag_p99_us: None, ..paced() };
        let [_, second] = lines(&figures, 200);
        assert_eq!(
            second,
            "STALLED: nothing answered for 1.40s, oldest waiting 1.65s  (so far p50 1.21ms  \
             p99 8.40ms)  errors: timeout 3, 4xx/5xx 20"
        );
    }

    #[test]
    fn before_the_measured_run() {
        let s = Duration::from_secs_f64;
        assert_eq!(before_line(Before::Connecting, 80), "opening connections");
        assert_eq!(
            before_line(Before::Starting { left: s(4.21) }, 80),
            "connected; starting in 4.2s (--start-at)"
        );
        assert_eq!(
            before_line(Before::WarmingUp { left: s(7.5), of: s(10.0) }, 80),
            "[=====>              ]  warming up: 7.5s of 10.0s left (not counted)"
        );
        assert_eq!(before_line(Before::Connecting, 8), "opening");
    }

    #[test]
    fn lines_are_cut_to_the_terminal_and_the_bar_shrinks() {
        for width in [0, 1, 10, 40, 79, 80, 120] {
            for line in lines(&paced(), width) {
                assert!(line.chars().count() < width.max(1), "{width}: {line:?}");
            }
        }
        let [first, _] = lines(&paced(), 40);
        assert_eq!(first, "[====>     ]  4.2s / 10.0s  41876 reque");
        // Without a bound there is no bar.
        let figures = Figures { planned: None, ..paced() };
        assert!(lines(&figures, 80)[0].starts_with("4.2s  41876 requests"));
    }
}
