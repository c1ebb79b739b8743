//! The parsers of the command line: the URL, numbers with units (and their
//! formatters), and the option grammar.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use crate::cli::{self, Command};
use crate::config::Mode;
use crate::error::Error;
use crate::search::climb::Climb;
use crate::target::{Scheme, Target};
use crate::units;

use super::input::Input;

/// `Target::parse` on any text. An accepted URL has a host, a port and a
/// path starting with `/`, and the URL rebuilt from its parts
/// (`scheme://host_header path`) parses to the same parts.
pub fn url(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(target) = Target::parse(&text) else { return };
    assert_eq!(target.url, text);
    assert!(!target.host.is_empty() && target.port > 0 && target.path.starts_with('/'));
    let https = target.scheme_name.to_ascii_lowercase().starts_with("https");
    assert_eq!(target.scheme == Scheme::Https, https);
    let rebuilt = format!("{}://{}{}", target.scheme_name, target.host_header(), target.path);
    let again = Target::parse(&rebuilt)
        .unwrap_or_else(|error| panic!("{text:?} rebuilt as {rebuilt:?}: {error}"));
    // The rebuilt URL has no user:password (it is not part of the Host).
    let same = Target { url: target.url.clone(), userinfo: target.userinfo.clone(), ..again };
    assert_eq!(same, target, "rebuilt as {rebuilt:?}");
}

/// A unit's size in the parser's terms, from the end of a formatted value.
fn scale_of(formatted: &str, units: &[(&str, f64)]) -> f64 {
    units
        .iter()
        .filter(|(unit, _)| formatted.ends_with(unit))
        .max_by_key(|(unit, _)| unit.len())
        .map_or(1.0, |(_, scale)| *scale)
}

/// The unit parsers on any text, the formatters on any number: no panic,
/// and parsing what was printed gives back the number printed, to its two
/// decimals (counts with SI units, times in microseconds).
pub fn units(data: &[u8]) {
    let mut input = Input::new(data);
    let value = f64::from_bits(input.u64());
    let decimals = input.below(24);
    let width = 2 + input.below(30);
    let text = String::from_utf8_lossy(input.rest());

    let metric = units::parse_metric(&text);
    if let Ok(metric) = metric {
        assert!(metric >= 0.0, "{text:?} read as {metric}");
    }
    if let Ok(count) = units::parse_count(&text) {
        let metric = metric.expect("a count is a metric");
        assert!(metric.fract() == 0.0 && (count as f64 - metric).abs() <= metric * 1e-15);
    }
    let _ = units::parse_time(&text);

    for formatted in [
        units::format_binary(value),
        units::format_metric(value),
        units::format_time_us(value),
        units::format_time_s(value),
        units::c_float(value, decimals),
    ] {
        let padded = units::pad_units(&formatted, width);
        assert!(padded.chars().count() >= width, "{formatted:?} padded to {width}: {padded:?}");
    }
    // Negative numbers (-0.0 too: `-0.00`, as C prints it) do not read back.
    if !(value.is_sign_positive() && value < 1e30) {
        return;
    }
    let formatted = units::format_metric(value);
    let scale = scale_of(&formatted, &[("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)]);
    let read = units::parse_metric(&formatted).expect("a formatted count reads back");
    assert!((read - value).abs() <= 0.0051 * scale + value * 1e-12, "{value} -> {formatted}");
    if value < 1e15 {
        let formatted = units::format_time_us(value);
        let scale = scale_of(&formatted, &[("us", 1.0), ("ms", 1e3), ("s", 1e6), ("m", 6e7)]);
        let read = units::parse_time(&formatted).expect("a formatted time reads back");
        let read_us = read.as_secs_f64() * 1e6;
        assert!((read_us - value).abs() <= 0.0051 * scale + 0.002, "{value} -> {formatted}");
    }
}

/// The arguments in `data`: NUL-separated, as they never hold a NUL.
pub fn arguments(data: &[u8]) -> Vec<OsString> {
    if data.is_empty() {
        return Vec::new();
    }
    data.split(|&byte| byte == 0).map(|arg| OsString::from_vec(arg.to_vec())).collect()
}

/// `cli::parse` on any argument vector: a command or a usage error, never
/// another error, and what it accepts is in range.
pub fn command_line(data: &[u8]) {
    match cli::parse(arguments(data)) {
        Ok(Command::Bench { bench, .. }) => {
            let config = &bench.config;
            assert!(config.threads >= 1 && config.connections >= config.threads);
            // No duration: a closed loop bounded by -n alone.
            assert!(!config.duration.is_some_and(|d| d.is_zero()) && !config.timeout.is_zero());
            assert!(config.duration.is_some() || config.requests.is_some());
            assert!((1..=5).contains(&config.digits));
            if let Mode::Paced(plan) = &config.mode {
                let rates = std::iter::once(plan.rate).chain(plan.stages.iter().map(|s| s.rate));
                assert!(rates.into_iter().all(|rate| rate.is_finite() && rate >= 0.0));
                assert!(config.target_rate().is_some_and(f64::is_finite));
            }
            assert!(config
                .headers
                .iter()
                .all(|(name, value)| { !name.is_empty() && !value.contains(['\r', '\n']) }));
        }
        Ok(Command::Search(args)) => {
            let config = &args.bench.config;
            assert!(config.threads >= 1 && config.connections >= config.threads);
            assert!(args.max_connections >= config.connections);
            let rates = match &args.climb {
                Climb::Search { from, to, resolution } => {
                    assert!(*resolution > 0.0 && *resolution < 1.0);
                    vec![*from].into_iter().chain(*to).collect()
                }
                Climb::Ladder(rates) => rates.clone(),
            };
            assert!(!rates.is_empty() && rates.iter().all(|r| r.is_finite() && *r > 0.0));
        }
        Ok(Command::Serve(options)) => assert!(options.threads >= 1),
        Ok(Command::Merge(args)) => assert!(!args.files.is_empty()),
        Ok(Command::Report(args)) => assert_eq!(args.files.len(), 1),
        Ok(Command::Compare(args)) => {
            assert!(args.noise.percent.is_finite() && args.noise.percent >= 0.0);
            assert!(args.noise.latency_us >= 0.0);
        }
        Ok(
            Command::Demo { .. } | Command::Help(_) | Command::Version(_) | Command::Generated(_),
        ) => {}
        Err(Error::Usage(message)) => assert!(!message.is_empty()),
        Err(other) => panic!("not a usage error: {other:?}"),
    }
}
