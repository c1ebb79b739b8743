//! Reports of a finished run. [`text`] is the wrk/wrk2 text report;
//! [`spectrum`] is HdrHistogram_c's statistics and "Detailed Percentile
//! spectrum", which the text report prints and other outputs reuse.
//! [`periodic`] is the text report of one `-p` period, [`json`] the JSON
//! report, [`hlog`] the HdrHistogram interval log and [`series`] wrx's
//! time series and raw histogram. [`diagnose`] says what went wrong in a
//! paced run, for the text and the JSON report alike. [`html`] is the
//! self-contained HTML page with charts.

pub mod diagnose;
pub mod hlog;
pub mod html;
pub mod json;
pub mod periodic;
pub mod plan;
pub mod reached;
pub mod series;
pub mod spectrum;
pub mod targets;
pub mod text;

use crate::units::c_float;

/// C's `%<width>.<decimals>f`: right-aligned, never truncated, with `inf`
/// as glibc spells it and a dash for an undefined figure (glibc: `-nan`).
pub(crate) fn c_fixed(value: f64, width: usize, decimals: usize) -> String {
    format!("{:>width$}", c_float(value, decimals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_printf() {
        assert_eq!(c_fixed(93.6912, 8, 2), "   93.69");
        assert_eq!(c_fixed(f64::NAN, 8, 2), "       -");
        assert_eq!(c_fixed(f64::INFINITY, 12, 2), "         inf");
        assert_eq!(c_fixed(12345.678, 4, 1), "12345.7");
        // glibc rounds exact ties to even, and so does Rust.
        assert_eq!(c_fixed(0.125, 4, 2), "0.12");
    }
}
