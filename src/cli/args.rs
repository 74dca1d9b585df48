//! What the user can type, as clap reads it. `settings` and each command's request resolve it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use super::help::{COMPLETION_HELP, MOVE_HELP, READY_HELP, VERIFY_HELP, pause_help, resume_help};
use crate::choices::{ColorChoice, DryRun, OutputFormat};
use crate::durations::{request_timeout, timeout};

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-capi",
    bin_name = "kubectl capi",
    version,
    about = "Cluster API operations around clusterctl move: readiness, scaling freeze and a resumable move",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// kubectl's own flags, accepted before or after the subcommand; help lists them after each
/// command's own.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "kubectl flags")]
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
    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum, value_name = "FORMAT", default_value_t = OutputFormat::Table, hide_default_value = true)]
    pub output: OutputFormat,
    /// Time limit of each API request, as kubectl takes it: 0 (none), 30 (seconds), 1s, 2m, 3h.
    #[arg(long, global = true, value_name = "DURATION", value_parser = request_timeout, allow_hyphen_values = true)]
    pub request_timeout: Option<Duration>,
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
    /// The --kubeconfig was read from a cluster's Secret: use only its inline credentials
    /// (refuse exec, auth-provider, file paths, proxy-url, insecure-skip-tls-verify).
    #[arg(long, global = true)]
    pub kubeconfig_from_secret: bool,
    /// When to colour status words.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Can these clusters be moved now? Which object blocks, and why.
    #[command(after_help = READY_HELP)]
    Ready(ReadyArgs),
    /// Freeze control-plane and worker scaling while in-flight Machines finish.
    #[command(after_help = pause_help())]
    Pause(PauseArgs),
    /// Undo exactly what `pause` froze (in either management cluster).
    #[command(after_help = resume_help())]
    Resume(ResumeArgs),
    /// Move Cluster API objects to another management cluster, clusterctl-compatible.
    #[command(after_help = MOVE_HELP)]
    Move(MoveArgs),
    /// Prove a move took: the target adopted the moved Clusters' Machines and they are healthy.
    #[command(after_help = VERIFY_HELP)]
    Verify(VerifyArgs),
    /// The plugin's version and the management cluster's Cluster API version.
    Version(VersionArgs),
    /// Shell completion script for bash, zsh, fish, elvish or powershell; or, with `kubectl`,
    /// the completer kubectl runs for `kubectl capi <TAB>`.
    #[command(after_help = COMPLETION_HELP)]
    Completion {
        #[arg(value_enum)]
        shell: CompletionFor,
    },
}

/// What `kubectl capi completion` prints a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionFor {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
    /// `kubectl_complete-capi`, which kubectl (>= 1.26) runs for `kubectl capi <TAB>`: it asks
    /// whichever kubectl-capi kubectl finds, so it survives `kubectl krew upgrade` and
    /// uninstall.
    Kubectl,
}

#[derive(Debug, Args, Clone, Default)]
pub struct ReadyArgs {
    /// Cluster names (default: every Cluster in the namespace, or with -A everywhere).
    pub clusters: Vec<String>,
    /// Wait until every selected cluster can be moved (driven by watches).
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub wait_limit: WaitLimit,
    /// List every check with its status, object and message.
    #[arg(long)]
    pub details: bool,
    /// Node health problems block instead of warning.
    #[arg(long)]
    pub strict: bool,
    /// Also check the target of `move --to-cluster NAME`: the workload cluster NAME of the source,
    /// reached through its kubeconfig Secret, runs every provider the source does.
    #[arg(long, value_name = "NAME")]
    pub to_cluster: Option<String>,
}

/// `--timeout` of a command's `--wait`: declared once for `ready`, `pause`, `resume` and
/// `verify` (each says what its own `--wait` waits for).
#[derive(Debug, Args, Clone, Copy, PartialEq, Eq)]
pub struct WaitLimit {
    /// How long --wait waits, e.g. 30s, 10m.
    #[arg(long, requires = "wait", default_value = "10m", value_name = "DURATION", value_parser = timeout, allow_hyphen_values = true)]
    pub timeout: Duration,
}

impl Default for WaitLimit {
    fn default() -> Self {
        WaitLimit {
            timeout: Duration::from_secs(600),
        }
    }
}

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
    #[command(flatten)]
    pub wait_limit: WaitLimit,
    /// Show what would change without changing it: client (nothing sent) or server (dryRun=All).
    #[arg(long, value_enum, num_args = 0..=1, default_value_t = DryRun::None, default_missing_value = "client", require_equals = true, value_name = "client|server", hide_default_value = true)]
    pub dry_run: DryRun,
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
    /// Move into the workload cluster NAME of the source (a self-hosted pivot), reached through
    /// its NAME-kubeconfig Secret, which is read into memory only.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["to_kubeconfig", "to_context", "to_directory", "from_directory"])]
    pub to_cluster: Option<String>,
    /// Print the plan (client), or also run the whole preflight against the target (server).
    #[arg(long, value_enum, num_args = 0..=1, default_value_t = DryRun::None, default_missing_value = "client", require_equals = true, value_name = "client|server", hide_default_value = true)]
    pub dry_run: DryRun,
    /// How long to wait for providers' block-move annotations to go, e.g. 30s, 10m.
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = timeout, allow_hyphen_values = true)]
    pub timeout: Duration,
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
    /// Where the move's journal is kept (default: under $XDG_STATE_HOME/kubectl-capi/moves, or
    /// %LOCALAPPDATA% on Windows, named after the move, so running the same command again finds
    /// it).
    #[arg(long, value_name = "PATH")]
    pub journal: Option<std::path::PathBuf>,
    /// After the move, watch the target adopt the moved Clusters (as `kubectl capi verify
    /// --wait`): no Machine created or deleted, the same providerIDs, every Cluster healthy.
    #[arg(long, conflicts_with_all = ["dry_run", "to_directory", "from_directory", "rollback"])]
    pub verify: bool,
    /// How long --verify waits, e.g. 30s, 10m.
    #[arg(long, requires = "verify", default_value = "10m", value_name = "DURATION", value_parser = timeout, allow_hyphen_values = true)]
    pub verify_timeout: Duration,
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
    /// Writes in flight at once (every request of the move, the journal's included); an object
    /// is created once its owners exist and deleted once what it owns is gone.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256), value_name = "N", allow_negative_numbers = true)]
    pub concurrency: u16,
    /// Back up instead of moving: write the objects (clusterctl's file names) into DIR.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["to_kubeconfig", "to_context", "from_directory"])]
    pub to_directory: Option<std::path::PathBuf>,
    /// Restore a backup from DIR into the cluster of --kubeconfig/--context.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["to_kubeconfig", "to_context"])]
    pub from_directory: Option<std::path::PathBuf>,
}

impl MoveArgs {
    /// The flags as clap fills them in when none is given: what a hint may leave out.
    pub fn defaults() -> MoveArgs {
        use clap::FromArgMatches;
        let matches = MoveArgs::augment_args(clap::Command::new("move"))
            .try_get_matches_from(["move"])
            .expect("move parses without flags");
        MoveArgs::from_arg_matches(&matches).expect("move's defaults are its own")
    }
}

#[derive(Debug, Args, Clone, Default)]
pub struct VerifyArgs {
    /// Cluster names (default: every Cluster with a move record in the namespace, or with -A
    /// everywhere).
    pub clusters: Vec<String>,
    /// Wait until every Cluster is verified or a check fails (driven by watches).
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub wait_limit: WaitLimit,
    /// Read what was moved from this move's journal instead of the records in the cluster.
    #[arg(long, value_name = "PATH")]
    pub journal: Option<PathBuf>,
    /// kubeconfig of the management cluster the Clusters were moved from (checks nothing is left
    /// there; default: the --kubeconfig, with --from-context).
    #[arg(long, value_name = "PATH")]
    pub from_kubeconfig: Option<PathBuf>,
    /// Context of the management cluster the Clusters were moved from.
    #[arg(long, value_name = "NAME")]
    pub from_context: Option<String>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct VersionArgs {
    /// Only the plugin's version; do not contact the cluster.
    #[arg(long)]
    pub client: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choices::{DryRun, OutputFormat};
    use std::time::Duration;

    #[test]
    fn flags_parse_into_types() {
        let cli = Cli::try_parse_from([
            "kubectl-capi",
            "move",
            "-o",
            "wide",
            "--dry-run",
            "--timeout",
            "90s",
        ])
        .unwrap();
        assert_eq!(cli.global.output, OutputFormat::Wide);
        let Command::Move(args) = cli.command else {
            panic!("a move")
        };
        assert_eq!(args.dry_run, DryRun::Client);
        assert_eq!(args.timeout, Duration::from_secs(90));
        let error =
            Cli::try_parse_from(["kubectl-capi", "move", "--timeout", "99999999999999999999h"])
                .unwrap_err()
                .to_string();
        assert!(error.contains("longest allowed"), "{error}");
    }
}
