//! `kubectl capi move`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use serde::Serialize;

use crate::cli::{FreezeSelection, MoveArgs, ReadyArgs};
use crate::error::{Error, Result};
use crate::freeze::apply::DryRun;
use crate::freeze::apply::Mode;
use crate::kube::{Catalog, connect};
use crate::model::ObjectRef;
use crate::mover::delete::Skipped;
use crate::mover::discover::{list_objects, move_types};
use crate::mover::graph::Graph;
use crate::mover::journal::{self, Endpoint, Journal, Stage};
use crate::mover::journal::{JournalCopy, JournalFile};
use crate::mover::namespaces::remove_namespaces;
use crate::mover::plan::{Excluded, MovePlan, TreeNode, plan};
use crate::mover::preflight::{ThisMove, dry_run_creates, preflight};
use crate::mover::progress::{Phase, Progress};
use crate::mover::recovery::{self, Recorded, Records};
use crate::mover::recovery::{finish_from_journal, rollback_from_journal};
use crate::mover::requests::{Destination, type_of};
use crate::mover::run::{RunOptions, Source, Summary, run as execute};
use crate::mover::same_cluster;
use crate::mover::stop::Stop;
use crate::names::CORE_GROUP;
use crate::output::table::table;
use crate::output::{ExitStatus, Printer};
use crate::settings::{OutputFormat, Settings};
use crate::snapshot::ListScope;

/// Shows a move's progress: a bar per phase on a TTY, a confirmation line per object with `-v`
/// (`cluster.cluster.x-k8s.io/a created`), nothing otherwise (pipes, `-o json|yaml`).
struct Reporter {
    bars: Option<MultiProgress>,
    current: Mutex<Option<ProgressBar>>,
    lines: bool,
    printer: Printer,
}

impl Reporter {
    fn new(printer: &Printer) -> Reporter {
        Reporter {
            bars: printer
                .progress()
                .then(|| MultiProgress::with_draw_target(printer.progress_target())),
            current: Mutex::new(None),
            lines: printer.verbosity > 0 && !printer.format.is_structured(),
            printer: printer.clone(),
        }
    }

    fn bar(&self) -> std::sync::MutexGuard<'_, Option<ProgressBar>> {
        self.current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Progress for Reporter {
    fn begin(&self, phase: Phase, total: usize) {
        if let Some(bars) = &self.bars {
            let style = ProgressStyle::with_template(
                "{prefix:>20} [{bar:30}] {pos}/{len} {elapsed:>4} {wide_msg}",
            )
            .expect("valid template")
            .progress_chars("=> ");
            let bar = bars.add(
                ProgressBar::new(total as u64)
                    .with_style(style)
                    .with_prefix(phase.label()),
            );
            *self.bar() = Some(bar);
        }
    }

    fn done(&self, phase: Phase, object: &ObjectRef) {
        if let Some(bar) = self.bar().as_ref() {
            bar.inc(1);
            bar.set_message(object.kubectl_name());
        }
        if self.lines {
            self.printer
                .note(&format!("{} {}", object.kubectl_name(), phase.verb()));
        }
    }

    fn end(&self, _: Phase) {
        if let Some(bar) = self.bar().take() {
            bar.finish_with_message("done");
        }
    }
}

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
        .any(|(_, info)| is_cluster_api_group(&info.group))
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
            ..ThisMove::default()
        },
        Vec::new(),
    )
    .await?;
    if let [only] = checked.failures.as_slice() {
        return Err(Error::Refused(vec![format!(
            "restore refused by its preflight, nothing was written: {only}"
        )]));
    }
    if !checked.failures.is_empty() {
        return Err(Error::Refused(checked.failures));
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

/// `cluster.x-k8s.io` and its provider groups (`infrastructure.cluster.x-k8s.io`, …).
fn is_cluster_api_group(group: &str) -> bool {
    group == CORE_GROUP || group.ends_with(".cluster.x-k8s.io")
}

/// The target's connection: the source's flags with `--to-kubeconfig` and `--to-context`.
fn target_connection(args: &MoveArgs, settings: &Settings) -> crate::settings::Connection {
    let mut connection = settings.connection.clone();
    if let Some(path) = &args.to_kubeconfig {
        connection.kubeconfig = Some(path.clone());
    }
    connection.context = args.to_context.clone();
    connection.cluster = None;
    connection.user = None;
    connection
}

/// `move`, optionally wrapped in the whole story: `--freeze` (pause scaling first, release it
/// in the target after), `--wait-ready` (wait until the Clusters can be moved). The steps print
/// to stderr; stdout carries only the move's result.
pub async fn run(args: &MoveArgs, settings: &Settings, printer: &Printer) -> Result<ExitStatus> {
    if !args.freeze && !args.wait_ready {
        return move_once(args, settings, printer).await;
    }
    // The freeze is a write: a move that will be refused for its ends must not start with it.
    if args.to_kubeconfig.is_some() || args.to_context.is_some() {
        let source = connect(&settings.connection).await?;
        let target = connect(&target_connection(args, settings)).await?;
        same_cluster::ensure_distinct(&source, &target).await?;
    }
    let step_settings = Settings {
        output: OutputFormat::Table,
        ..settings.clone()
    };
    let step = printer.step();
    let names = args.clusters.join(" ");
    let release_hint = |context: &str| {
        format!(
            "`kubectl capi resume {}`{context}",
            if names.is_empty() { "--all" } else { &names }
        )
    };
    let selection = FreezeSelection {
        clusters: args.clusters.clone(),
        all: args.clusters.is_empty(),
        wait: false,
        timeout: args.timeout,
        dry_run: DryRun::None,
    };
    if args.freeze {
        let frozen = crate::commands::freeze::run(
            Mode::Freeze,
            &selection,
            Some("kubectl capi move --freeze"),
            false,
            &step_settings,
            &step,
        )
        .await?;
        if frozen != ExitStatus::Success {
            return Ok(frozen);
        }
    }
    let still_frozen = if args.freeze {
        format!(
            "; their scaling stays frozen — run this command again to continue, or {} to release it",
            release_hint("")
        )
    } else {
        String::new()
    };
    if args.wait_ready {
        let ready = ReadyArgs {
            clusters: args.clusters.clone(),
            wait: true,
            timeout: args.timeout,
            details: false,
            strict: false,
        };
        let status = crate::commands::ready::run(&ready, &step_settings, &step).await?;
        if status != ExitStatus::Success {
            printer.error(&format!(
                "the Clusters did not become ready to move within {}{still_frozen}",
                crate::cli::show_duration(args.timeout)
            ));
            return Ok(status);
        }
    }
    let moved = match move_once(args, settings, printer).await {
        Ok(ExitStatus::Success) => ExitStatus::Success,
        Ok(other) => {
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
    if args.freeze {
        let target_settings = Settings {
            connection: target_connection(args, settings),
            ..step_settings.clone()
        };
        let released = crate::commands::freeze::run(
            Mode::Resume,
            &selection,
            None,
            false,
            &target_settings,
            &step,
        )
        .await;
        if !matches!(released, Ok(ExitStatus::Success)) {
            printer.note(&format!(
                "note: the move succeeded, but releasing the freeze in the target failed; run {} there",
                release_hint(&format!(
                    " --context {}",
                    args.to_context.as_deref().unwrap_or("<target>")
                ))
            ));
            return released;
        }
    }
    Ok(moved)
}

async fn move_once(args: &MoveArgs, settings: &Settings, printer: &Printer) -> Result<ExitStatus> {
    let dry_run = args.dry_run;
    if let Some(directory) = &args.from_directory {
        return restore(args, directory, dry_run, settings, printer).await;
    }
    // Local paths are checked before anything is read or written in a cluster.
    if let Some(directory) = &args.to_directory {
        crate::mover::directory::check_backup_directory(directory)?;
    }
    if args.to_kubeconfig.is_none()
        && args.to_context.is_none()
        && args.to_directory.is_none()
        && dry_run != DryRun::Client
    {
        return Err(Error::Usage(
            "please specify a target cluster using --to-kubeconfig and/or --to-context, or --to-directory (or use --dry-run)".into(),
        ));
    }
    let timeout = args.timeout;
    let source = connect(&settings.connection).await?;
    Catalog::discover(&source).await?;
    let (scope, moved_namespace) = if settings.scope.all_namespaces {
        (ListScope::AllNamespaces, None)
    } else {
        let ns = source.namespace(settings.scope.namespace.as_deref());
        (ListScope::Namespace(ns.clone()), Some(ns))
    };
    let target = if dry_run == DryRun::Client || args.to_directory.is_some() {
        None
    } else {
        let cluster = connect(&target_connection(args, settings)).await?;
        // Before anything else, and for a resume or rollback too: one cluster as both ends
        // would lose everything the move copies.
        same_cluster::ensure_distinct(&source, &cluster).await?;
        let catalog = Catalog::discover(&cluster).await?;
        Some(Destination { cluster, catalog })
    };

    // An interrupted move of the same Clusters is continued, never started over.
    let journal_path = target.as_ref().map(|t| {
        args.journal.clone().unwrap_or_else(|| {
            journal::default_dir().join(Journal::file_name(
                &source.url,
                &t.cluster.url,
                moved_namespace.as_deref(),
                &args.clusters,
            ))
        })
    });
    let journal_key = target.as_ref().map(|t| {
        Journal::key(
            &source.url,
            &t.cluster.url,
            moved_namespace.as_deref(),
            &args.clusters,
        )
    });
    let copy_namespace = match &target {
        Some(_) => journal::copy::namespace(&source, moved_namespace.as_deref()).await?,
        None => String::new(),
    };
    // The running move's journal: its local file and its copy in the source cluster.
    let journal_file = |path: &std::path::Path, journal: Journal| JournalFile {
        path: path.to_path_buf(),
        journal,
        copy: journal_key.as_ref().map(|key| JournalCopy {
            cluster: source.clone(),
            namespace: copy_namespace.clone(),
            key: key.clone(),
            written: None,
        }),
    };
    let journal_shown = journal_path
        .as_deref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    // What earlier runs of this move recorded, reconciled before anything acts on it.
    let recorded = match (&journal_path, &journal_key) {
        (Some(path), Some(key)) => {
            if args.journal.is_none() {
                journal::prune_finished(&journal::default_dir());
            }
            recovery::recorded(
                &Records {
                    path,
                    source: &source,
                    copy_namespace: &copy_namespace,
                    key,
                },
                args.rollback,
            )
            .await?
        }
        _ => Recorded::Nothing,
    };
    let mut finished = None;
    let unfinished = match recorded {
        Recorded::Nothing => None,
        Recorded::Interrupted { journal, from_copy } => {
            if from_copy {
                printer.info("continuing from the journal's copy in the source cluster");
            }
            Some(journal)
        }
        Recorded::Finished(record) => {
            finished = Some(record);
            None
        }
        Recorded::Untrusted(reason) => {
            return Err(Error::Refused(vec![format!(
                "{} refused: {reason}",
                if args.rollback { "rollback" } else { "move" }
            )]));
        }
        Recorded::FinishedElsewhere(stale) => {
            let path = journal_path.as_deref().expect("records have a path");
            if args.rollback {
                return Err(Error::Refused(vec![format!(
                    "rollback refused: the move recorded in {} (stage: {:?}) was finished from elsewhere — its objects have left the source and its copy there is gone, so the target holds the only copy",
                    path.display(),
                    stale.stage
                )]));
            }
            let mut record = stale;
            record.stage = Stage::Done;
            journal::save_text(&record.finished_record().to_json(), path)?;
            printer.info(&format!(
                "the move recorded in {} was finished from elsewhere: its objects have left the source and its copy there is gone; nothing to do",
                path.display()
            ));
            return Ok(ExitStatus::Success);
        }
    };
    if args.rollback {
        let (Some(journal), Some(path), Some(target)) = (&unfinished, &journal_path, &target)
        else {
            return Err(Error::Usage(format!(
                "no interrupted move to roll back: {journal_shown} holds none{}",
                finished_note(finished.as_ref())
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
        let gone = recovery::originals_gone(&source, &all).await?;
        if gone > 0 {
            return Err(Error::Refused(vec![format!(
                "rollback refused: {gone} of the {} objects {} records are no longer in the source with their recorded UIDs, so the move was continued elsewhere; the target may hold their only copy",
                all.len(),
                path.display()
            )]));
        }
        let mut file = journal_file(path, journal.clone());
        let removed = rollback_from_journal(
            &source,
            &target.cluster,
            &mut file,
            usize::from(args.concurrency),
            &Reporter::new(printer),
        )
        .await?;
        printer.data(&format!(
            "rolled back: {} object(s) removed from the target, {} Cluster(s)/ClusterClass(es) unpaused in the source\n",
            removed.count,
            file.journal.paused.len()
        ))?;
        warn_skipped(printer, &removed.skipped);
        return Ok(ExitStatus::Success);
    }
    if args.resume && unfinished.is_none() {
        return Err(Error::Usage(format!(
            "no interrupted move to resume: {journal_shown} holds none{}; run the move without --resume",
            finished_note(finished.as_ref())
        )));
    }
    if let (Some(journal), Some(path)) = (&unfinished, &journal_path) {
        printer.note(&format!(
            "continuing the interrupted move recorded in {} (stage: {:?})",
            path.display(),
            journal.stage
        ));
        if journal.stage >= Stage::Deleting && dry_run == DryRun::None {
            let target = target.as_ref().expect("connected above");
            let mut file = journal_file(path, journal.clone());
            let reporter = Reporter::new(printer);
            let summary = finish_from_journal(
                &source,
                &target.cluster,
                &mut file,
                usize::from(args.concurrency),
                &reporter,
            )
            .await?;
            print_summary(args, settings, printer, &summary)?;
            return Ok(ExitStatus::Success);
        }
    }

    let types = move_types(&source).await?;
    let objects = list_objects(&source, &types, &scope).await?;
    let graph = Graph::build(&objects, moved_namespace.as_deref());
    let all_clusters: Vec<&crate::mover::graph::Node> = graph
        .nodes
        .values()
        .filter(|n| {
            !n.is_virtual() && n.reference.kind == "Cluster" && n.reference.group() == CORE_GROUP
        })
        .filter(|n| {
            moved_namespace
                .as_deref()
                .is_none_or(|ns| n.reference.namespace == ns)
        })
        .collect();
    let scope_shown = super::scope_shown(&scope);
    let (found, missing) =
        crate::model::select_by_name(all_clusters.iter().copied(), &args.clusters, |n| {
            n.reference.name.as_str()
        });
    let selected: BTreeSet<String> = if args.clusters.is_empty() {
        BTreeSet::new()
    } else {
        found.iter().map(|n| n.uid.clone()).collect()
    };
    // A rerun after the move finished is harmless: it says so and succeeds.
    let finished_here = |path: &std::path::Path, record: &Journal| {
        format!(
            "the move recorded in {} finished at {} ({} objects); nothing left to move in {scope_shown}",
            path.display(),
            record.finished_at.as_deref().unwrap_or("an unknown time"),
            record.objects.unwrap_or_default()
        )
    };
    if let (Some(record), Some(path), false) = (&finished, &journal_path, missing.is_empty()) {
        printer.info(&finished_here(path, record));
        return Ok(ExitStatus::Success);
    }
    if !missing.is_empty() {
        return Err(Error::ClustersNotFound {
            names: missing,
            scope: scope_shown,
        });
    }
    let clusters: Vec<ObjectRef> = all_clusters
        .iter()
        .filter(|n| selected.is_empty() || selected.contains(&n.uid))
        .map(|n| n.reference.clone())
        .collect();
    // Without Cluster names the plan is clusterctl's whole graph for the scope, with or without
    // Clusters: ClusterClasses, labelled objects, global objects and identities.
    let mut plan = plan(graph, &selected);
    // After a finished move, what is left are at most the shared objects it copied and kept.
    let only_kept = plan
        .scheduled
        .iter()
        .all(|u| plan.kept_in_source.contains(u));
    if plan.groups.is_empty() || (finished.is_some() && only_kept) {
        // As clusterctl: a scope with nothing to move is not an error.
        printer.info(&match (&finished, &journal_path) {
            (Some(record), Some(path)) => finished_here(path, record),
            _ => format!("nothing to move in {scope_shown}"),
        });
        return Ok(ExitStatus::Success);
    }

    if let Some(directory) = &args.to_directory {
        let failures = preflight(
            &plan,
            &types,
            &objects,
            &source,
            None,
            &clusters,
            &ThisMove::default(),
        )
        .await?
        .failures;
        if !failures.is_empty() {
            printer.refused(
                "backup refused by its preflight, nothing was written:",
                &failures,
            );
            return Ok(ExitStatus::Failure);
        }
        if dry_run != DryRun::None {
            printer.data(&plan_text(
                &plan_report(&plan, &clusters, Vec::new()),
                wide_tree(&plan, settings).as_deref(),
            ))?;
            return Ok(ExitStatus::Success);
        }
        let from = Source {
            cluster: &source,
            types: &types,
            scope: &scope,
        };
        let written = crate::mover::directory::backup(&plan, &from, directory).await?;
        printer.data(&format!(
            "wrote {written} objects of {} Cluster(s) to {}\n",
            clusters.len(),
            directory.display()
        ))?;
        return Ok(ExitStatus::Success);
    }
    let (failures, in_target, made_namespaces) = if dry_run == DryRun::Client {
        (Vec::new(), BTreeSet::new(), Vec::new())
    } else {
        preflight(
            &plan,
            &types,
            &objects,
            &source,
            target.as_ref(),
            &clusters,
            &ThisMove {
                earlier: unfinished.as_ref(),
                overwrite_existing: args.overwrite_existing,
                journal_namespace: Some(&copy_namespace),
            },
        )
        .await
        .map(|p| (p.failures, p.in_target, p.made_namespaces))?
    };

    let structured = matches!(settings.output, OutputFormat::Json | OutputFormat::Yaml);
    if !failures.is_empty() {
        if structured {
            printer.data(&printer.structured(&plan_report(&plan, &clusters, failures.clone())))?;
        }
        printer.refused(
            "move refused by its preflight, nothing was written:",
            &failures,
        );
        return Ok(ExitStatus::Failure);
    }
    if dry_run != DryRun::None {
        // A dry run leaves nothing behind, not even the namespaces its checks needed.
        if let Some(target) = &target {
            remove_namespaces(&target.cluster, &made_namespaces).await;
        }
        let report = plan_report(&plan, &clusters, Vec::new());
        if structured {
            printer.data(&printer.structured(&report))?;
        } else {
            printer.data(&plan_text(&report, wide_tree(&plan, settings).as_deref()))?;
            if dry_run == DryRun::Server {
                printer.info("preflight passed: the move can start now");
            }
        }
        return Ok(ExitStatus::Success);
    }
    let target = target.expect("connected above");
    // The move re-reads every object once the source is paused.
    drop(objects);
    plan.release_objects();
    let from = Source {
        cluster: &source,
        types: &types,
        scope: &scope,
    };
    let options = RunOptions {
        timeout,
        restore_status: args.restore_status,
        concurrency: usize::from(args.concurrency),
        overwrite_existing: args.overwrite_existing,
        made_namespaces,
        stop: Stop::default(),
    };
    // Ctrl-C stops at the next safe point: writes in flight finish and are journalled. A second
    // Ctrl-C exits at once (the journal still lets the move resume).
    let listener = {
        let stop = options.stop.clone();
        let printer = printer.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                printer
                    .note("stopping after the requests in flight (Ctrl-C again to quit at once)");
                stop.request();
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(130);
                }
            }
        })
    };
    let mut journal = Journal::new(
        &plan,
        |r| type_of(&types, r).map(|t| (t.resource.plural.clone(), t.info.namespaced)),
        Endpoint {
            server: source.url.clone(),
            context: settings.connection.context.clone(),
        },
        Endpoint {
            server: target.cluster.url.clone(),
            context: args.to_context.clone(),
        },
        moved_namespace.clone(),
        args.clusters.clone(),
    );
    journal.attempt = unfinished.as_ref().map_or(0, |earlier| earlier.attempt + 1);
    // What was in the target before the move is known from the first attempt's preflight only:
    // later attempts find their own earlier creations there.
    for entry in &mut journal.entries {
        match unfinished
            .as_ref()
            .and_then(|earlier| earlier.entry(&entry.uid))
        {
            Some(before) => {
                entry.preexisting = before.preexisting;
                entry.created = before.created;
                entry.sent = before.sent;
                entry.target_uid = before.target_uid.clone();
            }
            // Not in the first plan, so not created by this move.
            None => entry.preexisting = in_target.contains(&entry.uid),
        }
    }
    let mut file = journal_file(
        journal_path
            .as_deref()
            .expect("a target means a journal path"),
        journal,
    );
    let reporter = Reporter::new(printer);
    let outcome = execute(
        &plan,
        &from,
        &target,
        &options,
        clusters.clone(),
        &reporter,
        &mut file,
    )
    .await;
    listener.abort();
    let summary = match outcome {
        Ok(summary) => summary,
        Err(e) => {
            let resume = resume_command();
            match &e {
                Error::Interrupted => printer.note(&format!(
                    "interrupted: the move stopped after its requests in flight; its journal is {}.\ncontinue with: {resume}",
                    file.path.display()
                )),
                _ => printer.note(&format!(
                    "note: the move stopped partway; its journal is {}. Fix the cause, then continue with: {resume}{}",
                    file.path.display(),
                    if file.journal.stage < Stage::Deleting {
                        " (or undo it with --rollback)"
                    } else {
                        ""
                    }
                )),
            }
            return Err(e);
        }
    };
    print_summary(args, settings, printer, &summary)?;
    Ok(ExitStatus::Success)
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
            .map(|a| {
                if a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@".contains(c))
                {
                    a
                } else {
                    format!("'{}'", a.replace('\'', "'\\''"))
                }
            }),
    );
    words.push("--resume".into());
    words.join(" ")
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
        if !summary.frozen_in_target.is_empty() && !args.freeze {
            let names: Vec<&str> = summary.clusters.iter().map(|c| c.name.as_str()).collect();
            printer.info(&format!(
                "note: {} object(s) frozen by kubectl capi pause stay frozen in the target; run `kubectl capi resume {} --context {}` there",
                summary.frozen_in_target.len(),
                names.join(" "),
                args.to_context.as_deref().unwrap_or("<target>")
            ));
        }
    }
    Ok(())
}
