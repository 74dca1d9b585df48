//! Command-line types only: what the user can type. `settings` resolves them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub const EXIT_CODES: &str = "Exit codes:
  0    success (for ready: every selected cluster can be moved)
  1    the answer is no: not ready, a --wait timed out, or a move refused by its preflight
  2    error: bad input, unreachable or refusing API server, missing Cluster API
  130  interrupted (Ctrl-C)";

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-capi",
    bin_name = "kubectl capi",
    version,
    about = "Cluster API operations around clusterctl move: readiness, scaling freeze and a resumable move",
    after_help = EXIT_CODES,
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// kubectl's own flags, accepted before or after the subcommand.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, merged like kubectl, or ~/.kube/config).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// The kubeconfig cluster to use (kubectl's meaning; Cluster API Clusters are positional names).
    #[arg(long, global = true, value_name = "NAME")]
    pub cluster: Option<String>,
    /// The kubeconfig user to use.
    #[arg(long, global = true, value_name = "NAME")]
    pub user: Option<String>,
    /// Namespace of the Cluster API objects (default: the context's namespace, else "default").
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,
    /// Label selector on Clusters (e.g. env=prod,tier in (a,b)).
    #[arg(short = 'l', long, global = true, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Output format: table, wide, json, yaml or name.
    #[arg(short = 'o', long, global = true, value_name = "FORMAT")]
    pub output: Option<String>,
    /// Time limit of each API request, as kubectl takes it: 0 (none), 30 (seconds), 1s, 2m, 3h.
    #[arg(long, global = true, value_name = "DURATION")]
    pub request_timeout: Option<String>,
    /// Log verbosity, as kubectl's -v (requests at 6 and above).
    #[arg(short = 'v', long = "v", global = true, value_name = "LEVEL")]
    pub verbosity: Option<u8>,
    /// Impersonate this user.
    #[arg(long = "as", global = true, value_name = "USER")]
    pub as_user: Option<String>,
    /// Impersonate this group (repeatable).
    #[arg(long = "as-group", global = true, value_name = "GROUP")]
    pub as_group: Vec<String>,
    /// Do not verify the server's certificate (insecure).
    #[arg(long, global = true)]
    pub insecure_skip_tls_verify: bool,
    /// When to colour status words.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Can these clusters be moved now? Which object blocks, and why.
    #[command(after_help = READY_HELP)]
    Ready(ReadyArgs),
    /// Freeze control-plane and worker scaling while in-flight Machines finish.
    #[command(after_help = PAUSE_HELP)]
    Pause(PauseArgs),
    /// Undo exactly what `pause` froze (in either management cluster).
    #[command(after_help = RESUME_HELP)]
    Resume(ResumeArgs),
    /// Move Cluster API objects to another management cluster, clusterctl-compatible.
    #[command(after_help = MOVE_HELP)]
    Move(MoveArgs),
    /// The plugin's version and the management cluster's Cluster API version.
    Version(VersionArgs),
    /// Shell completion script for bash, zsh, fish, elvish or powershell.
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

pub const READY_HELP: &str =
    "Checks, per Cluster: clusterctl move's own preflight (infrastructure provisioned, control
plane initialized, every Machine has a node — with clusterctl's messages), and what clusterctl
misses: Machines being deleted, scaling in progress (blocking until `kubectl capi pause` freezes
it), MachineHealthCheck remediation, paused Clusters/ClusterClasses, dangling owner references,
block-move annotations (information), node health and autoscaled groups (warnings).

Target-side checks (providers, CRDs and permissions in the destination) belong to
`kubectl capi move --dry-run=server`.

Exit codes:
  0    every selected cluster can be moved
  1    at least one cannot (or --wait timed out)
  2    error: bad input, API error, no clusters matched
  130  interrupted (Ctrl-C)";

#[derive(Debug, Args, Clone, Default)]
pub struct ReadyArgs {
    /// Cluster names (default: every Cluster in the namespace, or with -A everywhere).
    pub clusters: Vec<String>,
    /// Wait until every selected cluster can be moved (driven by watches).
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits, e.g. 30s, 10m.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub timeout: String,
    /// List every check with its status, object and message.
    #[arg(long)]
    pub details: bool,
    /// Node health problems block instead of warning.
    #[arg(long)]
    pub strict: bool,
}

pub const PAUSE_HELP: &str =
    "Puts cluster.x-k8s.io/paused on exactly the objects that create or delete Machines: the
control plane object, every MachineDeployment and MachineSet, every MachinePool and its
infrastructure machine pool, and the Cluster's MachineHealthChecks (unless --keep-remediation).
Machines already being provisioned go on until they have their node. Never touches
Cluster.spec.paused, Machines, bootstrap configs or infrastructure machines. Each frozen object
also gets the kubectl-capi.dev/frozen marker (when, by whom, why); objects paused by someone else
are reported and left as they are.

Exit codes: 0 done, 1 --wait timed out, 2 error.";

pub const RESUME_HELP: &str =
    "Removes cluster.x-k8s.io/paused and the kubectl-capi.dev/frozen marker from the objects that
carry the marker — only what `kubectl capi pause` froze. Works against the source after an aborted
move and against the target after a move (the annotations travel with the objects).

Exit codes: 0 done, 1 --wait timed out, 2 error.";

/// Which Clusters a freeze or its release concerns, and how.
#[derive(Debug, Args, Clone, Default)]
pub struct FreezeSelection {
    /// Cluster names.
    pub clusters: Vec<String>,
    /// Every Cluster in the namespace (required when no names, -A or -l are given).
    #[arg(long)]
    pub all: bool,
    /// Wait until every object acknowledges (condition Paused).
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits, e.g. 30s, 10m.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub timeout: String,
    /// Show what would change without changing it: client (nothing sent) or server (dryRun=All).
    #[arg(long, num_args = 0..=1, default_missing_value = "client", require_equals = true, value_name = "client|server")]
    pub dry_run: Option<String>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct PauseArgs {
    #[command(flatten)]
    pub selection: FreezeSelection,
    /// Why, recorded in the marker annotation.
    #[arg(long)]
    pub reason: Option<String>,
    /// Leave MachineHealthChecks running (their remediation may then delete and recreate Machines).
    #[arg(long)]
    pub keep_remediation: bool,
}

#[derive(Debug, Args, Clone, Default)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub selection: FreezeSelection,
}

pub const MOVE_HELP: &str =
    "Moves the named Clusters (default: every Cluster in the namespace; -A: all namespaces) and
what they own, with clusterctl move's object graph, order and checks. Every check runs before the
first write: clusterctl's preflight and ready's, paused Clusters/ClusterClasses, kinds served by
the target, the target's provider versions, permissions in both clusters (access reviews), and a
server-side dry-run create of every object in the target. Objects shared with Clusters that stay
are copied and kept in the source; objects that cannot move are listed with the reason.

--dry-run (=client) prints the plan; --dry-run=server also runs the whole preflight.

Exit codes: 0 moved (or plan printed), 1 refused by the preflight (nothing written), 2 error.";

#[derive(Debug, Args, Clone, Default)]
pub struct MoveArgs {
    /// Cluster names (default: every Cluster in the namespace).
    pub clusters: Vec<String>,
    /// kubeconfig of the target management cluster (default: the source's, with --to-context).
    #[arg(long, value_name = "PATH")]
    pub to_kubeconfig: Option<std::path::PathBuf>,
    /// Context of the target management cluster.
    #[arg(long, visible_alias = "to-kubeconfig-context", value_name = "NAME")]
    pub to_context: Option<String>,
    /// Print the plan (client), or also run the whole preflight against the target (server).
    #[arg(long, num_args = 0..=1, default_missing_value = "client", require_equals = true, value_name = "client|server")]
    pub dry_run: Option<String>,
    /// How long to wait for providers' block-move annotations to go, e.g. 30s, 10m.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub timeout: String,
    /// Replay each object's .status through the status subresource after creating it (for
    /// providers that keep state there that controllers cannot rebuild).
    #[arg(long)]
    pub restore_status: bool,
    /// First freeze the Clusters' scaling (as `kubectl capi pause`), and after the move release
    /// that freeze in the target (as `kubectl capi resume`).
    #[arg(long, conflicts_with_all = ["dry_run", "to_directory", "from_directory"])]
    pub freeze: bool,
    /// First wait until the Clusters can be moved (as `kubectl capi ready --wait`, within
    /// --timeout).
    #[arg(long, conflicts_with_all = ["dry_run", "to_directory", "from_directory"])]
    pub wait_ready: bool,
    /// Where the move's journal is kept (default: under $XDG_STATE_HOME/kubectl-capi/moves, named
    /// after the move, so running the same command again finds it).
    #[arg(long, value_name = "PATH")]
    pub journal: Option<std::path::PathBuf>,
    /// Continue an interrupted move from its journal (running the same command again does too).
    #[arg(long, conflicts_with_all = ["dry_run", "to_directory", "from_directory"])]
    pub resume: bool,
    /// Undo an interrupted move before its deletion phase: remove the copies it made in the
    /// target (never objects that were there before) and unpause the source.
    #[arg(long, conflicts_with_all = ["dry_run", "to_directory", "from_directory", "resume", "freeze", "wait_ready"])]
    pub rollback: bool,
    /// Update objects that already exist in the target and that this move did not create, as
    /// clusterctl does (without it the move refuses and lists them). Global objects already
    /// there are reused either way.
    #[arg(long, conflicts_with_all = ["to_directory", "rollback"])]
    pub overwrite_existing: bool,
    /// Writes in flight at once within a move group (objects of one group never own each other).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256), value_name = "N")]
    pub concurrency: u16,
    /// Back up instead of moving: write the objects (clusterctl's file names) into DIR.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["to_kubeconfig", "to_context", "from_directory"])]
    pub to_directory: Option<std::path::PathBuf>,
    /// Restore a backup from DIR into the cluster of --kubeconfig/--context.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["to_kubeconfig", "to_context"])]
    pub from_directory: Option<std::path::PathBuf>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct VersionArgs {
    /// Only the plugin's version; do not contact the cluster.
    #[arg(long)]
    pub client: bool,
}
