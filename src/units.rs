//! Numbers with units, both ways: reading `-c 1k`, `-d 1.5s`, `-R 0.5`
//! (wrk's `src/units.c: scan_metric/scan_time`, extended with fractions and
//! sub-second units) and printing `635.91us`, `56.20k`, `17.76GB`
//! (wrk's `format_units`, byte for byte).

use std::time::Duration;

/// A number argument that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(pub String);

impl std::fmt::Display for UnitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Splits `12.5ms` into (12.5, "ms"); whitespace between them is allowed as
/// in wrk. The number may have an exponent (`1e12`, `2.5E-3`): no unit
/// starts with `e`.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let mantissa = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let end = mantissa + exponent_len(&text[mantissa..]);
    let (number, unit) = text.split_at(end);
    if number.is_empty() || number == "." {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    Some((value, unit.trim_start()))
}

/// The length of an exponent (`e12`, `E-3`, `e+6`) at the start of `text`,
/// 0 if there is none.
fn exponent_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    if !matches!(bytes.first(), Some(b'e' | b'E')) {
        return 0;
    }
    let sign = usize::from(matches!(bytes.get(1), Some(b'+' | b'-')));
    let digits = bytes[1 + sign..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        0
    } else {
        1 + sign + digits
    }
}

/// Reads a count or rate with an optional SI suffix, case-insensitive as in
/// wrk: `k` = 10^3, `M`/`m` = 10^6, `G` 10^9, `T` 10^12, `P` 10^15.
/// Fractions are allowed (`-R 0.5`, `1.5k`).
pub fn parse_metric(text: &str) -> Result<f64, UnitError> {
    let bad = || UnitError(format!("'{text}' is not a number (examples: 10, 1.5k, 2M)"));
    let (value, unit) = split_number(text).ok_or_else(bad)?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        "p" => 1e15,
        _ => return Err(bad()),
    };
    Ok(value * scale)
}

/// Reads a whole count (`-c`, `-t`): like [`parse_metric`] but the result
/// must be a non-negative integer that fits in `usize`.
pub fn parse_count(text: &str) -> Result<usize, UnitError> {
    let value = parse_metric(text)?;
    if value.fract() != 0.0 || value > usize::MAX as f64 {
        return Err(UnitError(format!("'{text}' is not a whole number")));
    }
    Ok(value as usize)
}

/// Reads a duration: no unit or `s` = seconds, `m` minutes, `h` hours (wrk),
/// plus `ms`, `us` and fractions (`500ms`, `1.5s`). Case-insensitive, so
/// `1M` is one minute, as in wrk.
pub fn parse_time(text: &str) -> Result<Duration, UnitError> {
    let bad = || UnitError(format!("'{text}' is not a duration (examples: 30s, 500ms, 1.5m, 2h)"));
    let (value, unit) = split_number(text).ok_or_else(bad)?;
    let seconds = match unit.to_ascii_lowercase().as_str() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86400.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| bad())
}

/// One of wrk's unit ladders.
struct Units {
    scale: f64,
    base: &'static str,
    units: &'static [&'static str],
}

const TIME_US: Units = Units { scale: 1000.0, base: "us", units: &["ms", "s"] };
const TIME_S: Units = Units { scale: 60.0, base: "s", units: &["m", "h"] };
const BINARY: Units = Units { scale: 1024.0, base: "", units: &["K", "M", "G", "T", "P"] };
const METRIC: Units = Units { scale: 1000.0, base: "", units: &["k", "M", "G", "T", "P"] };

/// wrk's `format_units`: divide while the amount is at least 0.85 of the
/// scale and a *next* unit exists, so the last unit of each ladder is never
/// reached (that is how wrk prints `1000.00T`, and `60.00m` for an hour).
fn format_units(n: f64, units: &Units, decimals: usize) -> String {
    if n.is_nan() {
        return UNDEFINED.to_string();
    }
    let mut amount = n;
    let mut unit = units.base;
    let mut i = 0;
    while i + 1 < units.units.len() && amount >= units.scale * 0.85 {
        amount /= units.scale;
        unit = units.units[i];
        i += 1;
    }
    format!("{}{unit}", c_float(amount, decimals))
}

/// How a figure that does not exist prints (the mean of no samples): wrk
/// prints glibc's `-nan`, pace a dash, as the JSON has `null`.
pub const UNDEFINED: &str = "-";

/// Formats like C's `%.Nf`, with [`UNDEFINED`] for 0/0.
pub fn c_float(value: f64, decimals: usize) -> String {
    if value.is_nan() {
        UNDEFINED.to_string()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{value:.decimals$}")
    }
}

/// Bytes in binary units printed as wrk prints them (`512.00`, `17.76G`);
/// callers add the `B`.
pub fn format_binary(n: f64) -> String {
    format_units(n, &BINARY, 2)
}

/// A count or rate in SI units (`335.21`, `56.20k`).
pub fn format_metric(n: f64) -> String {
    format_units(n, &METRIC, 2)
}

/// A time given in microseconds (`635.91us`, `1.56ms`, `5.01s`, `1.00m`).
pub fn format_time_us(n: f64) -> String {
    if n >= 1_000_000.0 {
        format_units(n / 1_000_000.0, &TIME_S, 2)
    } else {
        format_units(n, &TIME_US, 2)
    }
}

/// A rate for tables and sentences: whole requests per second with
/// thousands separated (`23,400`) from 10/s, two decimals below (`2.50`).
pub fn format_rate(rate: f64) -> String {
    if !(10.0..1e18).contains(&rate) {
        return format!("{rate:.2}");
    }
    let digits = format!("{:.0}", rate.round());
    let mut grouped = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// A time given in seconds, no decimals (`30s`, `1m`), for the header.
pub fn format_time_s(n: f64) -> String {
    format_units(n, &TIME_S, 0)
}

/// A wall-clock time in RFC 3339, UTC (`2026-11-23T10:00:00.25Z`).
pub fn format_rfc3339(at: std::time::SystemTime) -> String {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::from(at).format(&Rfc3339).unwrap_or_else(|_| format!("{at:?}"))
}

/// wrk's `print_units`: the formatted value right-aligned and truncated to
/// `width - pad`, then `pad` spaces, where `pad` is 2 minus the number of
/// letters among the last two characters. Numbers line up whatever the unit.
pub fn pad_units(formatted: &str, width: usize) -> String {
    let bytes = formatted.as_bytes();
    let mut pad = 2;
    if bytes.last().is_some_and(|c| c.is_ascii_alphabetic()) {
        pad -= 1;
    }
    if bytes.len() >= 2 && bytes[bytes.len() - 2].is_ascii_alphabetic() {
        pad -= 1;
    }
    let width = width - pad;
    let shown: String = formatted.chars().take(width).collect();
    format!("{shown:>width$}{}", &"  "[..pad])
}

/// A duration in the largest unit it has at least one of, for people:
/// `56 years`, `3 hours`, `1 minute`, `2.5 seconds`.
pub fn format_for_people(duration: Duration) -> String {
    const UNITS: [(&str, u64); 4] =
        [("year", 365 * 24 * 3600 + 6 * 3600), ("day", 24 * 3600), ("hour", 3600), ("minute", 60)];
    let seconds = duration.as_secs();
    for (unit, length) in UNITS {
        let n = seconds / length;
        if n > 0 {
            return format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
        }
    }
    format!("{:.1} seconds", duration.as_secs_f64())
}

/// C's `%<width>.<decimals>f`: right-aligned, never truncated, with `inf`
/// as glibc spells it and a dash for an undefined figure (glibc: `-nan`).
pub fn c_fixed(value: f64, width: usize, decimals: usize) -> String {
    format!("{:>width$}", c_float(value, decimals))
}

/// `n / seconds`, 0 for a run that took no measurable time.
pub fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_for_people() {
        let secs = Duration::from_secs;
        assert_eq!(format_for_people(Duration::from_millis(2500)), "2.5 seconds");
        assert_eq!(format_for_people(secs(60)), "1 minute");
        assert_eq!(format_for_people(secs(3 * 3600 + 59)), "3 hours");
        assert_eq!(format_for_people(secs(2 * 86400)), "2 days");
        assert_eq!(format_for_people(secs(400 * 86400)), "1 year");
    }

    #[test]
    fn metric_arguments() {
        assert_eq!(parse_metric("10").unwrap(), 10.0);
        assert_eq!(parse_metric("1k").unwrap(), 1000.0);
        assert_eq!(parse_metric("1K").unwrap(), 1000.0);
        assert_eq!(parse_metric("2M").unwrap(), 2e6);
        assert_eq!(parse_metric("1m").unwrap(), 1e6);
        assert_eq!(parse_metric("1.5k").unwrap(), 1500.0);
        assert_eq!(parse_metric("0.5").unwrap(), 0.5);
        assert_eq!(parse_metric("3 k").unwrap(), 3000.0);
        for bad in ["", "k", "-1", "1x", "1kk", "1.2.3", ".", "1e", "1e+", "e3", "1e3.5"] {
            assert!(parse_metric(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_metric("1e12").unwrap(), 1e12);
        assert_eq!(parse_metric("2.5E-1").unwrap(), 0.25);
        assert_eq!(parse_metric("1e+3k").unwrap(), 1e6);
        assert_eq!(parse_count("2k").unwrap(), 2000);
        assert_eq!(parse_count("1e4").unwrap(), 10_000);
        assert!(parse_count("1.5").is_err());
    }

    #[test]
    fn time_arguments() {
        assert_eq!(parse_time("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_time("5e-1s").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_time("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_time("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_time("2M").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_time("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_time("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_time("500MS").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_time("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_time("250us").unwrap(), Duration::from_micros(250));
        for bad in ["", "s", "-1s", "1x", "1sec", "ms"] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    /// The worked values of the reference (wrk-family.md section 2.2).
    #[test]
    fn formats_like_wrk() {
        assert_eq!(format_time_us(635.91), "635.91us");
        assert_eq!(format_time_us(849.0), "849.00us");
        assert_eq!(format_time_us(850.0), "0.85ms");
        assert_eq!(format_time_us(999_999.0), "1000.00ms");
        assert_eq!(format_time_us(1e6), "1.00s");
        assert_eq!(format_time_us(50.9e6), "50.90s");
        assert_eq!(format_time_us(51e6), "0.85m");
        assert_eq!(format_time_us(3600e6), "60.00m");
        assert_eq!(format_metric(335.21), "335.21");
        assert_eq!(format_metric(850.0), "0.85k");
        assert_eq!(format_metric(56200.0), "56.20k");
        assert_eq!(format_metric(999_999.0), "1.00M");
        assert_eq!(format_metric(1e15), "1000.00T");
        assert_eq!(format_binary(870.0), "870.00");
        assert_eq!(format_binary(871.0), "0.85K");
        assert_eq!(format_binary(17.76 * 1024.0 * 1024.0 * 1024.0), "17.76G");
        assert_eq!(format_time_s(30.0), "30s");
        assert_eq!(format_time_s(50.0), "50s");
        assert_eq!(format_time_s(51.0), "1m");
        assert_eq!(format_time_s(90.0), "2m");
        assert_eq!(format_time_s(3600.0), "60m");
        assert_eq!(c_float(f64::NAN, 2), "-");
        assert_eq!(format_time_us(f64::NAN), "-");
        let at = std::time::UNIX_EPOCH + Duration::from_millis(1_795_428_000_250);
        assert_eq!(format_rfc3339(at), "2026-11-23T10:00:00.25Z");
    }

    #[test]
    fn pads_like_wrk() {
        assert_eq!(pad_units("335.21", 10), "  335.21  ");
        assert_eq!(pad_units("1.56s", 8), "  1.56s ");
        assert_eq!(pad_units("6.67ms", 8), "  6.67ms");
        assert_eq!(pad_units("635.91us", 8), "635.91us");
        assert_eq!(pad_units("1000.00ms", 8), "1000.00m");
    }

    #[test]
    fn rates_for_people() {
        assert_eq!(format_rate(23_400.0), "23,400");
        assert_eq!(format_rate(1_234_567.4), "1,234,567");
        assert_eq!(format_rate(999.6), "1,000");
        assert_eq!(format_rate(10.0), "10");
        assert_eq!(format_rate(2.5), "2.50");
    }

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
