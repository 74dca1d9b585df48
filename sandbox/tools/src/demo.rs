//! The whole story, non-interactively, with the real plugin binary through kubectl's plugin
//! lookup: a control plane scaling up → move refused → pause → ready --wait → move → resume in
//! the target; then the same story as one command (`move --freeze --wait-ready`) for a second
//! cluster whose control plane scales up while the command runs. Steps the plugin does not
//! implement yet are shown as pending.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use capi_sandbox::controllers::{Delays, Step};
use capi_sandbox::crds::Dialect;
use capi_sandbox::environment::{Environment, Options, Progress, SOURCE_CONTEXT, TARGET_CONTEXT};
use capi_sandbox::workload::Workload;

pub struct DemoOptions {
    /// The kubectl-capi binary; its directory is put first on PATH for kubectl's plugin lookup.
    pub plugin: PathBuf,
    pub delays: Delays,
    pub dialect: Dialect,
    /// End with the Cluster API quick start's last step: a self-hosted pivot of a third cluster
    /// into itself (`move --to-cluster`), the target server playing that cluster.
    pub pivot: bool,
    /// Serve plain HTTP instead of HTTPS with client certificates.
    pub plain_http: bool,
}

#[derive(Debug, Clone)]
pub struct StepOutcome {
    pub command: String,
    pub code: i32,
    pub pending: bool,
}

#[derive(Debug, Default)]
pub struct DemoReport {
    pub steps: Vec<StepOutcome>,
    /// Every cluster ready in the target and none left in the source.
    pub moved: bool,
}

impl DemoReport {
    pub fn pending(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter(|s| s.pending)
            .map(|s| s.command.as_str())
            .collect()
    }
}

const CLUSTER: &str = "demo-1";
/// Moved by the one command at the end.
const SECOND: &str = "demo-2";
/// The ClusterClass the second cluster is made from: its topology owns its replicas.
const CLASS: &str = "demo-class";
/// The cluster of the self-hosted pivot (`--pivot`).
const PIVOTED: &str = "demo-3";

/// Runs kubectl and returns its exit code and its stdout and stderr interleaved as a terminal
/// shows them.
async fn run_kubectl(
    plugin_dir: &Path,
    kubeconfig: &Path,
    cache: &Path,
    args: &[&str],
) -> anyhow::Result<(i32, Vec<u8>)> {
    let path = format!(
        "{}:{}",
        plugin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (mut reader, writer) = std::io::pipe()?;
    let mut child = tokio::process::Command::new("kubectl")
        .args(args)
        .env("PATH", path)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", cache)
        // Move journals stay in the demo's own directory, never the user's state directory.
        .env(
            "XDG_STATE_HOME",
            cache.parent().unwrap_or(cache).join("state"),
        )
        .stdin(std::process::Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .spawn()
        .context("running kubectl (it must be on PATH)")?;
    let output = tokio::task::spawn_blocking(move || {
        let mut output = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut output).map(|_| output)
    });
    let status = child.wait().await?;
    Ok((status.code().unwrap_or(-1), output.await??))
}

/// Runs `kubectl` with the plugin first on PATH and records each step.
struct Kubectl<'a> {
    plugin_dir: &'a Path,
    kubeconfig: &'a Path,
    cache: &'a Path,
}

impl Kubectl<'_> {
    async fn step(
        &self,
        args: &[&str],
        out: &mut dyn Write,
        report: &mut DemoReport,
    ) -> anyhow::Result<StepOutcome> {
        self.step_while(args, out, report, async {}).await
    }

    /// Runs a step while `meanwhile` runs alongside it (the simulated world moving on).
    async fn step_while(
        &self,
        args: &[&str],
        out: &mut dyn Write,
        report: &mut DemoReport,
        meanwhile: impl std::future::Future<Output = ()>,
    ) -> anyhow::Result<StepOutcome> {
        writeln!(out, "\n$ kubectl {}", args.join(" "))?;
        let (output, ()) = tokio::join!(
            run_kubectl(self.plugin_dir, self.kubeconfig, self.cache, args),
            meanwhile
        );
        let (code, output) = output?;
        out.write_all(&output)?;
        let pending =
            code == 2 && String::from_utf8_lossy(&output).contains("is not implemented yet");
        if pending {
            writeln!(out, "# pending: this step lands with a later issue")?;
        }
        let outcome = StepOutcome {
            command: format!("kubectl {}", args.join(" ")),
            code,
            pending,
        };
        report.steps.push(outcome.clone());
        Ok(outcome)
    }
}

pub async fn run(options: &DemoOptions, out: &mut dyn Write) -> anyhow::Result<DemoReport> {
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    let plugin_dir = options
        .plugin
        .parent()
        .context("plugin path has no directory")?
        .to_path_buf();
    let mut environment = Options::new(options.dialect, options.delays);
    environment.tls = !options.plain_http;
    environment.self_hosted = options.pivot.then(|| PIVOTED.to_string());
    let env = Environment::start(&environment, &kubeconfig).await?;
    let mut report = DemoReport::default();
    let timeout = options.delays.node * 200 + Duration::from_secs(10);

    writeln!(
        out,
        "# Two management clusters: {SOURCE_CONTEXT} and {TARGET_CONTEXT} (kubeconfig {})",
        kubeconfig.display()
    )?;
    create_workloads(&env, options.dialect, timeout, out).await?;

    scale_up_control_plane(&env, options.dialect, CLUSTER, out).await?;

    let kubeconfig_text = kubeconfig.display().to_string();
    let cache = dir.path().join("cache");
    let move_args = [
        "capi",
        "move",
        CLUSTER,
        "--to-kubeconfig",
        kubeconfig_text.as_str(),
        "--to-context",
        TARGET_CONTEXT,
    ];
    let kubectl = Kubectl {
        plugin_dir: &plugin_dir,
        kubeconfig: &kubeconfig,
        cache: &cache,
    };
    kubectl.step(&["capi", "version"], out, &mut report).await?;
    kubectl
        .step(&["capi", "ready", CLUSTER], out, &mut report)
        .await?;
    kubectl.step(&move_args, out, &mut report).await?;
    kubectl
        .step(&["capi", "pause", CLUSTER], out, &mut report)
        .await?;
    // Provisioning of the in-flight Machine goes on: a freeze only stops new Machines.
    env.source.controllers.holds.release_all();
    kubectl
        .step(&["capi", "ready", CLUSTER, "--wait"], out, &mut report)
        .await?;
    let moved = kubectl.step(&move_args, out, &mut report).await?;
    release_after_move(&env, &kubectl, &moved, timeout, (out, &mut report)).await?;

    one_command(
        &env,
        &kubectl,
        (&kubeconfig_text, timeout),
        (out, &mut report),
    )
    .await?;

    if options.pivot {
        self_hosted_pivot(&env, &kubectl, (out, &mut report), timeout).await?;
    }

    writeln!(out)?;
    report.moved = moved_everything(&env, options.dialect, out)?;
    if !report.pending().is_empty() {
        writeln!(
            out,
            "# {} step(s) pending in the plugin",
            report.pending().len()
        )?;
    }
    Ok(report)
}

/// After the move: the freeze released where the Cluster is now (still the source when the
/// move is pending), and the target given time to adopt it.
async fn release_after_move(
    env: &Environment,
    kubectl: &Kubectl<'_>,
    moved: &StepOutcome,
    timeout: Duration,
    (out, report): (&mut dyn Write, &mut DemoReport),
) -> anyhow::Result<()> {
    if moved.pending {
        writeln!(
            out,
            "# the move is pending, so the freeze is released where the cluster still is"
        )?;
        kubectl
            .step(&["capi", "resume", CLUSTER], out, report)
            .await?;
        return Ok(());
    }
    kubectl
        .step(
            &["capi", "resume", CLUSTER, "--context", TARGET_CONTEXT],
            out,
            report,
        )
        .await?;
    if moved.code == 0 {
        // The target's controllers rebuild status (a move does not carry it) and adopt the machines.
        let _ = env
            .wait_provisioned(&env.target, "default", CLUSTER, timeout)
            .await;
    }
    Ok(())
}

/// The same story in one command for the second cluster, scaling while the command runs:
/// freeze, wait until ready, move, release the freeze in the target, verify.
async fn one_command(
    env: &Environment,
    kubectl: &Kubectl<'_>,
    (kubeconfig_text, timeout): (&str, Duration),
    (out, report): (&mut dyn Write, &mut DemoReport),
) -> anyhow::Result<()> {
    writeln!(
        out,
        "\n# The same story in one command: freeze, wait until ready, move, release the freeze in {TARGET_CONTEXT}, and prove the target adopted the cluster"
    )?;
    scale_up_control_plane(env, env.dialect, SECOND, out).await?;
    let one_command = [
        "capi",
        "move",
        SECOND,
        "--freeze",
        "--wait-ready",
        "--verify",
        "--to-kubeconfig",
        kubeconfig_text,
        "--to-context",
        TARGET_CONTEXT,
    ];
    // The in-flight Machine gets its node while the command waits, once the freeze is in place.
    let node_joins_once_frozen = async {
        poll_until(|| control_plane_frozen(env, SECOND)).await;
        env.source.controllers.holds.release_all();
    };
    let moved_in_one = kubectl
        .step_while(&one_command, out, report, node_joins_once_frozen)
        .await?;
    if !moved_in_one.pending && moved_in_one.code == 0 {
        let _ = env
            .wait_provisioned(&env.target, "default", SECOND, timeout)
            .await;
    }

    Ok(())
}

/// The Cluster API quick start's last step: a workload cluster made in the source takes over
/// its own management — moved into itself through its kubeconfig Secret, and verified there.
async fn self_hosted_pivot(
    env: &Environment,
    kubectl: &Kubectl<'_>,
    (out, report): (&mut dyn Write, &mut DemoReport),
    timeout: Duration,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "\n# A self-hosted pivot: {PIVOTED} is made in {SOURCE_CONTEXT}, then moved into itself (its kubeconfig Secret reaches it; here {TARGET_CONTEXT} plays {PIVOTED})"
    )?;
    let mut workload = Workload::new("default", PIVOTED);
    workload.control_plane_replicas = 1;
    workload.workers = 1;
    env.create_workload(&workload).await?;
    env.wait_provisioned(&env.source, "default", PIVOTED, timeout)
        .await?;
    // Its kubeconfig Secret comes in a pass after the control plane is up.
    env.source
        .controllers
        .settle(timeout)
        .await
        .map_err(anyhow::Error::msg)?;
    let pivot = ["capi", "move", PIVOTED, "--to-cluster", PIVOTED, "--verify"];
    kubectl.step(&pivot, out, report).await?;
    Ok(())
}

/// The two workload clusters, each with one control-plane Machine and one worker, provisioned
/// in the source.
async fn create_workloads(
    env: &Environment,
    dialect: Dialect,
    timeout: Duration,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    for name in [CLUSTER, SECOND] {
        let mut workload = Workload::new("default", name);
        workload.control_plane_replicas = 1;
        workload.workers = 1;
        if name == SECOND {
            workload.class = Some(CLASS.into());
        }
        env.create_workload(&workload).await?;
        writeln!(
            out,
            "# Creating workload cluster {name} (1 control-plane Machine, 1 worker{}) in {SOURCE_CONTEXT}",
            if name == SECOND {
                format!("; from ClusterClass {CLASS}")
            } else {
                String::new()
            }
        )?;
    }
    for name in [CLUSTER, SECOND] {
        env.wait_provisioned(&env.source, "default", name, timeout)
            .await?;
        writeln!(
            out,
            "# {name}: {}",
            Progress::of(&env.source.server, dialect, "default", name)
        )?;
    }

    Ok(())
}

/// Whether both clusters are complete in the target with nothing left in the source; says so
/// for each.
fn moved_everything(
    env: &Environment,
    dialect: Dialect,
    out: &mut dyn Write,
) -> anyhow::Result<bool> {
    let mut moved_all = true;
    for name in [CLUSTER, SECOND] {
        let source_left = Progress::of(&env.source.server, dialect, "default", name).machines;
        let target = Progress::of(&env.target.server, dialect, "default", name);
        if source_left == 0 && target.complete() {
            writeln!(
                out,
                "# Done: {name} is ready in {TARGET_CONTEXT} ({target}) and nothing is left in {SOURCE_CONTEXT}"
            )?;
        } else {
            moved_all = false;
            writeln!(
                out,
                "# Not moved: {name} ({SOURCE_CONTEXT} still holds {source_left} of its Machines; {TARGET_CONTEXT}: {target})"
            )?;
        }
    }
    Ok(moved_all)
}

/// Scales a cluster's control plane from 1 to 3 with new nodes held back, so the next step meets
/// an in-flight Machine for certain, as users do.
async fn scale_up_control_plane(
    env: &Environment,
    dialect: Dialect,
    cluster: &str,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    env.source.controllers.holds.hold(None, Step::Node);
    let version = if dialect == Dialect::V1beta1 {
        "v1beta1"
    } else {
        "v1beta2"
    };
    let client = env.source.server.client();
    let topology = env
        .source
        .server
        .object("cluster.x-k8s.io", "clusters", "default", cluster)
        .is_some_and(|c| !c["spec"]["topology"].is_null());
    if topology {
        // A ClusterClass cluster is scaled through its topology (a direct patch is set back).
        capi_sandbox::api::merge_patch(
            &client,
            &format!("cluster.x-k8s.io/{version}"),
            "Cluster",
            "default",
            cluster,
            &json!({"spec": {"topology": {"controlPlane": {"replicas": 3}}}}),
        )
        .await?;
    } else {
        capi_sandbox::api::merge_patch(
            &client,
            &format!("controlplane.cluster.x-k8s.io/{version}"),
            "KubeadmControlPlane",
            "default",
            &format!("{cluster}-control-plane"),
            &json!({"spec": {"replicas": 3}}),
        )
        .await?;
    }
    writeln!(
        out,
        "# Scaling the control plane of {cluster} from 1 to 3 Machines"
    )?;
    poll_until(|| !env.source.controllers.holds.waiting().is_empty()).await;
    writeln!(
        out,
        "# {cluster}: {}",
        Progress::of(&env.source.server, dialect, "default", cluster)
    )?;
    Ok(())
}

/// Waits until `condition` holds, for at most 20 seconds (the demo then shows what it got).
async fn poll_until(condition: impl Fn() -> bool) {
    for _ in 0..2000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether kubectl-capi's freeze marker is on the cluster's control plane in the source.
fn control_plane_frozen(env: &Environment, cluster: &str) -> bool {
    env.source
        .server
        .object(
            "controlplane.cluster.x-k8s.io",
            "kubeadmcontrolplanes",
            "default",
            &format!("{cluster}-control-plane"),
        )
        .is_some_and(|kcp| kcp["metadata"]["annotations"]["kubectl-capi.dev/frozen"].is_string())
}
