//! The HdrHistogram interval log (`--hlog FILE`), line for line as Java's
//! `HistogramLogWriter` writes it, so that `HistogramLogProcessor`,
//! HistogramLogAnalyzer and the Python `hdrh` reader open it:
//!
//! ```text
//! #[Logged with pace 0.1.0]
//! #[Histogram log format version 1.3]
//! #[StartTime: 1700000000.123 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]
//! #[BaseTime: 1700000000.123 (seconds since epoch)]
//! "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//! 0.000,1.000,1.327,HISTFAAAA...
//! Tag=uncorrected,0.000,1.000,0.871,HISTFAAAA...
//! ```
//!
//! One pair of lines per reporting period: the corrected latency untagged
//! (the tools read untagged lines by default, so the headline figure is
//! what they show) and the uncorrected latency tagged `uncorrected`.
//! Timestamps are seconds relative to `BaseTime` (the start of the run);
//! values are microseconds, and `Interval_Max` is in milliseconds (the max
//! divided by 1000), as Java's writer divides by its `maxValueUnitRatio`.
//!
//! The `hdrhistogram` crate has an interval log writer, but it leaves out
//! the format version and legend lines and adds a non-Java
//! `#[MaxValueDivisor...]` comment, so the few lines are written here.

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// The log format version Java's current `HistogramLogWriter` writes.
const LOG_FORMAT_VERSION: &str = "1.3";
/// Tag of the uncorrected latency lines.
pub const UNCORRECTED_TAG: &str = "uncorrected";
/// Histograms hold microseconds; `Interval_Max` is printed in milliseconds.
const MAX_VALUE_DIVISOR: f64 = 1000.0;
/// Java's legend line.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// A histogram in HdrHistogram's standard compressed form: the V2 encoding,
/// DEFLATE-compressed (zlib) behind the `0x1c849314` cookie, then base64
/// with the standard alphabet (`HISTFAAA...`). This is what every current
/// HdrHistogram library decodes (Java, C, Python `hdrh` >= 0.3, Go, Rust);
/// the JSON report's `hist` uses it too.
pub fn encode_compressed(h: &Histogram<u64>) -> io::Result<String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .map_err(|e| io::Error::other(format!("cannot encode a histogram: {e:?}")))?;
    Ok(STANDARD.encode(bytes))
}

/// The header: who wrote the log, the format version, the start of the run
/// (`StartTime`, and `BaseTime`, to which the interval timestamps are
/// relative) and the legend.
pub fn write_header(out: &mut dyn Write, start: SystemTime) -> io::Result<()> {
    let since_epoch = start.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since_epoch.as_secs_f64();
    writeln!(out, "#[Logged with pace {}]", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "#[Histogram log format version {LOG_FORMAT_VERSION}]")?;
    writeln!(
        out,
        "#[StartTime: {seconds:.3} (seconds since epoch), {}]",
        java_date_utc(since_epoch.as_secs())
    )?;
    writeln!(out, "#[BaseTime: {seconds:.3} (seconds since epoch)]")?;
    writeln!(out, "{LEGEND}")
}

/// One interval line, `[Tag=<tag>,]<start>,<length>,<max ms>,<histogram>`,
/// with Java's `%.3f` for the three numbers.
pub fn write_interval(
    out: &mut dyn Write,
    tag: Option<&str>,
    start: Duration,
    length: Duration,
    h: &Histogram<u64>,
) -> io::Result<()> {
    if let Some(tag) = tag {
        write!(out, "Tag={tag},")?;
    }
    writeln!(
        out,
        "{:.3},{:.3},{:.3},{}",
        start.as_secs_f64(),
        length.as_secs_f64(),
        h.max() as f64 / MAX_VALUE_DIVISOR,
        encode_compressed(h)?
    )
}

/// `seconds` since the epoch as Java's `Date.toString()` prints it, in UTC:
/// `Tue Nov 14 22:13:20 UTC 2023`. Informative only: readers use the
/// number before it.
fn java_date_utc(seconds: u64) -> String {
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let days = seconds / 86_400;
    let time = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{} {} {day:02} {:02}:{:02}:{:02} UTC {year}",
        // 1970-01-01 was a Thursday.
        WEEKDAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        time / 3600,
        time % 3600 / 60,
        time % 60
    )
}

/// Year, month (1..=12) and day of the month of a day number counted from
/// 1970-01-01 (Howard Hinnant's `civil_from_days`, for days >= 0).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01 so leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::latency_histogram;
    use hdrhistogram::serialization::Deserializer;

    fn render(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn decode(text: &str) -> Histogram<u64> {
        let bytes = STANDARD.decode(text).unwrap();
        Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap()
    }

    #[test]
    fn encoding_round_trips() {
        for digits in 1..=5 {
            let mut h = latency_histogram(digits);
            for v in [1, 2, 999, 2048, 2049, 10_000, 1_234_567, 60_000_000] {
                h.record_n(v, v % 7 + 1).unwrap();
            }
            let text = encode_compressed(&h).unwrap();
            // The V2 + DEFLATE cookie 0x1c849314 in base64.
            assert!(text.starts_with("HISTFAAA"), "{text}");
            let back = decode(&text);
            assert_eq!(back, h, "{digits} digits");
            assert_eq!(back.sigfig(), digits);
            assert_eq!(back.high(), h.high());
        }
    }

    #[test]
    fn empty_histogram_round_trips() {
        let h = latency_histogram(3);
        let back = decode(&encode_compressed(&h).unwrap());
        assert_eq!(back.len(), 0);
    }

    #[test]
    fn header_lines() {
        let start = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let text = render(|out| write_header(out, start));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(lines[0].starts_with("#[Logged with pace "));
        assert_eq!(lines[1], "#[Histogram log format version 1.3]");
        assert_eq!(
            lines[2],
            "#[StartTime: 1700000000.123 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]"
        );
        assert_eq!(lines[3], "#[BaseTime: 1700000000.123 (seconds since epoch)]");
        assert_eq!(
            lines[4],
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        );
    }

    #[test]
    fn interval_lines() {
        let mut h = latency_histogram(3);
        h.record(1327).unwrap();
        h.record(250).unwrap();
        let corrected = render(|out| {
            write_interval(out, None, Duration::from_secs(2), Duration::from_millis(500), &h)
        });
        let encoded = encode_compressed(&h).unwrap();
        assert_eq!(corrected, format!("2.000,0.500,1.327,{encoded}\n"));
        let uncorrected = render(|out| {
            write_interval(out, Some(UNCORRECTED_TAG), Duration::ZERO, Duration::from_secs(1), &h)
        });
        assert_eq!(uncorrected, format!("Tag=uncorrected,0.000,1.000,1.327,{encoded}\n"));
        // A histogram line parses back with the crate's own log reader.
        let log =
            format!("{}{corrected}{uncorrected}", render(|out| write_header(out, UNIX_EPOCH)));
        let mut tags = Vec::new();
        for entry in
            hdrhistogram::serialization::interval_log::IntervalLogIterator::new(log.as_bytes())
        {
            if let hdrhistogram::serialization::interval_log::LogEntry::Interval(interval) =
                entry.unwrap()
            {
                assert_eq!(decode(interval.encoded_histogram()).len(), 2);
                tags.push(interval.tag().map(|t| t.as_str().to_string()));
            }
        }
        assert_eq!(tags, vec![None, Some("uncorrected".to_string())]);
    }

    #[test]
    fn dates_like_java() {
        assert_eq!(java_date_utc(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(java_date_utc(951_782_400), "Tue Feb 29 00:00:00 UTC 2000");
        assert_eq!(java_date_utc(1_709_251_199), "Thu Feb 29 23:59:59 UTC 2024");
        assert_eq!(java_date_utc(4_102_444_800), "Fri Jan 01 00:00:00 UTC 2100");
    }
}
