//! `--shard I/N` and `--start-at TIME`: one instance's part of a plan that
//! several machines send together.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::options::bad_value;
use crate::config::{BenchConfig, Mode, Shard};
use crate::error::Error;
use crate::units::format_rfc3339;

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

/// Refuses a `--start-at` that has passed at `now`, in words and before
/// anything is printed. A time in the past is accepted while this shard's
/// first request is still ahead (a later shard of a paced plan starts
/// after the plan does): the engine's rule, which it applies again when it
/// starts, as the time may pass while the run is set up.
pub fn check_start_at(cfg: &BenchConfig, now: SystemTime) -> Result<(), Error> {
    let Some(at) = cfg.start_at else { return Ok(()) };
    let Ok(behind) = now.duration_since(at) else { return Ok(()) };
    let first_due = match &cfg.mode {
        Mode::Paced(spec) => {
            let offset = spec.plan(cfg.warmup, cfg.seed).offset_ns(cfg.shard.index as u64);
            Duration::from_nanos(offset)
        }
        Mode::ClosedLoop => Duration::ZERO,
    };
    if behind < first_due {
        return Ok(());
    }
    let first = if first_due.is_zero() {
        String::new()
    } else {
        format!(", and so is this shard's first request, due {} after it", how_long(first_due))
    };
    Err(Error::Usage(format!(
        "--start-at {} is in the past ({} ago){first}: give a time ahead, the same for every \
         shard, e.g. --start-at $(( $(date +%s) + 30 )) to start in 30 s (the machines' clocks \
         must agree, see docs/scale-out.md)",
        format_rfc3339(at),
        how_long(behind)
    )))
}

/// A duration in the largest unit it has at least one of, for people:
/// `56 years`, `3 hours`, `1 minute`, `2.5 seconds`.
fn how_long(duration: Duration) -> String {
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
    fn a_start_in_the_past_is_refused_in_words() {
        let mut cfg = BenchConfig::new(crate::target::Target::parse("http://h/").unwrap());
        let at = start_at("--start-at", "1970-01-01T00:00:05Z").unwrap();
        cfg.start_at = Some(at);
        let now = start_at("--start-at", "2026-11-23T10:00:00Z").unwrap();
        let Err(Error::Usage(message)) = check_start_at(&cfg, now) else { panic!("accepted") };
        assert!(
            message.starts_with(
                "--start-at 1970-01-01T00:00:05Z is in the past (56 years ago): give a time ahead"
            ),
            "{message}"
        );
        assert!(message.contains("--start-at $(( $(date +%s) + 30 ))"), "{message}");
        // Ahead, or not given: nothing to say.
        assert!(check_start_at(&cfg, at - Duration::from_secs(1)).is_ok());
        cfg.start_at = None;
        assert!(check_start_at(&cfg, now).is_ok());
    }

    #[test]
    fn a_shard_may_start_late_while_its_first_request_is_ahead() {
        let mut cfg = BenchConfig::new(crate::target::Target::parse("http://h/").unwrap());
        // 1 request/s over 2 shards: shard 1's first request is due at 1 s.
        cfg.mode = Mode::Paced(crate::plan::PlanSpec::constant(1.0));
        cfg.shard = Shard { index: 1, count: 2 };
        let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        cfg.start_at = Some(at);
        assert!(check_start_at(&cfg, at + Duration::from_millis(900)).is_ok());
        let Err(Error::Usage(message)) = check_start_at(&cfg, at + Duration::from_millis(1500))
        else {
            panic!("accepted")
        };
        assert!(
            message.contains(
                "is in the past (1.5 seconds ago), and so is this shard's first request, due \
                 1.0 seconds after it"
            ),
            "{message}"
        );
        // Shard 0's first request is due at the start itself.
        cfg.shard = Shard { index: 0, count: 2 };
        assert!(check_start_at(&cfg, at + Duration::from_millis(1)).is_err());
    }

    #[test]
    fn durations_for_people() {
        let secs = Duration::from_secs;
        assert_eq!(how_long(Duration::from_millis(2500)), "2.5 seconds");
        assert_eq!(how_long(secs(60)), "1 minute");
        assert_eq!(how_long(secs(3 * 3600 + 59)), "3 hours");
        assert_eq!(how_long(secs(2 * 86400)), "2 days");
        assert_eq!(how_long(secs(400 * 86400)), "1 year");
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
