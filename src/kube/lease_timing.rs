//! How long a lease lasts and what follows from it: how often its holder renews, until when the
//! holder may write after a renewal, how often a taker looks. The duration is 60 s unless
//! [`DURATION_ENV`] sets another, checked before any request.

use std::time::Duration;

/// How long a Lease stays unchanged, as a command watches it, before it may be taken over.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// Overrides [`DEFAULT_DURATION`] (whole seconds): tests that stop a holder wait out a short one.
pub const DURATION_ENV: &str = "KUBECTL_CAPI_LEASE_SECONDS";

/// The longest lease [`DURATION_ENV`] may set: a day (a real server takes any positive int32).
pub const MAX_DURATION_SECONDS: u64 = 86_400;

/// The lease duration [`DURATION_ENV`] sets, if it is set: whole seconds from 1 to
/// [`MAX_DURATION_SECONDS`]; anything else is a usage error before any request.
pub fn duration_from_env() -> std::result::Result<Option<Duration>, String> {
    std::env::var_os(DURATION_ENV)
        .map(|text| duration_from_text(&text))
        .transpose()
}

/// A lease duration as [`DURATION_ENV`] gives it: whole seconds from 1 to
/// [`MAX_DURATION_SECONDS`], else why not.
pub fn duration_from_text(text: &std::ffi::OsStr) -> std::result::Result<Duration, String> {
    let seconds = text
        .to_str()
        .and_then(|t| t.parse::<u64>().ok())
        .filter(|s| (1..=MAX_DURATION_SECONDS).contains(s));
    match seconds {
        Some(seconds) => Ok(Duration::from_secs(seconds)),
        None => Err(format!(
            "{DURATION_ENV}={} is not a whole number of seconds from 1 to {MAX_DURATION_SECONDS}; set one in that range or unset it for the default of {}s",
            text.to_string_lossy(),
            DEFAULT_DURATION.as_secs()
        )),
    }
}

/// How long leases last for this process ([`duration_from_env`] was checked when the command
/// started).
pub fn duration() -> Duration {
    duration_from_env()
        .ok()
        .flatten()
        .unwrap_or(DEFAULT_DURATION)
}

/// How often a holder renews.
pub fn renew_interval(duration: Duration) -> Duration {
    duration / 12
}

/// How long after its last renewal was sent a holder may still write.
pub fn renew_deadline(duration: Duration) -> Duration {
    duration * 2 / 3
}

/// How often a Lease held by another is read while it is watched.
pub(super) fn poll_interval(duration: Duration) -> Duration {
    (duration / 24).clamp(Duration::from_millis(20), Duration::from_secs(1))
}
