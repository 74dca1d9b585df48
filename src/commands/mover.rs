//! `kubectl capi move`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::reporter::Reporter;
use crate::cli::{FreezeSelection, MoveArgs, ReadyArgs};
use crate::error::{Error, Result};
use crate::freeze::apply::DryRun;
use crate::freeze::apply::Mode;
use crate::kube::{Catalog, connect, lease};
use crate::kube::{OnCtrlC, Stop};
use crate::model::ObjectRef;
use crate::mover::delete::Skipped;
use crate::mover::discover::{list_objects, move_types};
use crate::mover::graph::Graph;
use crate::mover::journal::{self, Endpoint, Journal, MoveId, Stage};
use crate::mover::journal::{JournalCopy, JournalFile};
use crate::mover::namespaces::remove_namespaces;
use crate::mover::plan::{Excluded, MovePlan, TreeNode, plan};
use crate::mover::preflight::{ThisMove, dry_run_creates, preflight};
use crate::mover::progress::Progress;
use crate::mover::recovery::{self, Recorded, Records};
use crate::mover::recovery::{Replay, finish_from_journal, rollback_from_journal};
use crate::mover::requests::{Destination, type_of};
use crate::mover::run::{RunOptions, Source, Summary, run as execute};
use crate::mover::same_cluster;
use crate::names::CORE_GROUP;
use crate::output::table::table;
use crate::output::{ExitStatus, Printer};
use crate::settings::{End, OutputFormat, Settings};
use crate::snapshot::ListScope;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanGroup {
    group: usize,
    objects: Vec<PlannedObject>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlannedObject {
    #[serde(flatten)]
    object: ObjectRef,
    kept_in_source: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanReport {
    api_version: &'static str,
    kind: &'static str,
    clusters: Vec<ObjectRef>,
    groups: Vec<PlanGroup>,
    excluded: Vec<Excluded>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    preflight_failures: Vec<String>,
}

fn plan_report(plan: &MovePlan, clusters: &[ObjectRef], failures: Vec<String>) -> PlanReport {
    PlanReport {
        api_version: "kubectl-capi/v1",
        kind: "MovePlan",
        clusters: clusters.to_vec(),
        groups: plan
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let mut objects: Vec<PlannedObject> = g
                    .iter()
                    .map(|uid| PlannedObject {
                        object: plan.node(uid).reference.clone(),
                        kept_in_source: plan.kept_in_source.contains(uid),
                    })
                    .collect();
                objects.sort_by(|a, b| a.object.cmp(&b.object));
                PlanGroup {
                    group: i + 1,
                    objects,
                }
            })
            .collect(),
        excluded: plan.excluded.clone(),
        preflight_failures: failures,
    }
}

/// Draws the ownership forest: one root line per Cluster (and per shared root), owned objects
/// indented beneath with box-drawing guides.
fn tree_text(forest: &[TreeNode]) -> String {
    fn draw(node: &TreeNode, prefix: &str, last: bool, out: &mut String) {
        let (branch, next) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        push_line(node, &format!("{prefix}{branch}"), out);
        let child_prefix = format!("{prefix}{next}");
        for (i, child) in node.children.iter().enumerate() {
            draw(child, &child_prefix, i + 1 == node.children.len(), out);
        }
    }
    fn push_line(node: &TreeNode, lead: &str, out: &mut String) {
        let kept = if node.kept_in_source {
            "  (copied, kept in source)"
        } else {
            ""
        };
        out.push_str(&format!("{lead}{}{kept}\n", node.object.kubectl_name()));
    }
    let mut out = String::new();
    for root in forest {
        let namespace = if root.object.namespace.is_empty() {
            String::new()
        } else {
            format!("  (namespace {})", root.object.namespace)
        };
        out.push_str(&format!(
            "\n{}{namespace}{}\n",
            root.object.kubectl_name(),
            if root.kept_in_source {
                "  (copied, kept in source)"
            } else {
                ""
            }
        ));
        for (i, child) in root.children.iter().enumerate() {
            draw(child, "", i + 1 == root.children.len(), &mut out);
        }
    }
    out
}

fn wide_tree(plan: &MovePlan, settings: &Settings) -> Option<Vec<TreeNode>> {
    (settings.output == OutputFormat::Wide).then(|| plan.tree())
}

fn plan_text(report: &PlanReport, tree: Option<&[TreeNode]>) -> String {
    let total: usize = report.groups.iter().map(|g| g.objects.len()).sum();
    let mut out = format!(
        "Move plan: {} Cluster(s), {total} objects in {} groups\n",
        report.clusters.len(),
        report.groups.len()
    );
    let rows = report
        .groups
        .iter()
        .map(|g| {
            let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
            for o in &g.objects {
                *kinds.entry(o.object.kind.as_str()).or_default() += 1;
            }
            let kinds = kinds
                .iter()
                .map(|(k, n)| {
                    if *n > 1 {
                        format!("{k}×{n}")
                    } else {
                        k.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            vec![g.group.to_string(), g.objects.len().to_string(), kinds]
        })
        .collect();
    out.push_str(&table(&["GROUP", "OBJECTS", "KINDS"], rows));
    if let Some(forest) = tree {
        out.push_str(&tree_text(forest));
        out.push('\n');
    }
    let kept: Vec<&PlannedObject> = report
        .groups
        .iter()
        .flat_map(|g| &g.objects)
        .filter(|o| o.kept_in_source)
        .collect();
    if !kept.is_empty() {
        out.push_str(&format!(
            "Copied, kept in source: {}\n",
            kept.iter()
                .map(|o| o.object.kubectl_name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for e in &report.excluded {
        out.push_str(&format!(
            "Not moved: {} — {}\n",
            e.object.kubectl_name(),
            e.reason
        ));
    }
    out
}

/// `--from-directory`: restore a backup into the cluster of the connection flags, after a
/// preflight like a move's: every file parses and is served (reading it), every object passes a
/// server-side dry-run create, and none is already there unless expected.
async fn restore(
    args: &MoveArgs,
    directory: &std::path::Path,
    dry_run: DryRun,
    settings: &Settings,
    printer: &Printer,
) -> Result<ExitStatus> {
    let cluster = connect(&settings.connection).await?;
    let catalog = Catalog::discover(&cluster).await?;
    let types = move_types(&cluster).await?;
    let (objects, plan) = crate::mover::directory::read(directory, &types)?;
    if !objects
        .iter()
        .any(|(_, info)| crate::names::is_cluster_api_group(&info.group))
    {
        return Err(Error::Usage(format!(
            "{} holds no Cluster API objects ({} file(s) read); pass a directory that `kubectl capi move --to-directory` (or clusterctl move --to-directory) wrote",
            directory.display(),
            objects.len()
        )));
    }
    let clusters: Vec<ObjectRef> = plan
        .graph
        .nodes
        .values()
        .filter(|n| n.reference.kind == "Cluster" && n.reference.group() == CORE_GROUP)
        .map(|n| n.reference.clone())
        .collect();
    if dry_run == DryRun::Client {
        printer.data(&plan_text(
            &plan_report(&plan, &clusters, Vec::new()),
            wide_tree(&plan, settings).as_deref(),
        ))?;
        return Ok(ExitStatus::Success);
    }
    let checked = dry_run_creates(
        &plan,
        &types,
        &cluster,
        &ThisMove {
            overwrite_existing: args.overwrite_existing,
            concurrency: usize::from(args.concurrency),
            server_dry_run: dry_run == DryRun::Server,
            ..ThisMove::default()
        },
        &BTreeSet::new(),
    )
    .await?;
    if let [only] = checked.failures.as_slice() {
        return Err(Error::Refused(vec![format!(
            "restore refused by its preflight, nothing was written: {only}"
        )]));
    }
    if !checked.failures.is_empty() {
        return Err(Error::Refused(rendered(&checked.failures)));
    }
    if dry_run == DryRun::Server {
        remove_namespaces(&cluster, &checked.made_namespaces).await;
        printer.data(&plan_text(
            &plan_report(&plan, &clusters, Vec::new()),
            wide_tree(&plan, settings).as_deref(),
        ))?;
        printer.info("preflight passed: the restore can start now");
        return Ok(ExitStatus::Success);
    }
    let target = Destination { cluster, catalog };
    let created = crate::mover::directory::restore(
        &plan,
        &types,
        &target,
        checked,
        args.overwrite_existing,
        &Reporter::new(printer),
    )
    .await?;
    printer.data(&format!(
        "restored {} objects of {} Cluster(s) from {}\n",
        created.uids.len(),
        clusters.len(),
        directory.display()
    ))?;
    Ok(ExitStatus::Success)
}

/// The target's connection: the source's flags with `--to-kubeconfig` and `--to-context`.
fn target_connection(args: &MoveArgs, settings: &Settings) -> crate::settings::Connection {
    settings.connection.other_end(
        End::MOVE_TARGET,
        args.to_kubeconfig.as_ref(),
        args.to_context.as_ref(),
    )
}

/// `move`, optionally wrapped in the whole story: `--freeze` (pause scaling first, release it
/// in the target after), `--wait-ready` (wait until the Clusters can be moved), `--verify` (watch
/// the target adopt them). The steps print to stderr; stdout carries only the move's result.
/// A command that will write holds the lease of the cluster it writes to first from before its
/// first write to its end (see [`crate::kube::lease`]).
pub async fn run(args: &MoveArgs, settings: &Settings, printer: &Printer) -> Result<ExitStatus> {
    let mut settings = settings.clone();
    if args.to_kubeconfig.is_some() || args.to_context.is_some() {
        // Two ends: messages about this one call it the source.
        settings.connection.end = settings.connection.end.as_role("source");
    }
    let settings = &settings;
    let lease = take_lease(args, settings).await?;
    let stop = lease
        .as_ref()
        .map(|held| held.stop().clone())
        .unwrap_or_default();
    super::holding(lease, printer, story(args, settings, printer, &stop)).await
}

/// What this move holds itself out as in its lease: the command as the user would type it.
fn holder_command(args: &MoveArgs, settings: &Settings) -> String {
    let word = crate::settings::shell_word;
    let mut command = String::from("kubectl capi move");
    for name in &args.clusters {
        command.push_str(&format!(" {}", word(name)));
    }
    command.push_str(&settings.scope.as_flags());
    command.push_str(&settings.connection.as_flags());
    if let Some(path) = &args.to_kubeconfig {
        command.push_str(&format!(
            " --to-kubeconfig {}",
            word(&path.to_string_lossy())
        ));
    }
    if let Some(context) = &args.to_context {
        command.push_str(&format!(" --to-context {}", word(context)));
    }
    for (flag, path) in [
        ("--to-directory", &args.to_directory),
        ("--from-directory", &args.from_directory),
    ] {
        if let Some(path) = path {
            command.push_str(&format!(" {flag} {}", word(&path.to_string_lossy())));
        }
    }
    for (flag, given) in [
        ("--resume", args.resume),
        ("--rollback", args.rollback),
        ("--freeze", args.freeze),
        ("--wait-ready", args.wait_ready),
        ("--verify", args.verify),
    ] {
        if given {
            command.push_str(&format!(" {flag}"));
        }
    }
    command
}

/// The lease of the cluster this command writes to first — the source, or for a restore the
/// cluster restored into — taken once the flags, the local paths and the two ends are checked
/// and before anything is written. A server-side dry run only checks that no one holds it; a
/// client-side one touches no cluster.
async fn take_lease(args: &MoveArgs, settings: &Settings) -> Result<Option<lease::Held>> {
    if args.dry_run == DryRun::Client {
        return Ok(None);
    }
    let first = if args.from_directory.is_some() {
        connect(&settings.connection).await?
    } else {
        check_arguments(args)?;
        let source = connect(&settings.connection).await?;
        if args.to_kubeconfig.is_some() || args.to_context.is_some() {
            let target = connect(&target_connection(args, settings)).await?;
            same_cluster::ensure_distinct(&source, &target).await?;
        }
        source
    };
    if args.dry_run == DryRun::Server {
        lease::ensure_free(&first).await?;
        return Ok(None);
    }
    let held = lease::take(&first, &holder_command(args, settings), &Stop::default()).await?;
    Ok(Some(held))
}

/// The story of [`run`], under its lease; `stop` is the lease's (Ctrl-C or its loss).
async fn story(
    args: &MoveArgs,
    settings: &Settings,
    printer: &Printer,
    stop: &Stop,
) -> Result<ExitStatus> {
    let structured = matches!(settings.output, OutputFormat::Json | OutputFormat::Yaml);
    let step_settings = Settings {
        output: OutputFormat::Table,
        ..settings.clone()
    };
    let step = printer.step();
    let names = args.clusters.join(" ");
    // The command that releases the freeze where `connection` points, as the user would type it.
    let release_hint = |connection: &crate::settings::Connection| {
        format!(
            "`kubectl capi resume {}{}{}`",
            if names.is_empty() { "--all" } else { &names },
            connection.as_flags(),
            settings.scope.as_flags()
        )
    };
    let selection = FreezeSelection {
        clusters: args.clusters.clone(),
        all: args.clusters.is_empty(),
        wait: false,
        timeout: args.timeout,
        dry_run: DryRun::None,
    };
    let still_frozen = if args.freeze {
        format!(
            "; their scaling stays frozen — run this command again to continue, or {} to release it",
            release_hint(&settings.connection)
        )
    } else {
        String::new()
    };
    // What this command's freeze froze (not what was frozen before it).
    let mut froze = BTreeSet::new();
    if args.freeze || args.wait_ready {
        let (ended, frozen_now) = before_moving(
            args,
            settings,
            printer,
            (&step_settings, &step),
            (&selection, &still_frozen),
            stop,
        )
        .await?;
        froze = frozen_now;
        if let Some(status) = ended {
            return Ok(status);
        }
    }
    // A refusal undoes the freeze this command made: nothing of it stays behind.
    let undo_freeze = |froze: BTreeSet<ObjectRef>| async {
        if froze.is_empty() {
            return Ok::<_, Error>(());
        }
        let count = froze.len();
        let (status, _) = crate::commands::freeze::run_on(
            Mode::Resume,
            &selection,
            (None, false),
            (crate::commands::freeze::Locking::HeldByCaller, Some(froze)),
            &step_settings,
            &step,
        )
        .await?;
        if status == ExitStatus::Success {
            printer.note(&format!(
                "note: the move was refused, so the freeze this command made ({count} object(s)) was released again"
            ));
        }
        Ok(())
    };
    let mut summary = match move_once(args, settings, printer, stop).await {
        Ok(Finished::Moved(summary)) => summary,
        Ok(Finished::Ended(ExitStatus::Failure)) if !froze.is_empty() => {
            undo_freeze(froze).await?;
            return Ok(ExitStatus::Failure);
        }
        Err(Error::Refused(reasons)) if !froze.is_empty() => {
            undo_freeze(froze).await?;
            return Err(Error::Refused(reasons));
        }
        Ok(Finished::Ended(other)) => {
            if args.freeze {
                printer.note(&format!("note: nothing was moved{still_frozen}"));
            }
            return Ok(other);
        }
        Err(e) => {
            if args.freeze {
                printer.note(&format!("note: the move failed{still_frozen}"));
            }
            return Err(e);
        }
    };
    // A table is printed as soon as the move ends; a document once, whole, at the end.
    if !structured {
        print_summary(args, settings, printer, &summary)?;
    }
    if args.freeze {
        let target_settings = Settings {
            connection: target_connection(args, settings),
            ..step_settings.clone()
        };
        let released = crate::commands::freeze::run(
            Mode::Resume,
            &selection,
            (None, false),
            crate::commands::freeze::Locking::Take,
            &target_settings,
            &step,
        )
        .await;
        if !matches!(released, Ok(ExitStatus::Success)) {
            if structured {
                print_summary(args, settings, printer, &summary)?;
            }
            printer.note(&format!(
                "note: the move succeeded, but releasing the freeze in the target failed; run {}",
                release_hint(&target_connection(args, settings))
            ));
            return released;
        }
    }
    let mut status = ExitStatus::Success;
    if args.verify {
        // The verification only reads, and says itself how to finish it after Ctrl-C.
        stop.on_ctrl_c(OnCtrlC::LeftToTheWork);
        let target = target_connection(args, settings);
        let verifying = async {
            let ends = super::verify::Ends {
                target: connect(&target).await?,
                source: Some(connect(&settings.connection).await?),
                flags: target.as_flags(),
            };
            super::verify::verify(&ends, &summary.moved, Some(args.verify_timeout), printer).await
        };
        let verified = match verifying.await {
            Ok(verified) => verified,
            Err(e) => {
                if structured {
                    print_summary(args, settings, printer, &summary)?;
                }
                printer.note(&format!(
                    "note: the move finished, its verification did not; verify it with `{}`",
                    verify_command(args, settings, &summary)
                ));
                return Err(e);
            }
        };
        status = verified.status;
        if !structured {
            super::verify::print(&verified.report, printer)?;
        }
        summary.verification = Some(verified.report);
    }
    if structured {
        print_summary(args, settings, printer, &summary)?;
    }
    Ok(status)
}

/// `clusterctl init` against the cluster `connection` reaches, in clusterctl's own flags.
fn clusterctl_init(connection: &crate::settings::Connection) -> String {
    let word = crate::settings::shell_word;
    let mut command = String::from("clusterctl init");
    if let Some(kubeconfig) = &connection.kubeconfig {
        command.push_str(&format!(
            " --kubeconfig {}",
            word(&kubeconfig.to_string_lossy())
        ));
    }
    if let Some(context) = &connection.context {
        command.push_str(&format!(" --kubeconfig-context {}", word(context)));
    }
    command
}

/// A kubeconfig path made absolute, so that a hint read back elsewhere still finds it.
fn absolute(path: Option<&std::path::PathBuf>) -> Option<String> {
    path.map(|p| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.clone())
            .display()
            .to_string()
    })
}

/// `-n NS` when the Clusters share one namespace, else `-A`: where a hint about them looks.
fn scope_flags(clusters: &[ObjectRef]) -> String {
    let namespaces: BTreeSet<&str> = clusters.iter().map(|c| c.namespace.as_str()).collect();
    match namespaces.iter().collect::<Vec<_>>().as_slice() {
        [namespace] => format!(" -n {}", crate::settings::shell_word(namespace)),
        _ => " -A".to_string(),
    }
}

/// The `kubectl capi verify` that checks this move later, as the user would type it: the
/// target's connection as the main one, the source's as `--from-…`.
fn verify_command(args: &MoveArgs, settings: &Settings, summary: &Summary) -> String {
    let word = crate::settings::shell_word;
    let mut command = String::from("kubectl capi verify");
    for cluster in &summary.clusters {
        command.push_str(&format!(" {}", word(&cluster.name)));
    }
    command.push_str(&target_connection(args, settings).as_flags());
    command.push_str(&scope_flags(&summary.clusters));
    if let Some(kubeconfig) = &settings.connection.kubeconfig {
        command.push_str(&format!(
            " --from-kubeconfig {}",
            word(&kubeconfig.to_string_lossy())
        ));
    }
    if let Some(context) = &settings.connection.context {
        command.push_str(&format!(" --from-context {}", word(context)));
    }
    command.push_str(" --wait");
    command
}

/// `--freeze` and `--wait-ready`: freeze the Clusters' scaling, wait until they can be moved.
/// `Some(status)` ends the command there; with what this freeze froze (newly).
async fn before_moving(
    args: &MoveArgs,
    settings: &Settings,
    printer: &Printer,
    (step_settings, step): (&Settings, &Printer),
    (selection, still_frozen): (&FreezeSelection, &str),
    stop: &Stop,
) -> Result<(Option<ExitStatus>, BTreeSet<ObjectRef>)> {
    let mut froze = BTreeSet::new();
    // The freeze is a write: a move that will be refused for its ends (or its local paths) must
    // not start with it.
    check_arguments(args)?;
    if args.to_kubeconfig.is_some() || args.to_context.is_some() {
        let source = connect(&settings.connection).await?;
        let target = connect(&target_connection(args, settings)).await?;
        same_cluster::ensure_distinct(&source, &target).await?;
    }
    // Every check the freeze does not change, before the freeze writes.
    let this = Move::connect(args, settings, step, stop.clone()).await?;
    if let Some(status) = this.check_before_freezing().await? {
        return Ok((Some(status), froze));
    }
    drop(this);
    if args.freeze {
        let (frozen, outcomes) = crate::commands::freeze::run_on(
            Mode::Freeze,
            selection,
            (Some("kubectl capi move --freeze"), false),
            (crate::commands::freeze::Locking::HeldByCaller, None),
            step_settings,
            step,
        )
        .await?;
        froze = outcomes
            .into_iter()
            .filter(|o| o.action == crate::freeze::plan::Action::Frozen)
            .map(|o| o.object)
            .collect();
        if frozen != ExitStatus::Success {
            return Ok((Some(frozen), froze));
        }
    }
    if args.wait_ready {
        let ready = ReadyArgs {
            clusters: args.clusters.clone(),
            wait: true,
            timeout: args.timeout,
            details: false,
            strict: false,
        };
        // The wait says itself that it was interrupted, and that the freeze stays.
        stop.on_ctrl_c(OnCtrlC::LeftToTheWork);
        let status = crate::commands::ready::run(&ready, step_settings, step).await?;
        stop.on_ctrl_c(OnCtrlC::EndAtOnce);
        if status != ExitStatus::Success {
            printer.error(&format!(
                "the Clusters did not become ready to move within {}{still_frozen}",
                crate::cli::show_duration(args.timeout)
            ));
            return Ok((Some(status), froze));
        }
    }
    Ok((None, froze))
}

/// How one run of the move ended: the objects moved (its summary still to print), or another
/// way (a plan printed, a refusal, a rollback) with its status.
enum Finished {
    Moved(Box<Summary>),
    Ended(ExitStatus),
}

impl From<ExitStatus> for Finished {
    fn from(status: ExitStatus) -> Finished {
        Finished::Ended(status)
    }
}

/// A step either goes on with what it found, or ends the command with a status.
enum Step<T> {
    Go(T),
    Stop(ExitStatus),
}

/// Where a move's records live: the local journal and its copy in the source (with a target).
struct MoveRecords {
    path: std::path::PathBuf,
    key: String,
    /// The two clusters, by their `kube-system` UIDs.
    identities: crate::verify::Between,
    copy_namespace: String,
}

/// What earlier runs of this move recorded, once reconciled.
#[derive(Default)]
struct History {
    unfinished: Option<Journal>,
    finished: Option<Journal>,
}

/// The move planned from a fresh listing of the source.
struct Planned {
    types: Vec<crate::mover::discover::MoveType>,
    objects: crate::mover::graph::TypedObjects,
    plan: MovePlan,
    clusters: Vec<ObjectRef>,
}

/// What the preflight learnt that the move needs.
struct Checked {
    in_target: BTreeSet<String>,
    made_namespaces: Vec<crate::mover::namespaces::MadeNamespace>,
    /// Objects whose copy an earlier move between these clusters made: reused.
    reused: BTreeSet<String>,
    /// What a server-side dry run could not check yet (one line each).
    unchecked: Vec<String>,
    /// Namespaces the refused dry runs needed: created, then removed again.
    removed_namespaces: Vec<String>,
}

/// One run of `kubectl capi move` between two clusters (or to a directory): its flags, its ends
/// and its records. Its methods are the steps `move_once` takes.
struct Move<'a> {
    args: &'a MoveArgs,
    settings: &'a Settings,
    printer: &'a Printer,
    source: crate::kube::Cluster,
    target: Option<Destination>,
    scope: ListScope,
    namespace: Option<String>,
    records: Option<MoveRecords>,
    /// When the command started: the preflight's share of the time.
    started: std::time::Instant,
    /// Ctrl-C, or the loss of the lease: the writes stop at their next safe point.
    stop: Stop,
}

/// `kubectl capi move` itself, as clusterctl's `move()` reads: a short list of named steps.
async fn move_once(
    args: &MoveArgs,
    settings: &Settings,
    printer: &Printer,
    stop: &Stop,
) -> Result<Finished> {
    if let Some(directory) = &args.from_directory {
        return restore(args, directory, args.dry_run, settings, printer)
            .await
            .map(Finished::from);
    }
    check_arguments(args)?;
    let this = Move::connect(args, settings, printer, stop.clone()).await?;
    let history = match this.history().await? {
        Step::Go(history) => history,
        Step::Stop(status) => return Ok(status.into()),
    };
    if args.rollback {
        return this.rollback(&history).await.map(Finished::from);
    }
    if let Some(summary) = this.finish_interrupted(&history).await? {
        return Ok(Finished::Moved(summary));
    }
    let planned = match this.plan(&history).await? {
        Step::Go(planned) => planned,
        Step::Stop(status) => return Ok(status.into()),
    };
    if let Some(directory) = &args.to_directory {
        return this.backup(&planned, directory).await.map(Finished::from);
    }
    let checked = match this.check(&planned, &history).await? {
        Step::Go(checked) => checked,
        Step::Stop(status) => return Ok(status.into()),
    };
    this.execute(planned, checked, history).await
}

/// Flags and local paths, before anything is read or written in a cluster.
fn check_arguments(args: &MoveArgs) -> Result<()> {
    if let Some(directory) = &args.to_directory {
        crate::mover::directory::check_backup_directory(directory)?;
    }
    let writes_a_journal =
        (args.to_kubeconfig.is_some() || args.to_context.is_some()) && args.dry_run == DryRun::None;
    if writes_a_journal {
        journal::check_writable(args.journal.as_deref())?;
    }
    if args.to_kubeconfig.is_none()
        && args.to_context.is_none()
        && args.to_directory.is_none()
        && args.dry_run != DryRun::Client
    {
        return Err(Error::Usage(
            "please specify a target cluster using --to-kubeconfig and/or --to-context, or --to-directory (or use --dry-run)".into(),
        ));
    }
    Ok(())
}

impl<'a> Move<'a> {
    /// Connects both ends — refusing one cluster as both, before anything else — and finds
    /// where this move's records live.
    async fn connect(
        args: &'a MoveArgs,
        settings: &'a Settings,
        printer: &'a Printer,
        stop: Stop,
    ) -> Result<Move<'a>> {
        let started = std::time::Instant::now();
        let source = connect(&settings.connection).await?;
        Catalog::discover(&source).await?;
        let (scope, namespace) = if settings.scope.all_namespaces {
            (ListScope::AllNamespaces, None)
        } else {
            let ns = source.namespace(settings.scope.namespace.as_deref());
            (ListScope::Namespace(ns.clone()), Some(ns))
        };
        let target = if args.dry_run == DryRun::Client || args.to_directory.is_some() {
            None
        } else {
            let cluster = connect(&target_connection(args, settings)).await?;
            let identities = same_cluster::ensure_distinct(&source, &cluster).await?;
            let catalog = Catalog::discover(&cluster).await.map_err(|e| match e {
                Error::CapiNotInstalled { server, .. } => Error::CapiNotInstalled {
                    server,
                    install: Some(clusterctl_init(&target_connection(args, settings))),
                },
                other => other,
            })?;
            Some((Destination { cluster, catalog }, identities))
        };
        let records = match &target {
            None => None,
            Some((target, identities)) => {
                let id = MoveId {
                    source: &source.url,
                    source_uid: &identities.source,
                    target: &target.cluster.url,
                    target_uid: &identities.target,
                    namespace: namespace.as_deref(),
                    clusters: &args.clusters,
                    selector: settings.scope.selector.as_deref(),
                };
                let path = args
                    .journal
                    .clone()
                    .unwrap_or_else(|| journal::default_dir().join(id.file_name()));
                Some(MoveRecords {
                    path,
                    key: id.key(),
                    identities: identities.clone(),
                    copy_namespace: journal::copy::namespace(&source, namespace.as_deref()).await?,
                })
            }
        };
        let target = target.map(|(target, _)| target);
        Ok(Move {
            args,
            settings,
            printer,
            source,
            target,
            scope,
            namespace,
            records,
            started,
            stop,
        })
    }

    /// The running move's journal: its local file and its copy in the source cluster.
    /// Finishing or rolling back the recorded move, its journal saved where it was read.
    fn replay<'r>(
        &'r self,
        target: &'r Destination,
        records: &MoveRecords,
        journal: &Journal,
        progress: &'r dyn Progress,
    ) -> Replay<'r> {
        Replay {
            source: &self.source,
            target: &target.cluster,
            journal: self.journal_file(records, journal.clone()),
            concurrency: usize::from(self.args.concurrency),
            progress,
            stop: self.stop.clone(),
        }
    }

    fn journal_file(&self, records: &MoveRecords, journal: Journal) -> JournalFile {
        JournalFile {
            path: records.path.clone(),
            journal,
            copy: Some(JournalCopy {
                cluster: self.source.clone(),
                namespace: records.copy_namespace.clone(),
                key: records.key.clone(),
                written: None,
                concurrency: usize::from(self.args.concurrency),
            }),
        }
    }

    fn journal_shown(&self) -> String {
        self.records
            .as_ref()
            .map(|r| r.path.display().to_string())
            .unwrap_or_default()
    }

    /// What earlier runs of this move recorded, reconciled before anything acts on it.
    async fn history(&self) -> Result<Step<History>> {
        let Some(records) = &self.records else {
            return Ok(Step::Go(History::default()));
        };
        if self.args.journal.is_none() {
            journal::prune_finished(&journal::default_dir());
        }
        let set_aside = recovery::set_aside_foreign(&recovery::Elsewhere {
            id: MoveId {
                source: &self.source.url,
                source_uid: &records.identities.source,
                target: &self
                    .target
                    .as_ref()
                    .expect("records have a target")
                    .cluster
                    .url,
                target_uid: &records.identities.target,
                namespace: self.namespace.as_deref(),
                clusters: &self.args.clusters,
                selector: self.settings.scope.selector.as_deref(),
            },
            path: &records.path,
            chosen: self.args.journal.is_some(),
            source: &self.source,
            copy_namespace: &records.copy_namespace,
        })
        .await?;
        if !set_aside.is_empty() {
            if self.args.resume || self.args.rollback {
                let verb = if self.args.rollback {
                    "rollback"
                } else {
                    "resume"
                };
                return Err(Error::Refused(
                    set_aside
                        .iter()
                        .map(|note| format!("{verb} refused, nothing was written: {note}"))
                        .collect(),
                ));
            }
            self.printer.note(&format!(
                "note: {}; the move starts afresh",
                set_aside.join("; ")
            ));
        }
        let recorded = recovery::recorded(
            &Records {
                path: &records.path,
                source: &self.source,
                copy_namespace: &records.copy_namespace,
                key: &records.key,
            },
            self.args.rollback,
        )
        .await?;
        let shown = records.path.display();
        Ok(Step::Go(match recorded {
            Recorded::Nothing => History::default(),
            Recorded::Interrupted { journal, from_copy } => {
                if from_copy {
                    self.printer
                        .info("continuing from the journal's copy in the source cluster");
                }
                History {
                    unfinished: Some(journal),
                    finished: None,
                }
            }
            Recorded::Finished(record) => History {
                unfinished: None,
                finished: Some(record),
            },
            Recorded::Untrusted(reason) => {
                return Err(Error::Refused(vec![format!(
                    "{} refused: {reason}",
                    if self.args.rollback {
                        "rollback"
                    } else {
                        "move"
                    }
                )]));
            }
            Recorded::FinishedElsewhere(stale) => {
                if self.args.rollback {
                    return Err(Error::Refused(vec![format!(
                        "rollback refused: the move recorded in {shown} (stage: {:?}) was finished from elsewhere — its objects have left the source and its copy there is gone, so the target holds the only copy",
                        stale.stage
                    )]));
                }
                let mut record = stale;
                record.stage = Stage::Done;
                journal::save_text(&record.finished_record().to_json(), &records.path)?;
                self.printer.info(&format!(
                    "the move recorded in {shown} was finished from elsewhere: its objects have left the source and its copy there is gone; nothing to do"
                ));
                return Ok(Step::Stop(ExitStatus::Success));
            }
        }))
    }

    /// `--rollback`: undoes an interrupted move before its deletion phase.
    async fn rollback(&self, history: &History) -> Result<ExitStatus> {
        let (Some(journal), Some(records), Some(target)) =
            (&history.unfinished, &self.records, &self.target)
        else {
            return Err(Error::Usage(format!(
                "no interrupted move to roll back: {} holds none{}",
                self.journal_shown(),
                finished_note(history.finished.as_ref())
            )));
        };
        if journal.stage >= Stage::Deleting {
            return Err(Error::Refused(vec![format!(
                "rollback refused: the move already started deleting from the source (stage: {:?}), so the target holds the only copy of those objects; finish it with the same command and --resume",
                journal.stage
            )]));
        }
        // A rollback leaves the source as the only home: every original must be there.
        let all: Vec<&journal::Entry> = journal.entries.iter().collect();
        let gone = recovery::originals_gone(&self.source, &all).await?;
        if gone > 0 {
            return Err(Error::Refused(vec![format!(
                "rollback refused: {gone} of the {} objects {} records are no longer in the source with their recorded UIDs, so the move was continued elsewhere; the target may hold their only copy",
                all.len(),
                records.path.display()
            )]));
        }
        let reporter = Reporter::new(self.printer);
        self.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
        let removed =
            rollback_from_journal(self.replay(target, records, journal, &reporter)).await?;
        self.printer.data(&format!(
            "rolled back: {} object(s) removed from the target, {} Cluster(s)/ClusterClass(es) unpaused in the source\n",
            removed.count,
            journal.paused.len()
        ))?;
        warn_skipped(self.printer, &removed.skipped);
        Ok(ExitStatus::Success)
    }

    /// An interrupted move that already deletes from the source is finished from its journal
    /// alone (the source may be half deleted, so it cannot be planned again).
    async fn finish_interrupted(&self, history: &History) -> Result<Option<Box<Summary>>> {
        if self.args.resume && history.unfinished.is_none() {
            return Err(Error::Usage(format!(
                "no interrupted move to resume: {} holds none{}; run the move without --resume",
                self.journal_shown(),
                finished_note(history.finished.as_ref())
            )));
        }
        let (Some(journal), Some(records)) = (&history.unfinished, &self.records) else {
            return Ok(None);
        };
        self.printer.note(&format!(
            "continuing the interrupted move recorded in {} (stage: {:?})",
            records.path.display(),
            journal.stage
        ));
        let (Some(target), true) = (
            &self.target,
            journal.stage >= Stage::Deleting && self.args.dry_run == DryRun::None,
        ) else {
            return Ok(None);
        };
        let reporter = Reporter::new(self.printer);
        self.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
        let summary = finish_from_journal(self.replay(target, records, journal, &reporter)).await?;
        Ok(Some(Box::new(summary)))
    }

    /// Lists the source and plans the move: the named Clusters, or without names clusterctl's
    /// whole graph for the scope, with or without Clusters.
    async fn plan(&self, history: &History) -> Result<Step<Planned>> {
        let types = move_types(&self.source).await?;
        let objects = list_objects(&self.source, &types, &self.scope).await?;
        let graph = Graph::build(&objects, self.namespace.as_deref());
        let all_clusters: Vec<&crate::mover::graph::Node> = graph
            .nodes
            .values()
            .filter(|n| {
                !n.is_virtual()
                    && n.reference.kind == "Cluster"
                    && n.reference.group() == CORE_GROUP
            })
            .filter(|n| {
                self.namespace
                    .as_deref()
                    .is_none_or(|ns| n.reference.namespace == ns)
            })
            .collect();
        let scope_shown = super::scope_shown(&self.scope);
        // `-l`: the Clusters the server says match (its own selector syntax), as `pause` selects.
        let selector = self.settings.scope.selector.as_deref();
        let matching = match selector {
            Some(selector) => Some(self.clusters_matching(&types, selector).await?),
            None => None,
        };
        let candidates: Vec<&crate::mover::graph::Node> = all_clusters
            .iter()
            .copied()
            .filter(|n| matching.as_ref().is_none_or(|m| m.contains(&n.uid)))
            .collect();
        let (found, missing) =
            crate::model::select_by_name(candidates.iter().copied(), &self.args.clusters, |n| {
                n.reference.name.as_str()
            });
        if let (Some(selector), true) = (selector, found.is_empty() && missing.is_empty()) {
            return Err(Error::Refused(vec![format!(
                "no Clusters match -l {selector} in {scope_shown}; nothing was moved — list them with `kubectl get clusters.cluster.x-k8s.io{}{} --show-labels`",
                match &self.scope {
                    ListScope::Namespace(ns) => format!(" -n {}", crate::settings::shell_word(ns)),
                    ListScope::AllNamespaces => " -A".to_string(),
                },
                self.settings.connection.as_flags()
            )]));
        }
        let selected: BTreeSet<String> = if self.args.clusters.is_empty() && selector.is_none() {
            BTreeSet::new()
        } else {
            found.iter().map(|n| n.uid.clone()).collect()
        };
        // A rerun after the move finished is harmless: it says so and succeeds.
        let finished_here = || {
            let (Some(record), Some(records)) = (&history.finished, &self.records) else {
                return None;
            };
            Some(format!(
                "the move recorded in {} finished at {} ({} objects); nothing left to move in {scope_shown}",
                records.path.display(),
                record.finished_at.as_deref().unwrap_or("an unknown time"),
                record.objects.unwrap_or_default()
            ))
        };
        // Whatever a finished record says: a Cluster asked for that is not there is an error.
        if !missing.is_empty() {
            return Err(Error::ClustersNotFound {
                names: missing,
                scope: match selector {
                    Some(selector) => format!("{scope_shown} with labels matching {selector}"),
                    None => scope_shown,
                },
                flags: self.settings.connection.as_flags(),
            });
        }
        let clusters: Vec<ObjectRef> = all_clusters
            .iter()
            .filter(|n| selected.is_empty() || selected.contains(&n.uid))
            .map(|n| n.reference.clone())
            .collect();
        let plan = plan(graph, &selected);
        // As clusterctl: a scope with nothing to move is not an error. Nor is one whose every
        // object stays in the source (shared or global) and is in the target already — after
        // a finished move, say. A finished record alone never decides it.
        let only_kept = plan
            .scheduled
            .iter()
            .all(|u| plan.kept_in_source.contains(u));
        let nothing_left =
            plan.groups.is_empty() || (only_kept && self.all_in_target(&plan, &types).await?);
        if nothing_left {
            self.printer.info(
                &finished_here().unwrap_or_else(|| format!("nothing to move in {scope_shown}")),
            );
            // An interrupted move with nothing left to do: its journal does not outlive it.
            if let (Some(journal), Some(records), DryRun::None) =
                (&history.unfinished, &self.records, self.args.dry_run)
            {
                let mut closed = journal.clone();
                closed.finished_at = Some(journal::now());
                self.journal_file(records, closed)
                    .stage(Stage::Done)
                    .await?;
                self.printer.info(&format!(
                    "the interrupted move recorded in {} had nothing left to do; its journal is closed and its copy in the source removed",
                    records.path.display()
                ));
            }
            return Ok(Step::Stop(ExitStatus::Success));
        }
        Ok(Step::Go(Planned {
            types,
            objects,
            plan,
            clusters,
        }))
    }

    /// The UIDs of the Clusters in scope whose labels match `selector`, as the source answers a
    /// LIST with it.
    async fn clusters_matching(
        &self,
        types: &[crate::mover::discover::MoveType],
        selector: &str,
    ) -> Result<BTreeSet<String>> {
        let Some(clusters) = types
            .iter()
            .find(|t| t.info.kind == "Cluster" && t.info.group == CORE_GROUP)
        else {
            return Ok(BTreeSet::new());
        };
        let listed = crate::snapshot::clusters_matching(
            &self.source,
            &clusters.resource,
            &self.scope,
            selector,
        )
        .await?;
        Ok(listed.into_iter().filter_map(|c| c.metadata.uid).collect())
    }

    /// Whether every object `plan` would copy is in the target already (by name; what is
    /// there is then reused, or refused by the preflight): the preflight's own read of what is
    /// there, one LIST per kind and namespace. `false` without a target.
    async fn all_in_target(
        &self,
        plan: &MovePlan,
        types: &[crate::mover::discover::MoveType],
    ) -> Result<bool> {
        let Some(target) = &self.target else {
            return Ok(false);
        };
        let there = crate::mover::preflight::existing_in_target(plan, types, &target.cluster)
            .await?
            .len();
        Ok(there == plan.scheduled.len())
    }

    /// `--to-directory`: a backup after the source-side checks.
    async fn backup(&self, planned: &Planned, directory: &std::path::Path) -> Result<ExitStatus> {
        let (plan, clusters) = (&planned.plan, &planned.clusters);
        let failures = preflight(
            plan,
            &planned.types,
            &planned.objects,
            &self.source,
            None,
            clusters,
            &ThisMove::default(),
        )
        .await?
        .failures;
        let failures = rendered(&failures);
        if !failures.is_empty() {
            self.printer.refused(
                "backup refused by its preflight, nothing was written:",
                &failures,
            );
            return Ok(ExitStatus::Failure);
        }
        if self.args.dry_run != DryRun::None {
            self.printer.data(&plan_text(
                &plan_report(plan, clusters, Vec::new()),
                wide_tree(plan, self.settings).as_deref(),
            ))?;
            return Ok(ExitStatus::Success);
        }
        let from = Source {
            cluster: &self.source,
            types: &planned.types,
            scope: &self.scope,
        };
        let written = crate::mover::directory::backup(plan, &from, directory).await?;
        self.printer.data(&format!(
            "wrote {written} objects of {} Cluster(s) to {}\n",
            clusters.len(),
            directory.display()
        ))?;
        Ok(ExitStatus::Success)
    }

    /// What the preflight knows of this move beyond its plan, as every check of it starts.
    fn this_move<'b>(
        &'b self,
        flags: &'b str,
        unfinished: &'b [crate::ready::evaluate::UnfinishedMove],
        between: Option<&'b crate::verify::Between>,
    ) -> ThisMove<'b> {
        ThisMove {
            overwrite_existing: self.args.overwrite_existing,
            journal_namespace: self.records.as_ref().map(|r| r.copy_namespace.as_str()),
            flags,
            concurrency: usize::from(self.args.concurrency),
            unfinished,
            earlier_copies: between.map(|b| (&self.source, b)),
            ..ThisMove::default()
        }
    }

    /// `--freeze`/`--wait-ready`: the checks that need no freeze, before freezing (read-only).
    /// `Some(status)` ends the command there: refused, or nothing to move.
    async fn check_before_freezing(&self) -> Result<Option<ExitStatus>> {
        let history = match self.history().await? {
            Step::Go(history) => history,
            Step::Stop(status) => return Ok(Some(status)),
        };
        // A resumed move checks itself as it goes on.
        if history.unfinished.is_some() {
            return Ok(None);
        }
        let planned = match self.plan(&history).await? {
            Step::Go(planned) => planned,
            Step::Stop(status) => return Ok(Some(status)),
        };
        let snapshot = crate::mover::graph::snapshot_of(&planned.objects);
        if self.args.freeze {
            let forever = crate::freeze::plan::frozen_forever(&snapshot, &planned.clusters);
            if !forever.is_empty() {
                let reasons: Vec<String> = forever
                    .iter()
                    .map(|(cluster, why)| {
                        format!(
                            "{} not frozen: {why}; wait for it without the freeze (`kubectl capi ready {} -n {} --wait{}`), then move",
                            cluster.kubectl_name(),
                            crate::settings::shell_word(&cluster.name),
                            crate::settings::shell_word(&cluster.namespace),
                            self.settings.connection.as_flags()
                        )
                    })
                    .collect();
                self.printer.refused(
                    "move refused before freezing, nothing was written:",
                    &reasons,
                );
                return Ok(Some(ExitStatus::Failure));
            }
        }
        let between = self.records.as_ref().map(|r| &r.identities);
        let flags = self.settings.connection.as_flags();
        let unfinished =
            super::ready::unfinished_moves(&self.source, &snapshot, self.settings).await?;
        let found = preflight(
            &planned.plan,
            &planned.types,
            &planned.objects,
            &self.source,
            self.target.as_ref(),
            &planned.clusters,
            &ThisMove {
                before_freeze: true,
                ..self.this_move(&flags, &unfinished, between)
            },
        )
        .await?;
        let failures = rendered(&found.failures);
        if failures.is_empty() {
            return Ok(None);
        }
        self.printer.refused(
            "move refused by its preflight before freezing, nothing was written:",
            &failures,
        );
        Ok(Some(ExitStatus::Failure))
    }

    /// The preflight, then for a dry run the plan: every check before the first write.
    async fn check(&self, planned: &Planned, history: &History) -> Result<Step<Checked>> {
        let Planned {
            types,
            objects,
            plan,
            clusters,
        } = planned;
        let dry_run = self.args.dry_run;
        // The preflight may make namespaces for its dry runs: from here Ctrl-C lets it finish
        // and then removes them, rather than ending with them left behind.
        if dry_run == DryRun::None {
            self.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
        }
        let (failures, checked) = if dry_run == DryRun::Client {
            (
                Vec::new(),
                Checked {
                    in_target: BTreeSet::new(),
                    made_namespaces: Vec::new(),
                    reused: BTreeSet::new(),
                    unchecked: Vec::new(),
                    removed_namespaces: Vec::new(),
                },
            )
        } else {
            let between = self.records.as_ref().map(|r| &r.identities);
            let flags = self.settings.connection.as_flags();
            let unfinished = super::ready::unfinished_moves(
                &self.source,
                &crate::mover::graph::snapshot_of(objects),
                self.settings,
            )
            .await?;
            let found = preflight(
                plan,
                types,
                objects,
                &self.source,
                self.target.as_ref(),
                clusters,
                &ThisMove {
                    earlier: history.unfinished.as_ref(),
                    server_dry_run: dry_run == DryRun::Server,
                    ..self.this_move(&flags, &unfinished, between)
                },
            )
            .await?;
            (
                found.failures,
                Checked {
                    in_target: found.in_target,
                    made_namespaces: found.made_namespaces,
                    reused: found.reused,
                    unchecked: found.unchecked,
                    removed_namespaces: found.removed_namespaces,
                },
            )
        };
        let failures = rendered(&failures);
        let structured = matches!(
            self.settings.output,
            OutputFormat::Json | OutputFormat::Yaml
        );
        if !failures.is_empty() {
            if structured {
                self.printer.data(&self.printer.structured(&plan_report(
                    plan,
                    clusters,
                    failures.clone(),
                )))?;
            }
            // Exactly what it wrote and undid: "nothing was written" only when nothing was.
            let heading = match (self.args.freeze, checked.removed_namespaces.as_slice()) {
                // Its freeze ran before these checks; the story releases what it froze.
                (true, _) => "move refused by its preflight, nothing was moved:".to_string(),
                (false, []) => "move refused by its preflight, nothing was written:".to_string(),
                (false, made) => format!(
                    "move refused by its preflight; the namespace(s) {} its dry runs needed were created in the target and removed again, nothing else was written:",
                    made.join(", ")
                ),
            };
            self.printer.refused(&heading, &failures);
            return Ok(Step::Stop(ExitStatus::Failure));
        }
        if dry_run == DryRun::None {
            if self.stop.requested() {
                if let Some(target) = &self.target {
                    remove_namespaces(&target.cluster, &checked.made_namespaces).await;
                }
                self.printer.note(
                    "interrupted before the move's first write: the namespaces its checks made are removed again, nothing else was written",
                );
                return Err(self.stop.check().err().unwrap_or(Error::Interrupted));
            }
            return Ok(Step::Go(checked));
        }
        // A dry run leaves nothing behind, not even the namespaces its checks needed.
        if let Some(target) = &self.target {
            remove_namespaces(&target.cluster, &checked.made_namespaces).await;
        }
        let report = plan_report(plan, clusters, Vec::new());
        if structured {
            self.printer.data(&self.printer.structured(&report))?;
        } else {
            self.printer.data(&plan_text(
                &report,
                wide_tree(plan, self.settings).as_deref(),
            ))?;
            if dry_run == DryRun::Server {
                for note in &checked.unchecked {
                    self.printer.info(note);
                }
                self.printer
                    .info("preflight passed: the move can start now");
            }
        }
        Ok(Step::Stop(ExitStatus::Success))
    }

    /// The journal this run writes: the plan, carrying over what the first attempt learnt
    /// (what was in the target before, what it created or sent).
    fn new_journal(
        &self,
        planned: &Planned,
        checked: &Checked,
        history: &History,
        records: &MoveRecords,
    ) -> Journal {
        let target = self.target.as_ref().expect("a move has a target");
        let mut journal = Journal::new(
            &planned.plan,
            |r| type_of(&planned.types, r).map(|t| (t.resource.plural.clone(), t.info.namespaced)),
            Endpoint {
                server: self.source.url.clone(),
                context: self.settings.connection.context.clone(),
                kubeconfig: absolute(self.settings.connection.kubeconfig.as_ref()),
                identity: Some(records.identities.source.clone()),
            },
            Endpoint {
                server: target.cluster.url.clone(),
                context: self.args.to_context.clone(),
                // The file the target was read from (`--to-kubeconfig`, else `--kubeconfig`):
                // a hint read back from the journal names it even where another is the default.
                kubeconfig: absolute(
                    self.args.to_kubeconfig.as_ref().or(self
                        .settings
                        .connection
                        .kubeconfig
                        .as_ref()),
                ),
                identity: Some(records.identities.target.clone()),
            },
            self.namespace.clone(),
            self.args.clusters.clone(),
        );
        journal.selector = self.settings.scope.selector.clone();
        journal.moved = moved_clusters(planned);
        let earlier = history.unfinished.as_ref();
        if let Some(earlier) = earlier {
            journal.made_namespaces = earlier.made_namespaces.clone();
        }
        journal.attempt = earlier.map_or(0, |earlier| earlier.attempt + 1);
        for entry in &mut journal.entries {
            match earlier.and_then(|earlier| earlier.entry(&entry.uid)) {
                Some(before) => {
                    entry.preexisting = before.preexisting;
                    entry.created = before.created;
                    entry.sent = before.sent;
                    entry.target_uid = before.target_uid.clone();
                }
                // Not in the first plan, so not created by this move.
                None => entry.preexisting = checked.in_target.contains(&entry.uid),
            }
            if checked.reused.contains(&entry.uid) {
                entry.reused = true;
                entry.kept_in_source = true;
            }
        }
        journal
    }

    /// Runs the checked move under its journal; Ctrl-C stops it at the next safe point.
    async fn execute(
        self,
        planned: Planned,
        checked: Checked,
        history: History,
    ) -> Result<Finished> {
        let (Some(target), Some(records)) = (&self.target, &self.records) else {
            unreachable!("a move that writes has a target and records")
        };
        let mut journal = self.new_journal(&planned, &checked, &history, records);
        journal
            .made_namespaces
            .extend(
                checked
                    .made_namespaces
                    .iter()
                    .map(|m| journal::MadeNamespaceRecord {
                        name: m.name.clone(),
                        uid: m.uid.clone(),
                    }),
            );
        let Planned {
            types,
            objects,
            mut plan,
            clusters,
        } = planned;
        // A reused copy's original stays in the source, as a global object's does.
        plan.kept_in_source.extend(checked.reused.iter().cloned());
        // The move re-reads every object once the source is paused.
        drop(objects);
        plan.release_objects();
        let from = Source {
            cluster: &self.source,
            types: &types,
            scope: &self.scope,
        };
        let options = RunOptions {
            timeout: self.args.timeout,
            restore_status: self.args.restore_status,
            concurrency: usize::from(self.args.concurrency),
            overwrite_existing: self.args.overwrite_existing,
            made_namespaces: checked.made_namespaces,
            stop: self.stop.clone(),
        };
        let reporter = std::sync::Arc::new(Reporter::new(self.printer));
        // From here Ctrl-C lets the writes in flight finish and be journalled.
        self.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
        let mut file = self.journal_file(records, journal);
        let preflight = self.started.elapsed().as_secs_f64();
        let outcome = execute(
            &plan,
            &from,
            target,
            &options,
            clusters,
            reporter.as_ref(),
            &mut file,
        )
        .await;
        self.stop.on_ctrl_c(OnCtrlC::EndAtOnce);
        match outcome {
            Ok(mut summary) => {
                summary.phases.preflight = preflight;
                Ok(Finished::Moved(Box::new(summary)))
            }
            Err(e) => {
                reporter.stopped();
                reporter.note(&stopped_note(&e, &file));
                Err(e)
            }
        }
    }
}

/// What to tell a user whose move stopped: where its journal is and the command to continue.
fn stopped_note(error: &Error, file: &JournalFile) -> String {
    let resume = resume_command();
    match error {
        Error::Interrupted => format!(
            "interrupted: the move stopped after its requests in flight; its journal is {}.\ncontinue with: {resume}",
            file.path.display()
        ),
        _ => format!(
            "note: the move stopped partway; its journal is {}. Fix the cause, then continue with: {resume}{}",
            file.path.display(),
            if file.journal.stage < Stage::Deleting {
                " (or undo it with --rollback)"
            } else {
                ""
            }
        ),
    }
}

/// `" (the move it records finished at T)"`, for messages about a finished record.
fn finished_note(finished: Option<&Journal>) -> String {
    finished
        .map(|j| {
            format!(
                " (the move it records {} at {})",
                if j.stage == Stage::RolledBack {
                    "was rolled back"
                } else {
                    "finished"
                },
                j.finished_at.as_deref().unwrap_or("an unknown time")
            )
        })
        .unwrap_or_default()
}

/// The preflight's refusals, each rendered once, in the order the checks found them.
fn rendered(refusals: &[crate::mover::preflight::Refusal]) -> Vec<String> {
    refusals.iter().map(ToString::to_string).collect()
}

/// Objects a move or rollback left alone because another object had taken their name.
fn warn_skipped(printer: &Printer, skipped: &[Skipped]) {
    for s in skipped {
        printer.warn(&format!("{}: {}", s.object.kubectl_name(), s.reason));
    }
}

/// The command line that continues this move: the same arguments plus `--resume`.
fn resume_command() -> String {
    let mut words: Vec<String> = vec!["kubectl".into(), "capi".into()];
    words.extend(
        std::env::args()
            .skip(1)
            .filter(|a| a != "--resume")
            .map(|a| crate::settings::shell_word(&a)),
    );
    words.push("--resume".into());
    words.join(" ")
}

/// The moved Clusters as the source has them now, and what the move takes for each (its
/// hierarchy in the plan), for verifying the move later.
fn moved_clusters(planned: &Planned) -> Vec<crate::verify::MovedCluster> {
    let source = crate::mover::graph::snapshot_of(&planned.objects);
    let plan = &planned.plan;
    planned
        .clusters
        .iter()
        .filter_map(|reference| {
            source
                .of_kind(crate::names::CORE_GROUP, "Cluster")
                .iter()
                .find(|o| crate::model::ObjectRef::of(o) == *reference)
        })
        .map(|o| {
            let uid = o.metadata.uid.as_deref().unwrap_or_default();
            let taken = plan
                .groups
                .iter()
                .flatten()
                .map(|moved| plan.node(moved))
                .filter(|node| node.tenants.contains(uid))
                .map(|node| crate::verify::Taken {
                    reference: &node.reference,
                    uid: &node.uid,
                    kept_in_source: plan.kept_in_source.contains(&node.uid),
                });
            crate::verify::MovedCluster::record(&crate::model::ClusterView::read(o), &source)
                .taking(taken)
        })
        .collect()
}

fn print_summary(
    args: &MoveArgs,
    settings: &Settings,
    printer: &Printer,
    summary: &Summary,
) -> Result<()> {
    let structured = matches!(settings.output, OutputFormat::Json | OutputFormat::Yaml);
    if structured {
        printer.data(&printer.structured(&summary))?;
    } else {
        let created: usize = summary.created.values().sum();
        let mut text = format!(
            "moved {} Cluster(s): {created} objects created in the target, {} deleted from the source, {} copied and kept in the source ({:.1}s)\n",
            summary.clusters.len(),
            summary.deleted,
            summary.kept_in_source,
            summary.seconds
        );
        for cluster in &summary.clusters {
            text.push_str(&format!("{} moved\n", cluster.kubectl_name()));
        }
        printer.data(&text)?;
        warn_skipped(printer, &summary.skipped);
        for e in &summary.excluded {
            printer.warn(&format!(
                "not moved: {} — {}",
                e.object.kubectl_name(),
                e.reason
            ));
        }
    }
    for warning in &summary.not_recorded {
        printer.warn(warning);
    }
    if !summary.frozen_in_target.is_empty() && !args.freeze {
        let names: Vec<&str> = summary.clusters.iter().map(|c| c.name.as_str()).collect();
        let scope = scope_flags(&summary.clusters);
        // A note on stderr, with every output format: the next step stays visible.
        printer.note(&format!(
            "note: {} object(s) frozen by kubectl capi pause stay frozen in the target; release them with `kubectl capi resume {}{}{scope}`",
            summary.frozen_in_target.len(),
            names.join(" "),
            target_connection(args, settings).as_flags(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::GlobalArgs;

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
