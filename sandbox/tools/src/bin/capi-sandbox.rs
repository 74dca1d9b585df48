//! capi-sandbox: in-memory Kubernetes API servers with Cluster API CRDs and simulated
//! controllers, for kubectl-capi's tests and demos.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use capi_sandbox::ApiServer;
use capi_sandbox::apiserver::{ServerOptions, write_kubeconfig};
use capi_sandbox::controllers::Delays;
use capi_sandbox::crds::Dialect;
use capi_sandbox::environment::{Environment, Options, Progress, SOURCE_CONTEXT, TARGET_CONTEXT};
use capi_sandbox::workload::Workload;
use clap::{Parser, Subcommand};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "capi-sandbox",
    version,
    about = "In-memory Kubernetes API servers with Cluster API CRDs and simulated controllers: the test substrate of kubectl-capi"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `up`'s settings.
#[derive(clap::Args)]
struct Up {
    /// Where to write the kubeconfig (contexts sandbox-source and sandbox-target).
    #[arg(long, default_value = "sandbox.kubeconfig")]
    kubeconfig: PathBuf,
    /// Workload clusters to create in the source (named workload-1, workload-2, …).
    #[arg(long, default_value_t = 1)]
    clusters: usize,
    #[arg(long, default_value_t = 1)]
    control_plane_replicas: i64,
    /// Replicas of each cluster's MachineDeployment.
    #[arg(long, default_value_t = 1)]
    workers: i64,
    #[arg(long, value_enum, default_value_t = Dialect::V1beta2)]
    dialect: Dialect,
    /// Provisioning step delay in milliseconds (default: seconds, like a slow cloud).
    #[arg(long)]
    delay_ms: Option<u64>,
    /// Infrastructure clusters carry clusterctl's block-move annotation until paused.
    #[arg(long)]
    block_move: bool,
    /// The target's infrastructure provider cannot find the machines a move brings along, so its
    /// controllers replace them with new ones (what `kubectl capi verify` must catch).
    #[arg(long)]
    target_cannot_adopt: bool,
    /// The workload cluster the target server plays: its NAME-kubeconfig Secret in the source
    /// reaches the target, for a self-hosted pivot (`kubectl capi move NAME --to-cluster NAME`).
    #[arg(long, value_name = "NAME")]
    self_hosted: Option<String>,
    /// Serve plain HTTP (default: HTTPS, clients authenticated by certificate, as a real
    /// management cluster).
    #[arg(long)]
    plain_http: bool,
}

/// Where `scale` and `node` find a running sandbox: its kubeconfig, context and namespace.
#[derive(clap::Args)]
struct Running {
    #[arg(long, default_value = "sandbox.kubeconfig")]
    kubeconfig: PathBuf,
    #[arg(long, default_value = SOURCE_CONTEXT)]
    context: String,
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
}

#[derive(Subcommand)]
enum Command {
    /// Serve one in-memory API server on 127.0.0.1 with the Cluster API CRDs and clusterctl's
    /// provider inventory installed, write a kubeconfig (context "sandbox") and serve until
    /// Ctrl-C, so real kubectl (and kubectl capi) can talk to it. No controllers run.
    Serve {
        /// Port to listen on (0: any free port).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Where to write the kubeconfig.
        #[arg(long, default_value = "sandbox.kubeconfig")]
        kubeconfig: PathBuf,
        /// Which Cluster API CRD flavour to install.
        #[arg(long, value_enum, default_value_t = Dialect::V1beta2)]
        dialect: Dialect,
        /// Serve plain HTTP (default: HTTPS, clients authenticated by certificate, as a real
        /// management cluster).
        #[arg(long)]
        plain_http: bool,
        /// Also accept this bearer token (written into the kubeconfig).
        #[arg(long)]
        token: Option<String>,
    },
    /// Start a source and a target management cluster with simulated Cluster API controllers and
    /// one shared fake cloud, create workload clusters in the source, and run until Ctrl-C.
    Up(Up),
    /// Scale a workload cluster's control plane and/or workers (from another terminal than `up`).
    Scale {
        #[command(flatten)]
        at: Running,
        /// The workload Cluster's name.
        #[arg(long)]
        cluster: String,
        #[arg(long)]
        control_plane: Option<i64>,
        #[arg(long)]
        workers: Option<i64>,
    },
    /// Make a Machine's node unhealthy (or healthy again), for MachineHealthCheck scenarios.
    Node {
        #[command(flatten)]
        at: Running,
        /// The Machine's name.
        #[arg(long)]
        machine: String,
        #[arg(long, conflicts_with = "healthy")]
        unhealthy: bool,
        #[arg(long)]
        healthy: bool,
    },
    /// Run the whole story non-interactively with the real plugin: a scale-up refusing the move,
    /// pause, ready --wait, move, resume in the target.
    Demo {
        /// The kubectl-capi binary (default: next to this one).
        #[arg(long)]
        plugin: Option<PathBuf>,
        #[arg(long, default_value_t = 300)]
        delay_ms: u64,
        #[arg(long, value_enum, default_value_t = Dialect::V1beta2)]
        dialect: Dialect,
        /// End with a self-hosted pivot: a third cluster moved into itself (move --to-cluster).
        #[arg(long)]
        pivot: bool,
        /// Serve plain HTTP (default: HTTPS, clients authenticated by certificate, as a real
        /// management cluster).
        #[arg(long)]
        plain_http: bool,
    },
    /// Measure the API server's capacity: creates (sequential and concurrent, in-process) up to
    /// --objects stored objects, and LIST of --listed objects in-process and over HTTP.
    BenchApiserver {
        #[arg(long, default_value_t = 50_000)]
        objects: usize,
        #[arg(long, default_value_t = 10_000)]
        listed: usize,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
    },
    /// Measure kubectl-capi's move: --clusters workload clusters of one control-plane Machine and
    /// --workers workers between two servers over loopback, with --write-latency-ms per write;
    /// also with --concurrency 1, and the servers' raw ceiling.
    BenchMove {
        /// The kubectl-capi binary.
        #[arg(long)]
        plugin: PathBuf,
        #[arg(long, default_value_t = 100)]
        clusters: usize,
        #[arg(long, default_value_t = 20)]
        workers: usize,
        #[arg(long, default_value_t = 5)]
        write_latency_ms: u64,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Skip the sequential (--concurrency 1) run.
        #[arg(long)]
        no_sequential: bool,
        /// Objects shaped like a real management cluster's (certificate-sized Secrets, kubeadm
        /// specs, controller status and its managedFields): answers as heavy as a real server's.
        #[arg(long)]
        real_shaped: bool,
        /// Serve plain HTTP (default: HTTPS, clients authenticated by certificate, as a real
        /// management cluster).
        #[arg(long)]
        plain_http: bool,
    },
}

async fn client_for(kubeconfig: &PathBuf, context: &str) -> anyhow::Result<kube::Client> {
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(kubeconfig)
            .with_context(|| format!("reading {}", kubeconfig.display()))?,
        &kube::config::KubeConfigOptions {
            context: Some(context.to_string()),
            ..Default::default()
        },
    )
    .await?;
    Ok(kube::Client::try_from(config)?)
}

/// The served version of the core group (v1beta2, else v1beta1).
async fn core_version(client: &kube::Client) -> anyhow::Result<&'static str> {
    let group = kube::discovery::group(client, "cluster.x-k8s.io")
        .await
        .context("Cluster API is not served")?;
    Ok(if group.versions().any(|v| v == "v1beta2") {
        "v1beta2"
    } else {
        "v1beta1"
    })
}

async fn up(
    Up {
        kubeconfig,
        clusters,
        control_plane_replicas,
        workers,
        dialect,
        delay_ms,
        block_move,
        target_cannot_adopt,
        self_hosted,
        plain_http,
    }: Up,
) -> anyhow::Result<()> {
    let delays = delay_ms.map(Delays::millis).unwrap_or_else(Delays::seconds);
    let mut options = Options::new(dialect, delays);
    options.block_move = block_move;
    options.target_cannot_adopt = target_cannot_adopt;
    options.self_hosted = self_hosted;
    options.tls = !plain_http;
    let env = Environment::start(&options, &kubeconfig).await?;
    eprintln!(
        "source: {} (context {SOURCE_CONTEXT})",
        env.source.serving.url
    );
    eprintln!(
        "target: {} (context {TARGET_CONTEXT})",
        env.target.serving.url
    );
    eprintln!("kubeconfig written to {}", kubeconfig.display());
    let names: Vec<String> = (1..=clusters).map(|i| format!("workload-{i}")).collect();
    for name in &names {
        let mut workload = Workload::new("default", name);
        workload.control_plane_replicas = control_plane_replicas;
        workload.workers = workers;
        workload.machine_deployment = workers > 0;
        env.create_workload(&workload).await?;
    }
    eprintln!(
        "created {} workload cluster(s) in the source; Ctrl-C stops everything",
        names.len()
    );
    let mut last: Vec<String> = Vec::new();
    loop {
        let lines: Vec<String> = names
            .iter()
            .map(|name| {
                format!(
                    "{name}: {}",
                    Progress::of(&env.source.server, dialect, "default", name)
                )
            })
            .collect();
        if lines != last {
            for line in &lines {
                eprintln!("{line}");
            }
            last = lines;
        }
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}

/// `serve`: one API server with the CRDs, until Ctrl-C.
async fn serve(
    port: u16,
    kubeconfig: PathBuf,
    dialect: Dialect,
    (plain_http, token): (bool, Option<String>),
) -> anyhow::Result<()> {
    let server = ApiServer::new(ServerOptions {
        tls: !plain_http,
        client_certificates: !plain_http,
        token,
        ..ServerOptions::default()
    });
    capi_sandbox::crds::install_with_inventory(&server, dialect)
        .context("installing the Cluster API CRDs")?;
    let serving = server.serve(port).await?;
    write_kubeconfig(&kubeconfig, &[serving.kubeconfig_entry("sandbox")])?;
    eprintln!("serving {} ({} CRDs)", serving.url, dialect.describe());
    eprintln!("kubeconfig written to {}", kubeconfig.display());
    eprintln!(
        "try: kubectl --kubeconfig {} api-resources",
        kubeconfig.display()
    );
    tokio::signal::ctrl_c().await?;
    Ok(())
}

/// `scale`: a workload cluster's control plane and/or workers.
async fn scale(
    at: Running,
    cluster: String,
    (control_plane, workers): (Option<i64>, Option<i64>),
) -> anyhow::Result<()> {
    let Running {
        kubeconfig,
        context,
        namespace,
    } = at;
    let client = client_for(&kubeconfig, &context).await?;
    let version = core_version(&client).await?;
    let scalers = [
        (
            control_plane,
            "controlplane.cluster.x-k8s.io",
            "KubeadmControlPlane",
            format!("{cluster}-control-plane"),
        ),
        (
            workers,
            "cluster.x-k8s.io",
            "MachineDeployment",
            format!("{cluster}-md-0"),
        ),
    ];
    for (replicas, group, kind, name) in scalers {
        let Some(replicas) = replicas else {
            continue;
        };
        capi_sandbox::api::merge_patch(
            &client,
            &format!("{group}/{version}"),
            kind,
            &namespace,
            &name,
            &json!({"spec": {"replicas": replicas}}),
        )
        .await?;
        println!(
            "{}.{group}/{name} scaled to {replicas}",
            kind.to_lowercase()
        );
    }
    Ok(())
}

/// `demo`: the story, told with the plugin against a fresh pair of management clusters.
async fn demo(
    plugin: Option<PathBuf>,
    delay_ms: u64,
    (dialect, pivot, plain_http): (Dialect, bool, bool),
) -> anyhow::Result<()> {
    let plugin = match plugin {
        Some(p) => p,
        None => std::env::current_exe()?.with_file_name("kubectl-capi"),
    };
    if !plugin.exists() {
        anyhow::bail!(
            "{} not found; build it (cargo build -p kubectl-capi) or pass --plugin",
            plugin.display()
        );
    }
    let options = capi_sandbox_tools::demo::DemoOptions {
        plugin,
        delays: Delays::millis(delay_ms),
        dialect,
        pivot,
        plain_http,
    };
    let mut stdout = std::io::stdout();
    capi_sandbox_tools::demo::run(&options, &mut stdout).await?;
    Ok(())
}

/// `node`: marks the node of `machine` healthy or not (the fake cloud's node health).
async fn node(at: Running, machine: &str, healthy: bool) -> anyhow::Result<()> {
    let client = client_for(&at.kubeconfig, &at.context).await?;
    let version = core_version(&client).await?;
    let value = if healthy { "healthy" } else { "unhealthy" };
    capi_sandbox::api::merge_patch(
        &client,
        &format!("cluster.x-k8s.io/{version}"),
        "Machine",
        &at.namespace,
        machine,
        &json!({"metadata": {"annotations": {capi_sandbox::controllers::NODE_HEALTH_ANNOTATION: value}}}),
    )
    .await?;
    println!("machine.cluster.x-k8s.io/{machine} node {value}");
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            port,
            kubeconfig,
            dialect,
            plain_http,
            token,
        } => serve(port, kubeconfig, dialect, (plain_http, token)).await,
        Command::Up(settings) => up(settings).await,
        Command::Scale {
            at,
            cluster,
            control_plane,
            workers,
        } => scale(at, cluster, (control_plane, workers)).await,
        Command::Node {
            at,
            machine,
            unhealthy,
            healthy,
        } => {
            if unhealthy == healthy {
                anyhow::bail!("pass exactly one of --unhealthy or --healthy");
            }
            node(at, &machine, healthy).await
        }
        Command::Demo {
            plugin,
            delay_ms,
            dialect,
            pivot,
            plain_http,
        } => demo(plugin, delay_ms, (dialect, pivot, plain_http)).await,
        Command::BenchMove {
            plugin,
            clusters,
            workers,
            write_latency_ms,
            concurrency,
            no_sequential,
            real_shaped,
            plain_http,
        } => {
            let options = capi_sandbox_tools::bench_move::MoveOptions {
                clusters,
                workers,
                write_latency: Duration::from_millis(write_latency_ms),
                concurrency,
                plugin,
                sequential: !no_sequential,
                real_shaped,
                plain_http,
            };
            print!("{}", capi_sandbox_tools::bench_move::run(&options).await?);
            Ok(())
        }
        Command::BenchApiserver {
            objects,
            listed,
            concurrency,
        } => {
            let options = capi_sandbox_tools::bench::Options {
                objects,
                listed: listed.min(objects),
                concurrency,
            };
            let figures = capi_sandbox_tools::bench::apiserver(&options).await?;
            let width = figures.iter().map(|f| f.what.len()).max().unwrap_or(0);
            for figure in figures {
                println!("{:width$}  {}", figure.what, figure.value);
            }
            Ok(())
        }
    }
}
