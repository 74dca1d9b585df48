//! What a real server's decoding and validation refuse in a Lease: an integer that is no int32
//! (400), a time that is not a MicroTime with exactly six fractional digits (400; an offset is
//! stored as UTC), a duration that is not positive (422).

use serde_json::{Value, json};

use crate::apiserver::resources::ResourceDef;
use crate::apiserver::status::{ApiError, ApiResult, Cause};

const MICRO_TIME: &str = "2006-01-02T15:04:05.000000Z07:00";

pub(super) fn is_lease(def: &ResourceDef) -> bool {
    def.group == "coordination.k8s.io" && def.kind == "Lease"
}

/// Decodes `lease` as the typed Lease does, and stores its times as the server writes them.
pub(super) fn decode(lease: &mut Value) -> ApiResult<()> {
    let cannot = |why: String| {
        ApiError::bad_request(format!(
            "Lease in version \"v1\" cannot be handled as a Lease: {why}"
        ))
    };
    for field in ["leaseDurationSeconds", "leaseTransitions"] {
        let Some(value) = lease["spec"].get(field).filter(|v| !v.is_null()) else {
            continue;
        };
        let fits = value.as_i64().is_some_and(|n| i32::try_from(n).is_ok());
        if !fits {
            let what = match value {
                Value::Number(n) => format!("number {n}"),
                Value::String(_) => "string".into(),
                Value::Bool(_) => "bool".into(),
                Value::Array(_) => "array".into(),
                _ => "object".into(),
            };
            return Err(cannot(format!(
                "json: cannot unmarshal {what} into Go struct field LeaseSpec.spec.{field} of type int32"
            )));
        }
    }
    for field in ["acquireTime", "renewTime"] {
        let Some(value) = lease["spec"].get(field).filter(|v| !v.is_null()) else {
            continue;
        };
        let Some(text) = value.as_str() else {
            return Err(cannot(format!(
                "json: cannot unmarshal {value} into Go struct field LeaseSpec.spec.{field} of type string"
            )));
        };
        let stored = micro_time(text).map_err(cannot)?;
        lease["spec"][field] = json!(stored);
    }
    Ok(())
}

/// What validation refuses of a decoded Lease.
pub(super) fn invalid(lease: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(seconds) = lease["spec"]["leaseDurationSeconds"].as_i64()
        && seconds <= 0
    {
        causes.push(Cause::invalid(
            "spec.leaseDurationSeconds",
            &seconds.to_string(),
            "must be greater than 0",
        ));
    }
    if let Some(transitions) = lease["spec"]["leaseTransitions"].as_i64()
        && transitions < 0
    {
        causes.push(Cause::invalid(
            "spec.leaseTransitions",
            &transitions.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    causes
}

/// `text` read as Go reads the layout `2006-01-02T15:04:05.000000Z07:00` (with Go's error for
/// what it cannot read), written back in UTC.
fn micro_time(text: &str) -> Result<String, String> {
    let cannot = |rest: &str, element: &str| {
        format!("parsing time {text:?} as {MICRO_TIME:?}: cannot parse {rest:?} as {element:?}")
    };
    let digits = |rest: &str, n: usize| {
        rest.len() >= n && rest.as_bytes()[..n].iter().all(u8::is_ascii_digit)
    };
    let mut rest = text;
    let mut numbers = Vec::new();
    for (element, width, separator) in [
        ("2006", 4, "-"),
        ("01", 2, "-"),
        ("02", 2, "T"),
        ("15", 2, ":"),
        ("04", 2, ":"),
        ("05", 2, ""),
    ] {
        if !digits(rest, width) {
            return Err(cannot(rest, element));
        }
        numbers.push(&rest[..width]);
        rest = &rest[width..];
        if !separator.is_empty() {
            match rest.strip_prefix(separator) {
                Some(after) => rest = after,
                None => return Err(cannot(rest, separator)),
            }
        }
    }
    let fraction = match rest.strip_prefix('.') {
        Some(after) if digits(after, 6) => &after[..6],
        _ => return Err(cannot(rest, ".000000")),
    };
    rest = &rest[7..];
    let offset = if let Some(after) = rest.strip_prefix('Z') {
        rest = after;
        "+00:00".to_string()
    } else {
        let sign = rest.chars().next().filter(|c| *c == '+' || *c == '-');
        let zone = rest.get(1..6).unwrap_or_default();
        let well_formed = sign.is_some()
            && zone.len() == 5
            && digits(zone, 2)
            && &zone[2..3] == ":"
            && digits(&zone[3..], 2);
        if !well_formed {
            return Err(cannot(rest, "Z07:00"));
        }
        let offset = rest[..6].to_string();
        rest = &rest[6..];
        offset
    };
    if !rest.is_empty() {
        return Err(format!("parsing time {text:?}: extra text: {rest:?}"));
    }
    let written = format!(
        "{}-{}-{}T{}:{}:{}.{fraction}{offset}",
        numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], numbers[5]
    );
    let time: jiff::Timestamp = written
        .parse()
        .map_err(|_| format!("parsing time {text:?}: day out of range"))?;
    Ok(time.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_times_are_read_as_go_reads_them() {
        assert_eq!(
            micro_time("2026-01-01T12:00:00.123456+02:00").unwrap(),
            "2026-01-01T10:00:00.123456Z"
        );
        assert_eq!(
            micro_time("2026-01-01T10:00:00.000001Z").unwrap(),
            "2026-01-01T10:00:00.000001Z"
        );
        for (text, rest, element) in [
            ("2026-01-01T10:00:00Z", "Z", ".000000"),
            ("2026-01-01T10:00:00.123Z", ".123Z", ".000000"),
            ("2026-01-01T10:00:00.123456789Z", "789Z", "Z07:00"),
            ("yesterday", "yesterday", "2006"),
        ] {
            let error = micro_time(text).unwrap_err();
            assert!(
                error.ends_with(&format!("cannot parse {rest:?} as {element:?}")),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn durations_are_int32_and_positive() {
        let lease = |seconds: Value| json!({"spec": {"leaseDurationSeconds": seconds}});
        assert_eq!(
            decode(&mut lease(json!(2147483648_i64))).unwrap_err().code,
            400
        );
        assert_eq!(decode(&mut lease(json!("60"))).unwrap_err().code, 400);
        assert!(decode(&mut lease(json!(2147483647))).is_ok());
        assert_eq!(invalid(&lease(json!(0))).len(), 1);
        assert_eq!(invalid(&lease(json!(-1))).len(), 1);
        assert!(invalid(&lease(json!(1))).is_empty());
    }
}
