//! What one `kubectl capi move` was asked to do, resolved once from its flags and settings: the
//! two ends, the scope, the options, and the commands its hints name — built from the parsed
//! flags, so that they work when pasted.

use std::path::PathBuf;
use std::time::Duration;

use crate::choices::{DryRun, OutputFormat};
use crate::cli::MoveArgs;
use crate::durations::show_duration;
use crate::error::{Error, Result};
use crate::freeze::apply::Mode;
use crate::freeze::request::FreezeRequest;
use crate::model::ObjectRef;
use crate::settings::{Connection, End, Scope, Settings, shell_word};

/// A move, resolved: every later step reads these fields instead of the flags.
#[derive(Debug, Clone)]
pub struct MoveRequest {
    /// The options as given; read through the request itself (`request.freeze`), see
    /// [`Deref`].
    pub options: MoveOptions,
    /// The source; for a restore, the cluster restored into.
    pub source: Connection,
    /// The target management cluster, when `--to-kubeconfig` or `--to-context` names one (for
    /// `--to-cluster`, filled in from the workload cluster's kubeconfig Secret when the ends are
    /// connected).
    pub target: Option<Connection>,
    pub scope: Scope,
    /// `--concurrency`, as the writes count it.
    pub concurrency: usize,
    pub output: OutputFormat,
    /// When the command started: the preflight's share of a move's time counts from here.
    pub started: std::time::Instant,
}

/// What `kubectl capi move` was given besides its ends and scope, as the steps read it.
#[derive(Debug, Clone)]
pub struct MoveOptions {
    pub clusters: Vec<String>,
    pub to_kubeconfig: Option<PathBuf>,
    pub to_context: Option<String>,
    pub to_cluster: Option<String>,
    pub dry_run: DryRun,
    pub timeout: Duration,
    pub restore_status: bool,
    pub freeze: bool,
    pub wait_ready: bool,
    pub journal: Option<PathBuf>,
    pub verify: bool,
    pub verify_timeout: Duration,
    pub resume: bool,
    pub rollback: bool,
    pub overwrite_existing: bool,
    pub concurrency: u16,
    pub to_directory: Option<PathBuf>,
    pub from_directory: Option<PathBuf>,
}

impl From<&MoveArgs> for MoveOptions {
    fn from(args: &MoveArgs) -> MoveOptions {
        MoveOptions {
            clusters: args.clusters.clone(),
            to_kubeconfig: args.to_kubeconfig.clone(),
            to_context: args.to_context.clone(),
            to_cluster: args.to_cluster.clone(),
            dry_run: args.dry_run,
            timeout: args.timeout,
            restore_status: args.restore_status,
            freeze: args.freeze,
            wait_ready: args.wait_ready,
            journal: args.journal.clone(),
            verify: args.verify,
            verify_timeout: args.verify_timeout,
            resume: args.resume,
            rollback: args.rollback,
            overwrite_existing: args.overwrite_existing,
            concurrency: args.concurrency,
            to_directory: args.to_directory.clone(),
            from_directory: args.from_directory.clone(),
        }
    }
}

/// A request reads as its options: `request.clusters`, `request.freeze`, … are what was given.
impl std::ops::Deref for MoveRequest {
    type Target = MoveOptions;

    fn deref(&self) -> &MoveOptions {
        &self.options
    }
}

impl MoveRequest {
    /// Resolves the flags, and checks what can be checked before any cluster is reached: the
    /// target is named, the local paths can be written.
    pub fn resolve(args: &MoveArgs, settings: &Settings) -> Result<MoveRequest> {
        let mut source = settings.connection.clone();
        if args.to_cluster.is_some() {
            source.end = source.end.as_role("source");
        }
        let target = (args.to_kubeconfig.is_some() || args.to_context.is_some()).then(|| {
            // Two ends: messages about the first one call it the source.
            source.end = source.end.as_role("source");
            settings.connection.other_end(
                End::MOVE_TARGET,
                args.to_kubeconfig.as_ref(),
                args.to_context.as_ref(),
            )
        });
        let request = MoveRequest {
            options: MoveOptions::from(args),
            source,
            target,
            scope: settings.scope.clone(),
            concurrency: usize::from(args.concurrency),
            output: settings.output,
            started: std::time::Instant::now(),
        };
        if request.from_directory.is_none() {
            request.check_local()?;
        }
        Ok(request)
    }

    /// The flags and local paths, before anything is read or written in a cluster.
    fn check_local(&self) -> Result<()> {
        if let Some(directory) = &self.to_directory {
            check_backup_directory(directory)?;
        }
        let to_a_cluster = self.target.is_some() || self.to_cluster.is_some();
        if to_a_cluster && self.dry_run == DryRun::None {
            crate::mover::journal::check_writable(self.journal.as_deref())?;
        }
        if !to_a_cluster && self.to_directory.is_none() && self.dry_run != DryRun::Client {
            return Err(Error::Usage(
                "please specify a target cluster using --to-kubeconfig and/or --to-context (or --to-cluster), or --to-directory (or use --dry-run)".into(),
            ));
        }
        Ok(())
    }

    /// This request with its target reached through `target` (a `--to-cluster` found in the
    /// source).
    pub fn reaching(self, target: Connection) -> MoveRequest {
        MoveRequest {
            target: Some(target),
            ..self
        }
    }

    /// Whether this command writes to a cluster the other end then reads: a move between two.
    pub fn moves_between_clusters(&self) -> bool {
        (self.target.is_some() || self.to_cluster.is_some())
            && self.dry_run != DryRun::Client
            && self.to_directory.is_none()
    }

    /// Tables and text (progress on stderr), or one document at the end.
    pub fn structured(&self) -> bool {
        self.output.is_document()
    }

    /// The command as the user would type it: the Clusters, both ends, the scope and every
    /// option given, with `extra` flags: what a hint repeats.
    pub fn command_line(&self, extra: &[&str]) -> String {
        let mut command = self.named_clusters();
        command.push_str(&self.source.as_flags());
        command.push_str(&self.target_flags());
        command.push_str(&self.scope.as_flags());
        command.push_str(&self.paths_and_switches(true));
        let defaults = MoveOptions::from(&MoveArgs::defaults());
        for (flag, value, default) in [
            ("--timeout", self.timeout, defaults.timeout),
            (
                "--verify-timeout",
                self.verify_timeout,
                defaults.verify_timeout,
            ),
        ] {
            if value != default && (flag == "--timeout" || self.verify) {
                command.push_str(&format!(" {flag} {}", show_duration(value)));
            }
        }
        if self.concurrency != usize::from(defaults.concurrency) {
            command.push_str(&format!(" --concurrency {}", self.concurrency));
        }
        for flag in extra {
            command.push_str(&format!(" {flag}"));
        }
        command
    }

    /// What this move holds itself out as in its lease: the Clusters, the ends and what it does
    /// (the words the lease tests and other holders' messages have always shown).
    pub fn holder_command(&self) -> String {
        let mut command = self.named_clusters();
        command.push_str(&self.scope.as_flags());
        command.push_str(&self.source.as_flags());
        command.push_str(&self.target_flags());
        command.push_str(&self.paths_and_switches(false));
        command
    }

    /// `kubectl capi move` and the Clusters named.
    fn named_clusters(&self) -> String {
        let mut command = String::from("kubectl capi move");
        for name in &self.clusters {
            command.push_str(&format!(" {}", shell_word(name)));
        }
        command
    }

    /// The directories and the switches given; `every` adds the journal and the options that
    /// change how the move writes.
    fn paths_and_switches(&self, every: bool) -> String {
        let mut flags = String::new();
        let journal = if every { &self.journal } else { &None };
        for (flag, path) in [
            ("--to-directory", &self.to_directory),
            ("--from-directory", &self.from_directory),
            ("--journal", journal),
        ] {
            if let Some(path) = path {
                flags.push_str(&format!(" {flag} {}", word(path)));
            }
        }
        for (flag, given) in [
            ("--resume", self.resume),
            ("--rollback", self.rollback),
            ("--freeze", self.freeze),
            ("--wait-ready", self.wait_ready),
            ("--verify", self.verify),
            ("--overwrite-existing", every && self.overwrite_existing),
            ("--restore-status", every && self.restore_status),
        ] {
            if given {
                flags.push_str(&format!(" {flag}"));
            }
        }
        flags
    }

    /// The `kubectl capi ready` that shows where this move stands (an unfinished move is listed
    /// with the commands that finish and undo it).
    pub fn where_it_stands(&self) -> String {
        let mut command = String::from("kubectl capi ready");
        for name in &self.clusters {
            command.push_str(&format!(" {}", shell_word(name)));
        }
        format!(
            "{command}{}{}",
            self.scope.as_flags(),
            self.source.as_flags()
        )
    }

    /// This request as commands printed after the move repeat it: after a pivot of the
    /// `--to-cluster` Cluster into itself, its `NAME-kubeconfig` is in the target, so they reach
    /// the target through the copy the move kept in the source.
    pub fn after_move(&self, moved: &[ObjectRef]) -> std::borrow::Cow<'_, MoveRequest> {
        let (Some(kept), Some(inline)) = (
            self.pivot_kept(moved),
            self.target.as_ref().and_then(|t| t.inline.as_ref()),
        ) else {
            return std::borrow::Cow::Borrowed(self);
        };
        let mut after = self.clone();
        let mut inline = inline.clone();
        inline.reach = crate::settings::reach_through_secret(
            &kept.name(),
            &kept.namespace,
            &self.source.as_flags(),
        );
        if let Some(target) = after.target.as_mut() {
            target.inline = Some(inline);
        }
        std::borrow::Cow::Owned(after)
    }

    /// After a pivot of the `--to-cluster` Cluster into itself (it is among `moved`): the copy of
    /// its kubeconfig the move keeps in the source.
    pub fn pivot_kept(&self, moved: &[ObjectRef]) -> Option<crate::mover::journal::kept::Kept> {
        let name = self.to_cluster.as_ref()?;
        let pivoted = moved
            .iter()
            .find(|c| c.is_core_cluster() && &c.name == name)?;
        Some(crate::mover::journal::kept::Kept {
            namespace: pivoted.namespace.clone(),
            cluster: name.clone(),
        })
    }

    /// The command that continues this move: the same one with `--resume`.
    pub fn resume_command(&self) -> String {
        let mut request = self.clone();
        (request.options.rollback, request.options.resume) = (false, false);
        request.command_line(&["--resume"])
    }

    /// ` --to-kubeconfig K --to-context C`, as given.
    fn target_flags(&self) -> String {
        let mut flags = String::new();
        if let Some(path) = &self.to_kubeconfig {
            flags.push_str(&format!(" --to-kubeconfig {}", word(path)));
        }
        if let Some(context) = &self.to_context {
            flags.push_str(&format!(" --to-context {}", shell_word(context)));
        }
        if let Some(cluster) = &self.to_cluster {
            flags.push_str(&format!(" --to-cluster {}", shell_word(cluster)));
        }
        flags
    }

    /// The freeze (`mode`) of these Clusters inside the move, or its release; a freeze says
    /// `reason`.
    pub fn freeze_request(&self, mode: Mode, reason: Option<&str>) -> FreezeRequest {
        FreezeRequest {
            mode,
            clusters: self.clusters.clone(),
            all: self.clusters.is_empty(),
            wait: false,
            timeout: self.timeout,
            dry_run: DryRun::None,
            reason: reason.map(str::to_string),
            keep_remediation: false,
        }
    }

    /// `; their scaling stays frozen — …`, for notes of a `--freeze` that ended early.
    pub fn still_frozen(&self) -> String {
        if !self.freeze {
            return String::new();
        }
        format!(
            "; their scaling stays frozen — run this command again to continue, or {} to release it",
            self.release_command(&self.source)
        )
    }

    /// The command that releases the freeze of these Clusters where `connection` points.
    pub fn release_command(&self, connection: &Connection) -> String {
        format!(
            "`kubectl capi resume {}{}{}`",
            if self.clusters.is_empty() {
                "--all".to_string()
            } else {
                self.clusters.join(" ")
            },
            connection.as_flags(),
            self.scope.as_flags()
        )
    }

    /// The `kubectl capi verify` that checks this move later: the target's connection as the
    /// main one, the source's as `--from-…`.
    pub fn verify_command(&self, clusters: &[ObjectRef]) -> String {
        let mut command = String::from("kubectl capi verify");
        for cluster in clusters {
            command.push_str(&format!(" {}", shell_word(&cluster.name)));
        }
        if let Some(target) = &self.target {
            command.push_str(&target.as_flags());
        }
        command.push_str(&scope_flags(clusters));
        if let Some(kubeconfig) = &self.source.kubeconfig {
            command.push_str(&format!(" --from-kubeconfig {}", word(kubeconfig)));
        }
        if let Some(context) = &self.source.context {
            command.push_str(&format!(" --from-context {}", shell_word(context)));
        }
        command.push_str(" --wait");
        command
    }
}

/// Checks `--to-directory` before anything is read or written: it must be absent (it is created
/// later) or an empty directory, so a backup never mixes with other files nor overwrites one.
fn check_backup_directory(directory: &std::path::Path) -> Result<()> {
    let shown = directory.display();
    match std::fs::metadata(directory) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::Usage(format!(
            "cannot use --to-directory {shown}: {e}; pass a new or empty directory"
        ))),
        Ok(meta) if !meta.is_dir() => Err(Error::Usage(format!(
            "--to-directory {shown} is a file, not a directory; pass a new or empty directory"
        ))),
        Ok(_) => {
            let entries = std::fs::read_dir(directory)
                .map_err(|e| Error::Usage(format!("cannot read --to-directory {shown}: {e}")))?
                .count();
            if entries > 0 {
                return Err(Error::Usage(format!(
                    "--to-directory {shown} is not empty ({entries} entries); pass a new or empty directory, so the backup holds exactly this move's objects"
                )));
            }
            Ok(())
        }
    }
}

fn word(path: &std::path::Path) -> String {
    shell_word(&path.to_string_lossy())
}

/// How to install Cluster API in the cluster `connection` reaches: `clusterctl init` in
/// clusterctl's own flags. A kubeconfig read from a workload cluster's Secret is never handed to
/// it: clusterctl would run what such a kubeconfig names (`exec`), so the user brings their own.
pub fn clusterctl_init(connection: &Connection) -> String {
    if connection.inline.is_some() {
        return "with clusterctl init and a kubeconfig for that cluster you trust (one read from a cluster's Secret is never handed to a program that runs what it names)".into();
    }
    let mut command = String::from("clusterctl init");
    if let Some(kubeconfig) = &connection.kubeconfig {
        command.push_str(&format!(" --kubeconfig {}", word(kubeconfig)));
    }
    if let Some(context) = &connection.context {
        command.push_str(&format!(" --kubeconfig-context {}", shell_word(context)));
    }
    format!("with `{command}`")
}

/// `-n NS` when the Clusters share one namespace, else `-A`: where a hint about them looks.
pub fn scope_flags(clusters: &[ObjectRef]) -> String {
    let namespaces: std::collections::BTreeSet<&str> =
        clusters.iter().map(|c| c.namespace.as_str()).collect();
    match namespaces.iter().collect::<Vec<_>>().as_slice() {
        [namespace] => format!(" -n {}", shell_word(namespace)),
        _ => " -A".to_string(),
    }
}

/// A kubeconfig path made absolute, so that a hint read back elsewhere still finds it.
pub fn absolute(path: Option<&PathBuf>) -> Option<String> {
    path.map(|p| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.clone())
            .display()
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command, GlobalArgs};

    #[test]
    fn no_hint_hands_a_secrets_kubeconfig_to_clusterctl() {
        let mut connection = Connection {
            context: Some("mgmt".into()),
            ..Connection::default()
        };
        assert_eq!(
            clusterctl_init(&connection),
            "with `clusterctl init --kubeconfig-context mgmt`"
        );
        connection.inline = Some(crate::settings::InlineKubeconfig {
            kubeconfig: kube::config::Kubeconfig::default(),
            raw: Vec::new(),
            origin: "the kubeconfig in Secret default/w1-kubeconfig of the source".into(),
            reach: " --kubeconfig <(kubectl get secret w1-kubeconfig -n default -o jsonpath='{.data.value}' | base64 -d)".into(),
            allowed_proxy: None,
        });
        let hint = clusterctl_init(&connection);
        assert!(
            !hint.contains("get secret") && !hint.contains('`'),
            "{hint}"
        );
    }

    fn request(line: &str) -> MoveRequest {
        let words = shlex::split(line).expect("a shell line");
        let cli = Cli::try_parse_from(std::iter::once("kubectl-capi".to_string()).chain(words))
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        let Command::Move(args) = &cli.command else {
            panic!("{line} is a move")
        };
        let settings = Settings::from_args(&cli.global).unwrap();
        MoveRequest::resolve(args, &settings).unwrap()
    }

    /// Everything but the flag the hint adds.
    fn same(a: &MoveRequest, b: &MoveRequest) -> String {
        let mut a = a.clone();
        a.started = b.started;
        a.options.resume = b.resume;
        format!("{a:?}") + "\n" + &format!("{b:?}")
    }

    #[test]
    fn the_resume_command_is_the_same_move_with_resume_from_the_parsed_flags() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("a journal.json");
        let typed = format!(
            "move w1 w2 --kubeconfig /k/source --context src -n team-a -l 'env in (prod)' --to-context 'target two' --to-kubeconfig /k/target --journal '{}' --freeze --wait-ready --verify --verify-timeout 2m --timeout 90s --concurrency 4 --restore-status --overwrite-existing",
            journal.display()
        );
        let asked = request(&typed);
        let resume = asked.resume_command();
        let again = request(resume.strip_prefix("kubectl capi ").unwrap());
        assert!(again.resume && !asked.resume, "{resume}");
        let (left, right) = same(&again, &asked)
            .split_once('\n')
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .unwrap();
        assert_eq!(left, right, "{resume}");
        assert_eq!(
            request("move --context source --to-context target -n ns1").resume_command(),
            "kubectl capi move --context source --to-context target -n ns1 --resume",
            "nothing the user did not give"
        );
    }

    fn target_connection(args: &MoveArgs, settings: &Settings) -> Connection {
        let args = MoveArgs {
            dry_run: DryRun::Server,
            ..args.clone()
        };
        MoveRequest::resolve(&args, settings)
            .unwrap()
            .target
            .unwrap()
    }

    #[test]
    fn hints_for_the_target_name_its_own_kubeconfig_and_context() {
        let settings = Settings::from_args(&GlobalArgs {
            context: Some("source".into()),
            as_user: Some("ops".into()),
            ..GlobalArgs::default()
        })
        .unwrap();
        let to_file = MoveArgs {
            to_kubeconfig: Some("/k/target".into()),
            ..MoveArgs::default()
        };
        assert_eq!(
            target_connection(&to_file, &settings).as_flags(),
            " --kubeconfig /k/target --as ops",
            "the target file's current context; never a placeholder"
        );
        let to_context = MoveArgs {
            to_context: Some("target two".into()),
            ..MoveArgs::default()
        };
        assert_eq!(
            target_connection(&to_context, &settings).as_flags(),
            " --context 'target two' --as ops"
        );
    }
}
