//! Counter-based random numbers: every draw is a pure function of the
//! seed and a position (`Draws::at`), never of what was drawn before, so
//! any thread on any machine gets the same value for the same position.
//! That is what lets threads and shards each compute their own part of one
//! random plan without talking to each other.
//!
//! The samplers (exponential, normal, gamma, beta) are the textbook ones:
//! inversion, Box–Muller, Marsaglia–Tsang.

/// SplitMix64's finalizer: a bijective mix of 64 bits (Steele, Lea, Flood).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A stream of uniform numbers for one position: `(seed, a, b)` names it.
#[derive(Clone, Copy, Debug)]
pub struct Draws {
    key: u64,
    counter: u64,
}

impl Draws {
    pub fn at(seed: u64, a: u64, b: u64) -> Draws {
        let key = mix(mix(seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_add(a) ^ mix(b.wrapping_add(1)));
        Draws { key, counter: 0 }
    }

    /// 64 uniform bits.
    pub fn bits(&mut self) -> u64 {
        self.counter += 1;
        mix(self.key.wrapping_add(self.counter.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
    }

    /// Uniform in (0, 1), never 0 or 1 (safe to take logarithms of).
    pub fn uniform(&mut self) -> f64 {
        ((self.bits() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponential with mean 1.
    pub fn exponential(&mut self) -> f64 {
        -self.uniform().ln()
    }

    /// Standard normal.
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// Gamma with this shape (at least 1) and scale 1 (Marsaglia–Tsang).
    pub fn gamma(&mut self, shape: f64) -> f64 {
        debug_assert!(shape >= 1.0);
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.uniform();
            // ln(v) through ln_1p keeps the test exact for large shapes,
            // where v is within a hair of 1.
            if u.ln() < 0.5 * x * x + d * (1.0 - v + (v - 1.0).ln_1p()) {
                return d * v;
            }
        }
    }

    /// Beta(m, m): the share of the first half of 2m exponential gaps in
    /// their sum. Beyond a million the normal law is exact to far below
    /// f64's resolution of the result (the beta's excess kurtosis is
    /// -6/(2m+3) and it has no skew).
    pub fn symmetric_beta(&mut self, m: f64) -> f64 {
        if m > 1e6 {
            let sd = (1.0 / (4.0 * (2.0 * m + 1.0))).sqrt();
            return (0.5 + sd * self.normal()).clamp(f64::MIN_POSITIVE, 1.0 - f64::EPSILON);
        }
        let x = self.gamma(m);
        let y = self.gamma(m);
        x / (x + y)
    }
}

/// A seed for a run that was not given one: from the clock and the
/// process, printed so the run can be repeated.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // Small enough to type back on a command line.
    mix(nanos ^ u64::from(std::process::id())) % 1_000_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_and_variance(values: &[f64]) -> (f64, f64) {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        (mean, values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0))
    }

    #[test]
    fn the_same_position_gives_the_same_numbers() {
        let a: Vec<f64> = (0..5).map(|_| Draws::at(7, 1, 2).uniform()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut draws = Draws::at(7, 1, 2);
        let stream: Vec<f64> = (0..3).map(|_| draws.uniform()).collect();
        assert_eq!(stream[0], a[0]);
        assert!(stream[0] != stream[1] && stream[1] != stream[2]);
        assert!(Draws::at(7, 1, 3).uniform() != a[0] && Draws::at(8, 1, 2).uniform() != a[0]);
    }

    #[test]
    fn samplers_have_their_moments() {
        let n = 100_000;
        let mut draws = Draws::at(1, 2, 3);
        let uniform: Vec<f64> = (0..n).map(|_| draws.uniform()).collect();
        assert!(uniform.iter().all(|&u| u > 0.0 && u < 1.0));
        let (m, v) = mean_and_variance(&uniform);
        assert!((m - 0.5).abs() < 0.005 && (v - 1.0 / 12.0).abs() < 0.002, "{m} {v}");
        let exponential: Vec<f64> = (0..n).map(|_| draws.exponential()).collect();
        let (m, v) = mean_and_variance(&exponential);
        assert!((m - 1.0).abs() < 0.02 && (v - 1.0).abs() < 0.05, "{m} {v}");
        let normal: Vec<f64> = (0..n).map(|_| draws.normal()).collect();
        let (m, v) = mean_and_variance(&normal);
        assert!(m.abs() < 0.02 && (v - 1.0).abs() < 0.03, "{m} {v}");
        for shape in [1.0, 32.0, 1e5] {
            let gamma: Vec<f64> = (0..20_000).map(|_| draws.gamma(shape)).collect();
            let (m, v) = mean_and_variance(&gamma);
            assert!((m / shape - 1.0).abs() < 0.03, "gamma({shape}) mean {m}");
            assert!((v / shape - 1.0).abs() < 0.06, "gamma({shape}) variance {v}");
        }
        for m in [32.0, 1e7] {
            let beta: Vec<f64> = (0..20_000).map(|_| draws.symmetric_beta(m)).collect();
            let (mean, v) = mean_and_variance(&beta);
            let expected = 1.0 / (4.0 * (2.0 * m + 1.0));
            assert!((mean - 0.5).abs() < 0.01, "beta({m}) mean {mean}");
            assert!((v / expected - 1.0).abs() < 0.06, "beta({m}) variance {v} vs {expected}");
        }
    }
}
