//! The stats userdata passed to `done(summary, latency, requests)` (wrk's
//! `wrk.stats` metatable: `script_stats_index`, `script_stats_call`,
//! `script_stats_len`, `script_stats_percentile`), and the `summary` table
//! (`script_summary`, `script_errors`).
//!
//! wrk and wrk2 disagree on these objects (reference 4.5); pace gives the
//! union, each access with the meaning its variant gave it:
//!
//! | access | meaning |
//! |---|---|
//! | `.min .max .mean .stdev` | latency: HdrHistogram_c's `hdr_min`, `hdr_max`, `hdr_mean`, `hdr_stddev` (wrk2); requests: exact over the samples, sample stdev (wrk) |
//! | `:percentile(p)` | `hdr_value_at_percentile` |
//! | `s[i]` | value at percentile `100·i/#s` (wrk2) |
//! | `s(i)` | the i-th distinct value (1-based, ascending) and its count; out of range: `0` and the number of distinct values (wrk) |
//! | `#s` | the number of samples (wrk2; wrk gave the number of distinct values, which only makes sense together with `s(i)`, whose out-of-range answer gives it) |
//!
//! | `s.other` | the string `"other"`: wrk's index function hands back its key when nothing matches, and scripts rely on it |
//!
//! Empty statistics give 0 everywhere (wrk printed 2^64-1 and `nan`).

use hdrhistogram::Histogram;
use mlua::{Lua, MetaMethod, Table, UserData, UserDataFields, UserDataMethods, Value};

use crate::stats::spectrum;
use crate::stats::{latency_histogram, RunResult};

/// One distribution: a histogram for the percentiles, with its summary.
pub struct StatsObject {
    histogram: Histogram<u64>,
    min: f64,
    max: f64,
    mean: f64,
    stdev: f64,
}

impl StatsObject {
    /// Latency in microseconds, from the corrected histogram, with
    /// HdrHistogram_c's statistics (wrk2).
    pub fn latency(histogram: &Histogram<u64>) -> StatsObject {
        let zero_if_empty = |x: f64| if histogram.is_empty() { 0.0 } else { x };
        StatsObject {
            histogram: histogram.clone(),
            min: histogram.min() as f64,
            max: histogram.max() as f64,
            mean: zero_if_empty(spectrum::mean(histogram)),
            stdev: zero_if_empty(spectrum::stddev(histogram)),
        }
    }

    /// Requests per second, one sample per thread and sampling interval,
    /// with exact statistics (wrk's `stats_mean`, `stats_stdev`).
    pub fn rates(samples: &[f64]) -> StatsObject {
        // The latency geometry (up to 8.64e10) holds any real rate.
        let mut histogram = latency_histogram(3);
        for &rate in samples {
            histogram.saturating_record(rate.round().max(0.0) as u64);
        }
        let (mean, stdev) = crate::stats::sample_mean_stdev(samples);
        let min = samples.iter().copied().reduce(f64::min).unwrap_or(0.0);
        let max = samples.iter().copied().reduce(f64::max).unwrap_or(0.0);
        StatsObject { histogram, min, max, mean, stdev }
    }

    fn percentile(&self, percentile: f64) -> u64 {
        spectrum::value_at_percentile(&self.histogram, percentile)
    }

    /// wrk2's `s[i]`: the value at percentile `100·i/#s`.
    fn at_index(&self, index: f64) -> u64 {
        if self.histogram.is_empty() {
            return 0;
        }
        // luaL_checkint truncates.
        self.percentile(100.0 * index.trunc() / self.histogram.len() as f64)
    }

    /// wrk's `s(i)`: the i-th distinct value and its count, or 0 and the
    /// number of distinct values when there is no i-th.
    fn distinct(&self, index: f64) -> (u64, u64) {
        let mut buckets = spectrum::recorded_buckets(&self.histogram);
        let found = if index >= 1.0 { buckets.nth(index as usize - 1) } else { None };
        match found {
            Some(bucket) => (bucket.highest, bucket.count),
            None => (0, spectrum::recorded_buckets(&self.histogram).count() as u64),
        }
    }
}

impl UserData for StatsObject {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("min", |_, s| Ok(s.min));
        fields.add_field_method_get("max", |_, s| Ok(s.max));
        fields.add_field_method_get("mean", |_, s| Ok(s.mean));
        fields.add_field_method_get("stdev", |_, s| Ok(s.stdev));
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("percentile", |_, s, p: f64| Ok(s.percentile(p) as f64));
        // Reached only for keys that are not fields or methods. Any other
        // key is its own value, as in wrk (whose index function returns its
        // argument when nothing matched): `requests.total .. ""` works.
        methods.add_meta_method(MetaMethod::Index, |_, s, key: Value| {
            Ok(match number(&key) {
                Some(index) => Value::Number(s.at_index(index) as f64),
                None => key,
            })
        });
        methods.add_meta_method(MetaMethod::Call, |_, s, index: Value| {
            let (value, count) = s.distinct(number(&index).unwrap_or(0.0));
            Ok((value as f64, count as f64))
        });
        methods.add_meta_method(MetaMethod::Len, |_, s, ()| Ok(s.histogram.len() as f64));
    }
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => s.to_str().ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// The `summary` table: `duration` (us), `requests`, `bytes`, and
/// `errors = {connect, read, write, status, timeout}`.
pub fn summary(lua: &Lua, result: &RunResult) -> mlua::Result<Table> {
    let total = &result.total;
    let errors = lua.create_table()?;
    for (name, count) in [
        ("connect", total.errors.connect),
        ("read", total.errors.read),
        ("write", total.errors.write),
        ("status", total.errors.status),
        ("timeout", total.errors.timeout),
    ] {
        errors.raw_set(name, count as f64)?;
    }
    let summary = lua.create_table()?;
    summary.raw_set("duration", result.runtime.as_micros() as f64)?;
    summary.raw_set("requests", total.requests as f64)?;
    summary.raw_set("bytes", total.bytes as f64)?;
    summary.raw_set("errors", errors)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Stats;
    use std::time::Duration;

    fn eval(lua: &Lua, code: &str) -> String {
        lua.load(code).eval::<String>().unwrap()
    }

    fn latency_of(values: &[u64]) -> StatsObject {
        let mut h = latency_histogram(3);
        for &v in values {
            h.record(v).unwrap();
        }
        StatsObject::latency(&h)
    }

    #[test]
    fn latency_fields_and_percentiles() {
        let lua = Lua::new();
        lua.globals().set("s", latency_of(&[100, 200, 300, 400])).unwrap();
        assert_eq!(
            eval(&lua, "return table.concat({ s.min, s.max, s.mean, #s }, ',')"),
            "100,400,250,4"
        );
        let stdev: f64 = lua.load("return s.stdev").eval().unwrap();
        assert!((stdev - 111.803).abs() < 0.001, "{stdev}");
        assert_eq!(
            eval(&lua, "return table.concat({ s:percentile(50), s:percentile(75), s:percentile(100) }, ',')"),
            "200,300,400"
        );
        // wrk2 indexing: s[i] is the value at percentile 100*i/#s.
        assert_eq!(eval(&lua, "return table.concat({ s[1], s[2], s[4] }, ',')"), "100,200,400");
        // wrk hands back an unknown key: `requests.total .. ""` works.
        assert_eq!(eval(&lua, "return s.total .. '/' .. s['x y']"), "total/x y");
    }

    #[test]
    fn calling_gives_distinct_values_and_counts() {
        let lua = Lua::new();
        lua.globals().set("s", latency_of(&[5, 5, 5, 9])).unwrap();
        let got = eval(
            &lua,
            "local a, b = s(1) local c, d = s(2) local e, f = s(3) local g, h = s(0)
             return table.concat({ a, b, c, d, e, f, g, h }, ',')",
        );
        assert_eq!(got, "5,3,9,1,0,2,0,2");
    }

    #[test]
    fn empty_statistics_are_zero() {
        let lua = Lua::new();
        lua.globals().set("s", latency_of(&[])).unwrap();
        lua.globals().set("r", StatsObject::rates(&[])).unwrap();
        assert_eq!(
            eval(&lua, "return table.concat({ s.min, s.max, s.mean, s.stdev, #s, s[1], s:percentile(99) }, ',')"),
            "0,0,0,0,0,0,0"
        );
        assert_eq!(
            eval(&lua, "return table.concat({ r.min, r.max, r.mean, r.stdev, #r }, ',')"),
            "0,0,0,0,0"
        );
    }

    #[test]
    fn rates_are_exact_with_sample_stdev() {
        let lua = Lua::new();
        lua.globals().set("r", StatsObject::rates(&[10.0, 20.0, 30.0, 40.0])).unwrap();
        assert_eq!(
            eval(
                &lua,
                "return table.concat({ r.min, r.max, r.mean, #r, r:percentile(50), r[3] }, ',')"
            ),
            "10,40,25,4,20,30"
        );
        let stdev: f64 = lua.load("return r.stdev").eval().unwrap();
        assert!((stdev - 12.909944).abs() < 1e-6, "{stdev}");
    }

    #[test]
    fn summary_fields() {
        let lua = Lua::new();
        let mut total = Stats::new(3);
        total.requests = 42;
        total.bytes = 4200;
        total.errors.connect = 1;
        total.errors.read = 2;
        total.errors.write = 3;
        total.errors.status = 4;
        total.errors.timeout = 5;
        let result = RunResult::measured(total, Duration::from_millis(1500));
        lua.globals().set("summary", summary(&lua, &result).unwrap()).unwrap();
        let e = "summary.errors";
        let got = eval(
            &lua,
            &format!(
                "return table.concat({{ summary.duration, summary.requests, summary.bytes, \
                 {e}.connect, {e}.read, {e}.write, {e}.status, {e}.timeout }}, ',')"
            ),
        );
        assert_eq!(got, "1500000,42,4200,1,2,3,4,5");
    }
}
