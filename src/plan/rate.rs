//! The planned rate over the run, and its integral: how many requests the
//! plan wants by a given time (`units_at`), and when it has wanted a given
//! number (`time_of`), both in closed form, so intended times never drift.
//!
//! A curve is a constant rate, or stages as k6's ramping-arrival-rate has
//! them: each stage moves the rate linearly from where the previous one
//! ended to its own target over its duration (the first from the starting
//! rate), a stage with the same start and end rate is constant.

/// One stretch of the curve: the rate moves linearly from `from` to `to`
/// over `duration` seconds, starting at `start` seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    start: f64,
    duration: f64,
    from: f64,
    to: f64,
    /// Requests the plan wanted before this segment.
    units_before: f64,
}

impl Segment {
    fn end(&self) -> f64 {
        self.start + self.duration
    }

    fn units(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.duration
    }

    /// Requests wanted in the first `x` seconds of the segment.
    fn units_within(&self, x: f64) -> f64 {
        self.from * x + (self.to - self.from) * x * x / (2.0 * self.duration)
    }

    /// Seconds into the segment at which `u` requests were wanted: the
    /// root of slope/2·x² + from·x = u, in the form that stays exact when
    /// the slope is zero or tiny.
    fn time_within(&self, u: f64) -> f64 {
        let slope = (self.to - self.from) / self.duration;
        let root = (self.from * self.from + 2.0 * slope * u).max(0.0).sqrt();
        let denominator = self.from + root;
        if denominator > 0.0 {
            2.0 * u / denominator
        } else {
            0.0
        }
    }
}

/// The planned rate over time, in requests per second and seconds.
#[derive(Clone, Debug, PartialEq)]
pub enum RateCurve {
    /// The same rate for ever.
    Constant(f64),
    /// Segments back to back from time 0; the plan ends with the last.
    Segments(Vec<Segment>),
}

impl RateCurve {
    /// A curve that holds `start_rate` for `hold` seconds (a warm-up), then
    /// follows `stages` (duration in seconds, target rate), each from the
    /// rate the one before it ended at.
    pub fn stages(start_rate: f64, hold: f64, stages: &[(f64, f64)]) -> RateCurve {
        let mut segments = Vec::with_capacity(stages.len() + 1);
        let mut push = |duration: f64, from: f64, to: f64| {
            let (start, units_before) = segments
                .last()
                .map_or((0.0, 0.0), |s: &Segment| (s.end(), s.units_before + s.units()));
            if duration > 0.0 {
                segments.push(Segment { start, duration, from, to, units_before });
            }
        };
        push(hold, start_rate, start_rate);
        let mut rate = start_rate;
        for &(duration, target) in stages {
            push(duration, rate, target);
            rate = target;
        }
        RateCurve::Segments(segments)
    }

    /// The rate at time 0.
    pub fn starting_rate(&self) -> f64 {
        match self {
            RateCurve::Constant(rate) => *rate,
            RateCurve::Segments(segments) => segments.first().map_or(0.0, |s| s.from),
        }
    }

    /// Requests wanted by time `t` (seconds): the integral of the rate.
    pub fn units_at(&self, t: f64) -> f64 {
        if t <= 0.0 {
            return 0.0;
        }
        match self {
            RateCurve::Constant(rate) => rate * t,
            RateCurve::Segments(segments) => {
                let i = segments.partition_point(|s| s.end() <= t);
                match segments.get(i) {
                    Some(s) => s.units_before + s.units_within(t - s.start),
                    None => segments.last().map_or(0.0, |s| s.units_before + s.units()),
                }
            }
        }
    }

    /// When `u` requests had been wanted (seconds); None if the curve ends
    /// before that.
    pub fn time_of(&self, u: f64) -> Option<f64> {
        if u <= 0.0 {
            return Some(0.0);
        }
        match self {
            RateCurve::Constant(rate) => Some(u / rate),
            RateCurve::Segments(segments) => {
                let i = segments.partition_point(|s| s.units_before + s.units() < u);
                let s = segments.get(i)?;
                Some((s.start + s.time_within(u - s.units_before)).min(s.end()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn a_constant_rate_is_linear() {
        let curve = RateCurve::Constant(250.0);
        assert_eq!(curve.units_at(2.0), 500.0);
        assert_eq!(curve.time_of(500.0), Some(2.0));
        assert_eq!(curve.units_at(-1.0), 0.0);
        assert_eq!(curve.starting_rate(), 250.0);
    }

    #[test]
    fn stages_ramp_linearly_from_the_previous_rate() {
        // Hold 100/s for 1 s, ramp to 300/s over 2 s, hold for 1 s, then
        // down to 0 over 1 s.
        let curve = RateCurve::stages(100.0, 1.0, &[(2.0, 300.0), (1.0, 300.0), (1.0, 0.0)]);
        for (t, units) in [
            (0.5, 50.0),
            (1.0, 100.0),
            // The ramp: 100 x + 50 x^2.
            (2.0, 100.0 + 100.0 + 50.0),
            (3.0, 100.0 + 400.0),
            (4.0, 100.0 + 400.0 + 300.0),
            (5.0, 100.0 + 400.0 + 300.0 + 150.0),
            (9.0, 950.0),
        ] {
            assert!(close(curve.units_at(t), units), "units at {t}: {}", curve.units_at(t));
            if t <= 5.0 {
                assert!(close(curve.time_of(units).unwrap(), t), "time of {units}");
            }
        }
        // Past the end nothing more is wanted.
        assert_eq!(curve.time_of(950.5), None);
    }

    #[test]
    fn a_ramp_from_zero_and_zero_stages() {
        let curve = RateCurve::stages(0.0, 0.0, &[(10.0, 100.0), (5.0, 0.0), (5.0, 0.0)]);
        assert_eq!(curve.starting_rate(), 0.0);
        // The first request's worth is there after sqrt(2 / 10) s.
        assert!(close(curve.time_of(1.0).unwrap(), 0.2f64.sqrt()));
        assert!(close(curve.units_at(10.0), 500.0));
        // The zero stage adds nothing; the plan is over at 750.
        assert!(close(curve.units_at(20.0), 750.0));
        assert_eq!(curve.time_of(750.1), None);
        // A fraction of a request per second works.
        let slow = RateCurve::stages(0.5, 0.0, &[(4.0, 0.5)]);
        assert!(close(slow.time_of(1.0).unwrap(), 2.0));
    }

    #[test]
    fn time_of_inverts_units_at_everywhere() {
        let curve = RateCurve::stages(3.0, 0.5, &[(1.0, 7000.0), (2.0, 7000.0), (0.5, 10.0)]);
        let mut t = 0.0;
        while t < 4.0 {
            let u = curve.units_at(t);
            if u > 0.0 {
                assert!((curve.time_of(u).unwrap() - t).abs() < 1e-9, "t {t}");
            }
            t += 0.01;
        }
    }
}
