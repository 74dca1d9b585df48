//! `capi-sandbox bench-move`: how fast kubectl-capi moves about 10,000 objects between two
//! sandbox servers over loopback, with a per-write latency standing in for etcd's commit; the
//! same move with one write at a time (clusterctl's way); and the servers' own ceiling for
//! parallel creates and deletes of the same objects with no planning. Figures, not assertions.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use serde_json::{Value, json};

use capi_sandbox::apiserver::control::RequestRecord;
use capi_sandbox::apiserver::{KubeconfigEntry, write_kubeconfig};
use capi_sandbox::crds::{self, Dialect};
use capi_sandbox::fixture::Fixture;
use capi_sandbox::{
    apiserver::server::ApiServer, apiserver::server::Serving, apiserver::shared::ServerOptions,
};

pub struct MoveOptions {
    pub clusters: usize,
    pub workers: usize,
    pub write_latency: Duration,
    pub concurrency: usize,
    pub plugin: PathBuf,
    /// Also run with `--concurrency 1`.
    pub sequential: bool,
    /// Objects shaped like a real management cluster's (see `real_shape`), so that answers are
    /// as heavy as a real server's.
    pub real_shaped: bool,
    /// Serve plain HTTP instead of HTTPS with client certificates (what users run).
    pub plain_http: bool,
}

/// Watch events each benchmark server keeps.
const WATCH_HISTORY: usize = 10_000;

/// Loads `clusters` provisioned workload clusters into namespace `bench`; returns the objects.
pub fn load_fixture(
    server: &ApiServer,
    clusters: usize,
    workers: usize,
) -> anyhow::Result<Vec<Value>> {
    fixture(clusters, workers).load(&[server])
}

fn fixture(clusters: usize, workers: usize) -> Fixture {
    let mut fixture = Fixture::default();
    for index in 0..clusters {
        fixture.provisioned("bench", &format!("cluster-{index:03}"), workers);
    }
    fixture
}

struct Pair {
    source: ApiServer,
    target: ApiServer,
    serving: (Serving, Serving),
    kubeconfig: PathBuf,
    objects: Vec<Value>,
}

async fn pair(options: &MoveOptions, dir: &Path, tag: &str) -> anyhow::Result<Pair> {
    let served = ServerOptions {
        tls: !options.plain_http,
        client_certificates: !options.plain_http,
        // A watch cache's worth: nothing here resumes a watch, and etcd keeps its history on
        // disk, not in the API server's memory; the default (every event of the run) would
        // hold every version of every object of the larger sizes.
        history_limit: WATCH_HISTORY,
        ..ServerOptions::default()
    };
    let source = ApiServer::new(served.clone());
    let target = ApiServer::new(served);
    for server in [&source, &target] {
        crds::install_with_inventory(server, Dialect::V1beta2)?;
    }
    let mut fixture = fixture(options.clusters, options.workers);
    if options.real_shaped {
        fixture.real_shaped();
    }
    let mut objects = fixture.load(&[&source])?;
    if options.real_shaped {
        capi_sandbox::real_shape::weather(&source, &objects).await?;
        // What the servers hold now, managedFields of both writers included.
        objects = objects
            .iter()
            .filter_map(|o| {
                let group = o["apiVersion"]
                    .as_str()?
                    .rsplit_once('/')
                    .map_or("", |(g, _)| g);
                source.object(
                    group,
                    &capi_sandbox::api::plural(o["kind"].as_str()?),
                    o["metadata"]["namespace"].as_str().unwrap_or(""),
                    o["metadata"]["name"].as_str()?,
                )
            })
            .collect();
    }
    // Loading is not part of any measured run: forget its events.
    source.compact();
    for server in [&source, &target] {
        server.set_write_latency(options.write_latency);
    }
    let serving = (source.serve(0).await?, target.serve(0).await?);
    let kubeconfig = dir.join(format!("kubeconfig-{tag}"));
    let entries: Vec<KubeconfigEntry> = vec![
        serving.0.kubeconfig_entry("source"),
        serving.1.kubeconfig_entry("target"),
    ];
    write_kubeconfig(&kubeconfig, &entries)?;
    Ok(Pair {
        source,
        target,
        serving,
        kubeconfig,
        objects,
    })
}

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

/// CPU time (user + system) of the children this process has waited for.
#[cfg(unix)]
fn children_cpu_seconds() -> f64 {
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
fn children_cpu_seconds() -> f64 {
    f64::NAN
}

/// Average writes in flight during the create phase and during the delete phase, from the two
/// servers' request logs: the time the plugin's writes overlapped each window, divided by the
/// window. The create window runs from the first create of a moved object to the last write in
/// the target before the first delete-phase write in the source; the delete window from there
/// to the last write of a moved object in the source (journal saves inside a window count: they
/// hold a slot of `--concurrency` too).
fn in_flight<'a>(
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
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

async fn timed_move(
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

/// How many writes per object a raw ceiling run makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RawWrites {
    /// Create in the target, delete from the source.
    Two,
    /// The move's four: create, then patch, in the target; patch, then delete, in the source.
    Four,
}

/// The servers' ceiling: every object created in the target and deleted from the source with
/// `concurrency` requests in flight over the same loopback connections the plugin uses (HTTPS
/// with client certificates, or plain HTTP with `--plain-http`), no planning,
/// no checks. Seconds, and the writes in flight while creating and deleting.
async fn raw_ceiling(
    options: &MoveOptions,
    dir: &Path,
    writes: RawWrites,
) -> anyhow::Result<(f64, (f64, f64))> {
    let tag = match writes {
        RawWrites::Two => "raw2",
        RawWrites::Four => "raw4",
    };
    let pair = pair(options, dir, tag).await?;
    // Deletes in any order: the collector would race them for the dependents.
    pair.source.set_garbage_collection(false);
    let source = pair.serving.0.client().await?;
    let target = pair.serving.1.client().await?;
    capi_sandbox::api::create(
        &target,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}),
    )
    .await?;
    let started = Instant::now();
    let bodies: Vec<Value> = pair.objects.iter().map(create_body).collect();
    let touch = json!({"metadata": {"annotations": {"bench.capi-sandbox/touched": "true"}}});
    let touch = &touch;
    let created: Vec<anyhow::Result<()>> = stream::iter(bodies.iter().map(|b| {
        let target = target.clone();
        async move {
            capi_sandbox::api::create(&target, b).await?;
            if writes == RawWrites::Four {
                patch_object(&target, b, touch).await?;
            }
            Ok(())
        }
    }))
    .buffer_unordered(options.concurrency)
    .collect()
    .await;
    created.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
    let deleted: Vec<anyhow::Result<()>> = stream::iter(pair.objects.iter().map(|o| {
        let source = source.clone();
        async move {
            if writes == RawWrites::Four {
                patch_object(&source, o, touch).await?;
            }
            capi_sandbox::api::delete(
                &source,
                o["apiVersion"].as_str().unwrap_or_default(),
                o["kind"].as_str().unwrap_or_default(),
                "bench",
                o["metadata"]["name"].as_str().unwrap_or_default(),
            )
            .await
            .map(|_| ())
        }
    }))
    .buffer_unordered(options.concurrency)
    .collect()
    .await;
    deleted.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
    let seconds = started.elapsed().as_secs_f64();
    // Only the bench's own client talks to these servers.
    Ok((
        seconds,
        in_flight(&pair.source.requests(), &pair.target.requests(), ""),
    ))
}

/// `object` as a create sends it: without what the server sets, and without owners (the
/// ceiling creates in any order).
fn create_body(object: &Value) -> Value {
    let mut body = object.clone();
    let meta = body["metadata"].as_object_mut().expect("metadata");
    for key in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "ownerReferences",
    ] {
        meta.remove(key);
    }
    body
}

async fn patch_object(client: &kube::Client, object: &Value, patch: &Value) -> anyhow::Result<()> {
    capi_sandbox::api::merge_patch(
        client,
        object["apiVersion"].as_str().unwrap_or_default(),
        object["kind"].as_str().unwrap_or_default(),
        "bench",
        object["metadata"]["name"].as_str().unwrap_or_default(),
        patch,
    )
    .await
    .map(|_| ())
}

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

#[cfg(test)]
mod tests {
    use super::*;

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
