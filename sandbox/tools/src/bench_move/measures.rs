//! What the benchmark measures besides time: the plugin's CPU and peak memory, and the writes in
//! flight as the servers' request logs show them.

use std::time::Instant;

/// CPU time (user + system) of the children this process has waited for.
#[cfg(unix)]
pub(super) fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Not measured where there is no rusage (the benchmark is run on Unix).
#[cfg(not(unix))]
pub(super) fn children_cpu_seconds() -> f64 {
    f64::NAN
}

/// Average writes in flight during the create phase and during the delete phase, from the two
/// servers' request logs: the time the plugin's writes overlapped each window, divided by the
/// window. The create window runs from the first create of a moved object to the last write in
/// the target before the first delete-phase write in the source; the delete window from there
/// to the last write of a moved object in the source (journal saves inside a window count: they
/// hold a slot of `--concurrency` too).
pub(super) fn in_flight<'a>(
    source: &'a [capi_sandbox::apiserver::control::RequestRecord],
    target: &'a [capi_sandbox::apiserver::control::RequestRecord],
    agent: &str,
) -> (f64, f64) {
    let writes = |records: &'a [capi_sandbox::apiserver::control::RequestRecord]| -> Vec<&'a capi_sandbox::apiserver::control::RequestRecord> {
        records
            .iter()
            .filter(|r| r.agent.starts_with(agent) && r.is_write_attempt())
            .collect()
    };
    let (source, target) = (writes(source), writes(target));
    // Not moved: the journal's copy and records, the namespace, and the leases each end holds
    // from before the first write to after the last (taken and renewed in both).
    let moved = |r: &&&capi_sandbox::apiserver::control::RequestRecord| {
        !matches!(r.resource.as_str(), "configmaps" | "namespaces" | "leases")
    };
    let Some(create_start) = target
        .iter()
        .filter(|r| r.verb == "create")
        .filter(moved)
        .map(|r| r.arrived)
        .min()
    else {
        return (0.0, 0.0);
    };
    let Some(delete_start) = source
        .iter()
        .filter(moved)
        .filter(|r| r.arrived > create_start)
        .map(|r| r.arrived)
        .min()
    else {
        return (0.0, 0.0);
    };
    let create_end = target
        .iter()
        .filter(|r| r.arrived < delete_start)
        .map(|r| r.answered)
        .max()
        .unwrap_or(delete_start);
    let delete_end = source
        .iter()
        .filter(moved)
        .map(|r| r.answered)
        .max()
        .unwrap_or(delete_start);
    let all: Vec<&capi_sandbox::apiserver::control::RequestRecord> =
        source.iter().chain(&target).copied().collect();
    let average = |from: Instant, to: Instant| {
        let window = to.saturating_duration_since(from).as_secs_f64();
        let busy: f64 = all
            .iter()
            .map(|r| {
                r.answered
                    .min(to)
                    .saturating_duration_since(r.arrived.max(from))
                    .as_secs_f64()
            })
            .sum();
        if window > 0.0 { busy / window } else { 0.0 }
    };
    (
        average(create_start, create_end),
        average(delete_start, delete_end),
    )
}

/// The peak resident memory of a running process (Linux: VmHWM), in KiB.
pub(super) fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn write(
        verb: &str,
        resource: &str,
        from_ms: u64,
        to_ms: u64,
        at: Instant,
    ) -> capi_sandbox::apiserver::control::RequestRecord {
        capi_sandbox::apiserver::control::RequestRecord {
            verb: verb.into(),
            group: String::new(),
            resource: resource.into(),
            namespace: Some("bench".into()),
            name: Some("x".into()),
            subresource: None,
            code: 200,
            dry_run: false,
            dry_run_query: false,
            user: "admin".into(),
            path: String::new(),
            version: "v1".into(),
            agent: "kubectl-capi/test".into(),
            precondition_uid: None,
            metadata_only: false,
            started: 0,
            finished: 0,
            arrived: at + Duration::from_millis(from_ms),
            answered: at + Duration::from_millis(to_ms),
        }
    }

    #[test]
    fn writes_in_flight_are_averaged_over_each_phase() {
        let at = Instant::now();
        // Creating 10–110 ms: two writes all along, a third for half of it; a journal save in
        // the source meanwhile counts too. Deleting 110–210 ms: one write all along. The
        // leases, taken before and renewed meanwhile, mark no phase.
        let target = [
            write("create", "leases", 0, 1, at),
            write("create", "machines", 10, 110, at),
            write("create", "machines", 10, 110, at),
            write("patch", "machines", 60, 110, at),
            // Unpausing, after the deletes: outside both windows.
            write("patch", "clusters", 310, 320, at),
        ];
        let source = [
            write("create", "leases", 1, 2, at),
            write("patch", "clusters", 5, 5, at),
            write("update", "configmaps", 10, 60, at),
            write("patch", "leases", 50, 50, at),
            write("delete", "machines", 110, 210, at),
        ];
        let (creating, deleting) = in_flight(&source, &target, "kubectl-capi/");
        assert!((creating - 3.0).abs() < 0.01, "{creating}");
        assert!((deleting - 1.0).abs() < 0.01, "{deleting}");
    }
}
