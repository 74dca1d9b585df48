//! Command-line types only: what the user can type. `settings` resolves them.

use crate::names::{FROZEN_BY_ANNOTATION, PAUSED_ANNOTATION};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Each subcommand's examples, as kubectl ends its help: `# what` then the command.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "ready",
        "  # Can the Clusters of namespace prod be moved now, and if not, what blocks?
  kubectl capi ready -n prod

  # Every check of one Cluster
  kubectl capi ready prod-1 -n prod --details

  # Wait until it can be moved, at most 30 minutes
  kubectl capi ready prod-1 -n prod --wait --timeout 30m

  # Also check the target of a self-hosted pivot: the workload cluster prod-1 itself
  kubectl capi ready prod-1 -n prod --to-cluster prod-1",
    ),
    (
        "pause",
        "  # Freeze one Cluster's scaling, saying why, until its controllers acknowledge
  kubectl capi pause prod-1 -n prod --reason \"move to mgmt-2\" --wait

  # See what freezing every Cluster of the namespace would change, without changing it
  kubectl capi pause --all -n prod --dry-run",
    ),
    (
        "resume",
        "  # Release the freeze in the management cluster the Cluster now lives in
  kubectl capi resume prod-1 -n prod --context mgmt-2

  # Release every freeze kubectl-capi made in the namespace
  kubectl capi resume --all -n prod",
    ),
    (
        "move",
        "  # The plan: what would move, in which order
  kubectl capi move prod-1 -n prod --to-context mgmt-2 --dry-run

  # Every check against the target, nothing written
  kubectl capi move prod-1 -n prod --to-context mgmt-2 --dry-run=server

  # Freeze, wait until it can move, move, release the freeze and verify, in one command
  kubectl capi move prod-1 -n prod --to-context mgmt-2 --freeze --wait-ready --verify

  # Continue a move that stopped partway, or undo it
  kubectl capi move prod-1 -n prod --to-context mgmt-2 --resume
  kubectl capi move prod-1 -n prod --to-context mgmt-2 --rollback

  # Move a Cluster into itself (the quick start's self-hosted pivot)
  kubectl capi move prod-1 -n prod --to-cluster prod-1 --verify",
    ),
    (
        "verify",
        "  # Did the target adopt the Clusters moved into namespace prod? Wait until it did
  kubectl capi verify -n prod --context mgmt-2 --wait

  # Also check that nothing of prod-1 was left in the management cluster it left
  kubectl capi verify prod-1 -n prod --context mgmt-2 --from-context mgmt-1",
    ),
    (
        "version",
        "  # The plugin's version and the management cluster's Cluster API version
  kubectl capi version

  # The plugin's version only, without a cluster
  kubectl capi version --client",
    ),
];

/// What the exit codes mean for each command, where it says them its own way (the rest, and
/// the codes themselves, come from `output::ExitStatus`): `(command, code, meaning)`.
pub const EXIT_MEANINGS: &[(&str, u8, &str)] = &[
    (
        "",
        0,
        "success (for ready: every selected cluster can be moved)",
    ),
    ("ready", 0, "every selected cluster can be moved"),
    ("ready", 1, "at least one cannot (or --wait timed out)"),
    (
        "ready",
        2,
        "error: bad input, API error, no clusters matched",
    ),
    ("pause", 0, "done"),
    (
        "pause",
        1,
        "--wait timed out, another command holds the lease, or a permission is missing",
    ),
    ("resume", 0, "done"),
    (
        "resume",
        1,
        "--wait timed out, another command holds the lease, or a permission is missing",
    ),
    ("move", 0, "moved (and verified, with --verify)"),
    (
        "move",
        1,
        "refused by the preflight (nothing written), or --verify failed or timed out",
    ),
    ("verify", 0, "every Cluster verified"),
    (
        "verify",
        1,
        "a check failed, or checks are still pending (with --wait: when the timeout passed)",
    ),
    (
        "verify",
        2,
        "error: bad input, no record of a move, unreachable API server",
    ),
];

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

/// `-o`: what stdout holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Table,
    Wide,
    Json,
    Yaml,
    Name,
}

impl OutputFormat {
    /// A document (json, yaml): printed once, whole, with nothing else on stdout.
    pub fn is_document(self) -> bool {
        matches!(self, OutputFormat::Json | OutputFormat::Yaml)
    }

    /// Machine-readable output: nothing but the data on stdout, never progress.
    pub fn is_structured(self) -> bool {
        matches!(
            self,
            OutputFormat::Json | OutputFormat::Yaml | OutputFormat::Name
        )
    }
}

/// `--dry-run`: client (nothing sent) or server (`dryRun=All`); `none` is the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum DryRun {
    #[default]
    None,
    Client,
    Server,
}

impl DryRun {
    /// kubectl's suffix on confirmation lines.
    pub fn suffix(self) -> &'static str {
        match self {
            DryRun::None => "",
            DryRun::Client => " (dry run)",
            DryRun::Server => " (server dry run)",
        }
    }
}

/// A duration as kubectl takes one: whole seconds, or numbers with units like `1m30s`, `500ms`.
fn parse_duration(value: &str) -> Result<Duration, String> {
    let invalid = || {
        format!(
            "\"{value}\" is not a duration: use a whole number of seconds or a number with a unit (e.g. 1s, 2m, 3h)"
        )
    };
    let value = value.trim();
    if let Some(magnitude) = value.strip_prefix('-') {
        return Err(match parse_duration(magnitude) {
            Ok(_) => format!("\"{value}\" is negative: a duration counts forward, e.g. 30s or 10m"),
            // A flag where the value was due (`--timeout --wait`).
            Err(_) => format!(
                "\"{value}\" is not a duration; give one right after the flag, e.g. 30s or 10m"
            ),
        });
    }
    if let Ok(seconds) = value.parse::<u64>() {
        return bounded(Duration::from_secs(seconds.min(LONGEST.as_secs() + 1)));
    }
    // kubectl's grammar (numbers with h, m, s, ms; no spaces, no ISO 8601); jiff does the sums.
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c.is_ascii_digit() || "hms.".contains(c))
    {
        return Err(invalid());
    }
    let Ok(parsed) = value.parse::<jiff::SignedDuration>() else {
        // Too large for jiff to add up: 16 digits of even milliseconds are centuries.
        let huge = value
            .split(|c: char| !c.is_ascii_digit())
            .any(|n| n.len() >= 16);
        return Err(if huge {
            bounded(LONGEST * 2).unwrap_err()
        } else {
            invalid()
        });
    };
    bounded(Duration::try_from(parsed).map_err(|_| invalid())?)
}

/// The longest duration any flag takes: a year (longer ones overflow deadlines, and are typos).
pub const LONGEST: Duration = Duration::from_secs(365 * 24 * 3600);

fn bounded(duration: Duration) -> Result<Duration, String> {
    if duration > LONGEST {
        return Err("longer than the longest allowed, 8760h (a year)".into());
    }
    Ok(duration)
}

/// `--request-timeout`: a duration, `0` for none.
pub fn request_timeout(value: &str) -> Result<Duration, String> {
    parse_duration(value)
}

/// `--timeout`: a duration, never 0.
pub fn timeout(value: &str) -> Result<Duration, String> {
    let duration = parse_duration(value)?;
    if duration.is_zero() {
        return Err(
            "a timeout of 0 would give up at once; pass a duration such as 30s or 10m".into(),
        );
    }
    Ok(duration)
}

/// A duration as flags take it back: `10m`, `1h30m`, `45s`, `500ms`.
pub fn show_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if !millis.is_multiple_of(1000) {
        return format!("{millis}ms");
    }
    let seconds = duration.as_secs();
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() { "0s".into() } else { out }
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

pub const COMPLETION_HELP: &str = "Examples:
  # Complete `kubectl capi <TAB>` in kubectl's own completion (kubectl >= 1.26), installed with krew
  # or not: put the completer in a directory on your PATH outside krew's
  mkdir -p ~/.local/bin
  kubectl capi completion kubectl > ~/.local/bin/kubectl_complete-capi
  chmod +x ~/.local/bin/kubectl_complete-capi

  # On Windows, a .cmd file in a directory on your PATH (kubectl finds it through PATHEXT)
  kubectl capi completion kubectl > %USERPROFILE%\\bin\\kubectl_complete-capi.cmd

  # A stand-alone script for the kubectl-capi executable itself
  kubectl-capi completion bash > /etc/bash_completion.d/kubectl-capi";

pub const READY_HELP: &str =
    "Checks, per Cluster: clusterctl move's own preflight (infrastructure provisioned, control
plane initialized, every Machine has a node — with clusterctl's messages), and what clusterctl
misses: Machines being deleted, scaling in progress (blocking until `kubectl capi pause` freezes
it), MachineHealthCheck remediation, paused Clusters/ClusterClasses, dangling owner references,
block-move annotations (information), node health and autoscaled groups (warnings).

Target-side checks (providers, CRDs and permissions in the destination) belong to
`kubectl capi move --dry-run=server`.";

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

/// What `pause --help` says after the flags.
pub fn pause_help() -> String {
    format!(
        "Puts {PAUSED_ANNOTATION} on exactly the objects that create or delete Machines: the
control plane object, every MachineDeployment and MachineSet, every MachinePool and its
infrastructure machine pool, and the Cluster's MachineHealthChecks (unless --keep-remediation).
Machines already being provisioned go on until they have their node. Never touches
Cluster.spec.paused, Machines, bootstrap configs or infrastructure machines. Each frozen object
also gets the {FROZEN_BY_ANNOTATION} marker (when, by whom, why); objects paused by someone else
are reported and left as they are."
    )
}

/// What `resume --help` says after the flags.
pub fn resume_help() -> String {
    format!(
        "Removes {PAUSED_ANNOTATION} and the {FROZEN_BY_ANNOTATION} marker from the objects that
carry the marker — only what `kubectl capi pause` froze. Works against the source after an aborted
move and against the target after a move (the annotations travel with the objects)."
    )
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

pub const MOVE_HELP: &str =
    "Moves the named Clusters (default: every Cluster in the namespace; -A: all namespaces) and
what they own, with clusterctl move's object graph, order and checks. Every check runs before the
first write: clusterctl's preflight and ready's, paused Clusters/ClusterClasses, kinds served by
the target, the target's provider versions, permissions in both clusters (access reviews), and a
server-side dry-run create of every object in the target. Objects shared with Clusters that stay
are copied and kept in the source; objects that cannot move are listed with the reason.

--dry-run (=client) prints the plan; --dry-run=server also runs the whole preflight.

--verify then watches the target adopt the moved Clusters (see `kubectl capi verify --help`).";

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

pub const VERIFY_HELP: &str =
    "Run against the management cluster the Clusters were moved to. For each moved Cluster it
checks that the target adopted it: the same Machines with the same providerIDs as in the source
(a new Machine means the target's controllers are provisioning new infrastructure instead of
adopting; a missing one means something deleted it), infrastructure machines with the same
providerIDs, the control plane and MachineDeployments/MachinePools at the replicas they reported
before the move, and the Cluster healthy (Available; v1beta1: Ready). With --from-context or
--from-kubeconfig it also checks that nothing of the Clusters is left in the source.

What was moved comes from the record each move leaves next to its Cluster in the target
(ConfigMap kubectl-capi-moved-NAME, owned by the Cluster), or from a move's journal (--journal).";

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

    #[test]
    fn durations_like_kubectl_and_bounded() {
        let d = |s: &str| request_timeout(s);
        assert_eq!(d("0"), Ok(Duration::ZERO));
        assert_eq!(d("30"), Ok(Duration::from_secs(30)));
        assert_eq!(d("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(d("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(d("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(d("8760h"), Ok(LONGEST));
        assert!(d("-5").unwrap_err().contains("is negative"));
        assert!(d("-1m30s").unwrap_err().contains("is negative"));
        assert!(d("--wait").unwrap_err().contains("right after the flag"));
        for bad in ["soon", "5x", "", "1.5.5s", "m", "NaNs", "infs", "-1m"] {
            assert!(d(bad).is_err(), "{bad}");
        }
        // Far beyond a year (and beyond u64 seconds) is refused, not a panic or an overflow.
        for huge in [
            "8761h",
            "99999999999999999999h",
            "99999999999999999999",
            "1e300s",
        ] {
            let refused = d(huge).unwrap_err();
            assert!(
                refused.contains("longest") || refused.contains("not a duration"),
                "{huge}: {refused}"
            );
        }
        assert!(timeout("0").unwrap_err().contains("give up at once"));
        assert_eq!(timeout("10m"), Ok(Duration::from_secs(600)));
    }

    #[test]
    fn durations_read_back_as_flags_take_them() {
        for (seconds, shown) in [(600, "10m"), (5400, "1h30m"), (45, "45s"), (3600, "1h")] {
            assert_eq!(show_duration(Duration::from_secs(seconds)), shown);
        }
        assert_eq!(show_duration(Duration::from_millis(1500)), "1500ms");
    }

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
