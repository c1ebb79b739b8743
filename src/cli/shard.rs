//! `--shard I/N` and `--start-at TIME`: one instance's part of a plan that
//! several machines send together.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::options::bad_value;
use crate::config::Shard;
use crate::error::Error;

/// `--shard 1/3`: instance 1 of 3 (counted from 0).
pub(super) fn shard(option: &str, text: &str) -> Result<Shard, Error> {
    let bad =
        |why: &str| bad_value(option, format!("'{text}': {why} (e.g. 0/3 for the first of three)"));
    let (index, count) = text.split_once('/').ok_or_else(|| bad("expected I/N"))?;
    let index: usize = index.trim().parse().map_err(|_| bad("I is not a whole number"))?;
    let count: usize = count.trim().parse().map_err(|_| bad("N is not a whole number"))?;
    if count == 0 {
        return Err(bad("N must be at least 1"));
    }
    if index >= count {
        return Err(bad("I counts from 0 and must be less than N"));
    }
    Ok(Shard { index, count })
}

/// `--start-at`: an RFC 3339 time (`2026-11-23T10:00:00Z`,
/// `2026-11-23T10:00:00.250+01:00`) or Unix seconds (`1795428000.25`).
pub(super) fn start_at(option: &str, text: &str) -> Result<SystemTime, Error> {
    let text = text.trim();
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return unix_seconds(text)
            .ok_or_else(|| bad_value(option, format!("'{text}' is not a time")));
    }
    let parsed = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|e| {
            bad_value(
                option,
                format!("'{text}' is not a time ({e}; e.g. 2026-11-23T10:00:00Z or Unix seconds)"),
            )
        })?;
    Ok(SystemTime::from(parsed))
}

/// Unix seconds read as a decimal, not a float, so that `.25` is exactly
/// 250 ms and the printed start time is the one typed.
fn unix_seconds(text: &str) -> Option<SystemTime> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || fraction.len() > 9 || fraction.contains('.') {
        return None;
    }
    let seconds: u64 = whole.parse().ok()?;
    let nanos: u32 =
        if fraction.is_empty() { 0 } else { format!("{fraction:0<9}").parse().ok()? };
    UNIX_EPOCH.checked_add(Duration::new(seconds, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_i_of_n() {
        assert_eq!(shard("--shard", "2/3").unwrap(), Shard { index: 2, count: 3 });
        assert_eq!(shard("--shard", "0/1").unwrap(), Shard { index: 0, count: 1 });
        for (bad, why) in
            [("3/3", "less than N"), ("1", "I/N"), ("a/2", "I is not"), ("0/0", "at least 1")]
        {
            let Err(Error::Usage(message)) = shard("--shard", bad) else { panic!("{bad}") };
            assert!(message.contains(why), "{bad}: {message}");
        }
    }

    #[test]
    fn start_times_in_either_form() {
        let rfc = start_at("--start-at", "2026-11-23T10:00:00.250Z").unwrap();
        let unix = start_at("--start-at", "1795428000.25").unwrap();
        assert_eq!(rfc, unix);
        let offset = start_at("--start-at", "2026-11-23T11:00:00.250+01:00").unwrap();
        assert_eq!(offset, unix);
        assert!(start_at("--start-at", "tomorrow").is_err());
        assert!(start_at("--start-at", "1.2.3").is_err());
        let exact = start_at("--start-at", "1795428000.000000001").unwrap();
        assert_eq!(exact.duration_since(UNIX_EPOCH).unwrap().subsec_nanos(), 1);
    }
}
