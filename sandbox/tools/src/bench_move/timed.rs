//! One move, timed: the plugin run as users run it, its requests counted.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use capi_sandbox::apiserver::control::RequestRecord;

use super::measures::{children_cpu_seconds, in_flight, peak_rss_kib};
use super::servers::{MoveOptions, Pair, pair};

/// One timed move.
pub struct MoveRun {
    pub concurrency: usize,
    pub objects: usize,
    pub seconds: f64,
    pub requests: usize,
    pub writes: usize,
    /// GETs, LISTs and WATCHes (discovery included), in both servers.
    pub reads: usize,
    pub peak_rss_mib: f64,
    /// The plugin's own CPU time (user + system, from its rusage).
    pub cpu_seconds: f64,
    /// Average writes in flight while creating and while deleting, as the servers saw them.
    pub in_flight: (f64, f64),
    /// The plugin's own account of where the time went (its `-o json` summary's `phases`).
    pub phases: Value,
}

pub(super) async fn timed_move(
    options: &MoveOptions,
    dir: &Path,
    concurrency: usize,
) -> anyhow::Result<MoveRun> {
    let pair = pair(options, dir, &concurrency.to_string()).await?;
    let started = Instant::now();
    let mut child = tokio::process::Command::new(&options.plugin)
        .args([
            "move",
            "-n",
            "bench",
            "--context",
            "source",
            "--to-context",
            "target",
        ])
        .args(["--concurrency", &concurrency.to_string(), "-o", "json"])
        .env("KUBECONFIG", &pair.kubeconfig)
        .env("XDG_STATE_HOME", dir.join("state"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let cpu_before = children_cpu_seconds();
    let pid = child.id().unwrap_or_default();
    let mut stdout = child.stdout.take().expect("piped");
    let summary = tokio::spawn(async move {
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut text)
            .await
            .map(|_| text)
    });
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_rss_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = children_cpu_seconds() - cpu_before;
    anyhow::ensure!(status.success(), "the move failed ({status})");
    let summary: Value = serde_json::from_str(&summary.await??)?;
    let is_read = |r: &RequestRecord| matches!(r.verb.as_str(), "get" | "list" | "watch");
    Ok(MoveRun {
        concurrency,
        objects: pair.objects.len(),
        seconds,
        requests: plugin_requests(&pair, |_| true),
        writes: plugin_requests(&pair, RequestRecord::is_mutation),
        reads: plugin_requests(&pair, is_read),
        peak_rss_mib: peak as f64 / 1024.0,
        cpu_seconds,
        in_flight: in_flight(
            &pair.source.requests(),
            &pair.target.requests(),
            kubectl_capi::kube::connect::USER_AGENT,
        ),
        phases: summary["phases"].clone(),
    })
}

/// The plugin's requests to either server of `pair` that `which` counts.
fn plugin_requests(pair: &Pair, which: impl Fn(&RequestRecord) -> bool) -> usize {
    [&pair.source, &pair.target]
        .iter()
        .map(|s| {
            s.requests()
                .iter()
                .filter(|r| r.agent == kubectl_capi::kube::connect::USER_AGENT && which(r))
                .count()
        })
        .sum()
}

/// One move with `options.concurrency`, measured (no sequential run, no ceiling).
pub async fn measure_move(options: &MoveOptions) -> anyhow::Result<MoveRun> {
    let dir = tempfile::tempdir()?;
    timed_move(options, dir.path(), options.concurrency).await
}
