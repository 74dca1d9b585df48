//! Durations as kubectl's flags take them (`30`, `1m30s`, `500ms`) and as hints give them back.

use std::time::Duration;

/// A duration as kubectl takes one: whole seconds, or numbers with units like `1m30s`, `500ms`.
fn parse_duration(value: &str) -> Result<Duration, String> {
    let invalid = || {
        format!(
            "\"{value}\" is not a duration: use a whole number of seconds or a number with a unit (e.g. 1s, 2m, 3h)"
        )
    };
    let value = value.trim();
    if let Some(magnitude) = value.strip_prefix('-') {
        return Err(match parse_duration(magnitude) {
            Ok(_) => format!("\"{value}\" is negative: a duration counts forward, e.g. 30s or 10m"),
            // A flag where the value was due (`--timeout --wait`).
            Err(_) => format!(
                "\"{value}\" is not a duration; give one right after the flag, e.g. 30s or 10m"
            ),
        });
    }
    if let Ok(seconds) = value.parse::<u64>() {
        return bounded(Duration::from_secs(seconds.min(LONGEST.as_secs() + 1)));
    }
    // kubectl's grammar (numbers with h, m, s, ms; no spaces, no ISO 8601); jiff does the sums.
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c.is_ascii_digit() || "hms.".contains(c))
    {
        return Err(invalid());
    }
    let Ok(parsed) = value.parse::<jiff::SignedDuration>() else {
        // Too large for jiff to add up: 16 digits of even milliseconds are centuries.
        let huge = value
            .split(|c: char| !c.is_ascii_digit())
            .any(|n| n.len() >= 16);
        return Err(if huge {
            bounded(LONGEST * 2).unwrap_err()
        } else {
            invalid()
        });
    };
    bounded(Duration::try_from(parsed).map_err(|_| invalid())?)
}

/// The longest duration any flag takes: a year (longer ones overflow deadlines, and are typos).
pub const LONGEST: Duration = Duration::from_secs(365 * 24 * 3600);

fn bounded(duration: Duration) -> Result<Duration, String> {
    if duration > LONGEST {
        return Err("longer than the longest allowed, 8760h (a year)".into());
    }
    Ok(duration)
}

/// `--request-timeout`: a duration, `0` for none.
pub fn request_timeout(value: &str) -> Result<Duration, String> {
    parse_duration(value)
}

/// `--timeout`: a duration, never 0.
pub fn timeout(value: &str) -> Result<Duration, String> {
    let duration = parse_duration(value)?;
    if duration.is_zero() {
        return Err(
            "a timeout of 0 would give up at once; pass a duration such as 30s or 10m".into(),
        );
    }
    Ok(duration)
}

/// A duration as flags take it back: `10m`, `1h30m`, `45s`, `500ms`.
pub fn show_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if !millis.is_multiple_of(1000) {
        return format!("{millis}ms");
    }
    let seconds = duration.as_secs();
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_like_kubectl_and_bounded() {
        let d = |s: &str| request_timeout(s);
        assert_eq!(d("0"), Ok(Duration::ZERO));
        assert_eq!(d("30"), Ok(Duration::from_secs(30)));
        assert_eq!(d("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(d("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(d("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(d("8760h"), Ok(LONGEST));
        assert!(d("-5").unwrap_err().contains("is negative"));
        assert!(d("-1m30s").unwrap_err().contains("is negative"));
        assert!(d("--wait").unwrap_err().contains("right after the flag"));
        for bad in ["soon", "5x", "", "1.5.5s", "m", "NaNs", "infs", "-1m"] {
            assert!(d(bad).is_err(), "{bad}");
        }
        // Far beyond a year (and beyond u64 seconds) is refused, not a panic or an overflow.
        for huge in [
            "8761h",
            "99999999999999999999h",
            "99999999999999999999",
            "1e300s",
        ] {
            let refused = d(huge).unwrap_err();
            assert!(
                refused.contains("longest") || refused.contains("not a duration"),
                "{huge}: {refused}"
            );
        }
        assert!(timeout("0").unwrap_err().contains("give up at once"));
        assert_eq!(timeout("10m"), Ok(Duration::from_secs(600)));
    }

    #[test]
    fn durations_read_back_as_flags_take_them() {
        for (seconds, shown) in [(600, "10m"), (5400, "1h30m"), (45, "45s"), (3600, "1h")] {
            assert_eq!(show_duration(Duration::from_secs(seconds)), shown);
        }
        assert_eq!(show_duration(Duration::from_millis(1500)), "1500ms");
    }
}
