//! The benchmark's run and its report: the move (and, asked, with one write at a time) against
//! the servers' ceilings.

use super::ceiling::{RawWrites, raw_ceiling};
use super::servers::MoveOptions;
use super::timed::timed_move;

/// Runs the benchmark and returns its report.
pub async fn run(options: &MoveOptions) -> anyhow::Result<String> {
    let dir = tempfile::tempdir()?;
    let mut runs = vec![timed_move(options, dir.path(), options.concurrency).await?];
    if options.sequential {
        runs.push(timed_move(options, dir.path(), 1).await?);
    }
    let (ceiling, _) = raw_ceiling(options, dir.path(), RawWrites::Two).await?;
    let (ceiling_four, ceiling_in_flight) =
        raw_ceiling(options, dir.path(), RawWrites::Four).await?;
    let objects = runs[0].objects;
    let mut out = format!(
        "{} clusters × (1 control-plane + {} workers) = {objects} objects{}, write latency {} ms\n",
        options.clusters,
        options.workers,
        if options.real_shaped {
            " shaped like a real management cluster's"
        } else {
            ""
        },
        options.write_latency.as_millis()
    );
    for r in &runs {
        let phase = |name: &str| r.phases[name].as_f64().unwrap_or_default();
        out.push_str(&format!(
            "move --concurrency {:>3}: {:>7.1} s  {:>7.0} objects/s  {:.2} requests/object  {:.2} writes/object  {} reads  peak RSS {:.0} MiB ({:.1} KiB/object)\n  plugin CPU {:.1} s ({:.2} ms/object)  writes in flight: {:.1} creating, {:.1} deleting\n  phases: preflight {:.1} s, pause {:.1} s, create {:.1} s, delete {:.1} s, unpause {:.1} s\n",
            r.concurrency,
            r.seconds,
            r.objects as f64 / r.seconds,
            r.requests as f64 / r.objects as f64,
            r.writes as f64 / r.objects as f64,
            r.reads,
            r.peak_rss_mib,
            r.peak_rss_mib * 1024.0 / r.objects as f64,
            r.cpu_seconds,
            r.cpu_seconds * 1000.0 / r.objects as f64,
            r.in_flight.0,
            r.in_flight.1,
            phase("preflight"),
            phase("pause"),
            phase("create"),
            phase("delete"),
            phase("unpause"),
        ));
    }
    out.push_str(&format!(
        "raw ceiling ({}-way creates + deletes over loopback {}): {:.1} s  {:.0} objects/s\n",
        options.concurrency,
        if options.plain_http {
            "HTTP"
        } else {
            "HTTPS with client certificates"
        },
        ceiling,
        objects as f64 / ceiling
    ));
    if let [parallel, sequential] = runs.as_slice() {
        out.push_str(&format!(
            "parallel vs sequential: {:.1}×\n",
            sequential.seconds / parallel.seconds
        ));
    }
    out.push_str(&format!(
        "raw ceiling with the move's 4 writes per object: {:.1} s  {:.0} objects/s  writes in flight: {:.1} creating, {:.1} deleting\n",
        ceiling_four,
        objects as f64 / ceiling_four,
        ceiling_in_flight.0,
        ceiling_in_flight.1
    ));
    out.push_str(&format!(
        "move vs raw ceiling: {:.0}% of the ceiling's speed ({:.0}% of the 4-write ceiling's)\n",
        100.0 * ceiling / runs[0].seconds,
        100.0 * ceiling_four / runs[0].seconds
    ));
    let preflight = runs[0].phases["preflight"].as_f64().unwrap_or_default();
    out.push_str(&format!(
        "move vs 4-write ceiling + the move's own preflight: {:.2}×\n",
        runs[0].seconds / (ceiling_four + preflight)
    ));
    Ok(out)
}
