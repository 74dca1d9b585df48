//! The checked move run under its journal: the journal it starts (carrying over what an
//! earlier attempt learnt), the executor's steps, and what to tell the user if it stops.

use crate::error::{Error, Result};
use crate::kube::OnCtrlC;
use crate::mover::addressing::type_of;
use crate::mover::graph::discover::MoveType;
use crate::mover::graph::plan::MovePlan;
use crate::mover::journal::{self, Endpoint, Journal, JournalFile, Stage};
use crate::mover::report::Summary;
use crate::mover::request::absolute;
use crate::mover::steps::checking::Checked;
use crate::mover::steps::context::{MoveContext, MoveRecords};
use crate::mover::steps::history::History;
use crate::mover::steps::planning::Planned;
use crate::mover::write::execute::{RunOptions, Source};

/// The journal this run writes: the plan between its two ends, with what an earlier attempt and
/// the preflight learnt ([`carry_over`]).
fn new_journal(
    this: &MoveContext<'_>,
    (plan, types): (&MovePlan, &[MoveType]),
    moved: Vec<crate::verify::MovedCluster>,
    checked: &Checked,
    history: &History,
    records: &MoveRecords,
) -> Journal {
    let target = this.ends.target.as_ref().expect("a move has a target");
    let mut journal = Journal::new(
        plan,
        |r| type_of(types, r).map(|t| (t.resource.plural.clone(), t.info.namespaced)),
        Endpoint {
            server: this.source().url.clone(),
            context: this.request.source.context.clone(),
            kubeconfig: absolute(this.request.source.kubeconfig.as_ref()),
            identity: Some(records.identities.source.clone()),
            cluster: None,
        },
        Endpoint {
            server: target.cluster.url.clone(),
            context: this.request.to_context.clone(),
            // The file the target was read from (`--to-kubeconfig`, else `--kubeconfig`):
            // a hint read back from the journal names it even where another is the default.
            // A `--to-cluster` target has no file: the journal names the Cluster.
            kubeconfig: match &this.request.to_cluster {
                Some(_) => None,
                None => absolute(
                    this.request
                        .to_kubeconfig
                        .as_ref()
                        .or(this.request.source.kubeconfig.as_ref()),
                ),
            },
            identity: Some(records.identities.target.clone()),
            cluster: this.request.to_cluster.clone(),
        },
        this.namespace.clone(),
        this.request.clusters.clone(),
    );
    journal.selector = this.request.scope.selector.clone();
    journal.moved = moved;
    carry_over(&mut journal, history.unfinished.as_ref(), checked);
    journal
}

/// What `journal` carries over from the `earlier` attempt of this move (what it paused,
/// created and sent, and its mark), and what the preflight found (`checked`): what was in the
/// target before, what is reused, the namespaces its checks made.
fn carry_over(journal: &mut Journal, earlier: Option<&Journal>, checked: &Checked) {
    if let Some(earlier) = earlier {
        journal.made_namespaces = earlier.made_namespaces.clone();
        // What the first attempt paused reads as paused before this one: it was this move.
        for reference in &earlier.paused {
            let planned = journal.entries.iter().any(|e| &e.object == reference);
            if planned && !journal.paused.contains(reference) {
                journal.paused.push(reference.clone());
            }
        }
        // The same move: its copies carry its mark.
        if !earlier.move_id.is_empty() {
            journal.move_id = earlier.move_id.clone();
        }
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
}

/// Runs the checked move under its journal; Ctrl-C stops it at the next safe point.
pub(in crate::mover) async fn execute(
    this: &MoveContext<'_>,
    planned: Planned,
    checked: Checked,
    history: History,
) -> Result<Box<Summary>> {
    let (Some(target), Some(records)) = (&this.ends.target, &this.records) else {
        unreachable!("a move that writes has a target and records")
    };
    // The verification records read the planned objects; nothing after them does.
    let moved = moved_clusters(&planned);
    let Planned {
        types,
        objects,
        mut plan,
        clusters,
    } = planned;
    // The move re-reads every object once the source is paused: the planning read goes
    // before the journal is made, so that the two are never held at once.
    drop(objects);
    plan.release_objects();
    let journal = new_journal(this, (&plan, &types), moved, &checked, &history, records);
    // A reused copy's original stays in the source, as a global object's does.
    plan.kept_in_source.extend(checked.reused.iter().cloned());
    let from = Source {
        cluster: this.source(),
        types: &types,
        scope: &this.scope,
    };
    let options = RunOptions {
        timeout: this.request.timeout,
        restore_status: this.request.restore_status,
        concurrency: this.request.concurrency,
        overwrite_existing: this.request.overwrite_existing,
        made_namespaces: checked.made_namespaces,
        stop: this.stop.clone(),
    };
    // From here Ctrl-C lets the writes in flight finish and be journalled.
    this.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
    keep_the_targets_kubeconfig(this).await?;
    let mut file = this.journal_file(records, journal);
    let preflight = this.request.started.elapsed().as_secs_f64();
    let outcome = crate::mover::write::execute::run(
        &plan,
        &from,
        target,
        &options,
        clusters,
        this.progress,
        &mut file,
    )
    .await;
    this.stop.on_ctrl_c(OnCtrlC::EndAtOnce);
    match outcome {
        Ok(mut summary) => {
            summary.phases.preflight = preflight;
            Ok(Box::new(summary))
        }
        Err(e) => {
            this.progress.stopped();
            if let Some(note) = stopped_note(&e, &file, &this.request.resume_command()) {
                this.progress.note(&note);
            }
            Err(e)
        }
    }
}

/// A resume must reach a `--to-cluster` target after the move deleted its Secret here: its
/// kubeconfig is kept in the source while the move runs.
async fn keep_the_targets_kubeconfig(this: &MoveContext<'_>) -> Result<()> {
    if let (Some(kept), Some(inline)) = (
        this.kept_kubeconfig(),
        this.request.target.as_ref().and_then(|t| t.inline.as_ref()),
    ) {
        kept.keep(this.source(), &inline.raw).await?;
    }
    Ok(())
}

/// What to tell a user whose move stopped: where its journal is and the command to continue.
/// Nothing when the move closed its journal as it stopped (before its first create, its pause
/// released): there is nothing to continue, and a `--resume` would say so.
fn stopped_note(error: &Error, file: &JournalFile, resume: &str) -> Option<String> {
    if file.journal.stage == Stage::RolledBack {
        return None;
    }
    Some(match error {
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
    })
}

/// The moved Clusters as the source has them now, and what the move takes for each (its
/// hierarchy in the plan), for verifying the move later.
fn moved_clusters(planned: &Planned) -> Vec<crate::verify::MovedCluster> {
    let source = crate::mover::graph::object_graph::snapshot_of(&planned.objects);
    let plan = &planned.plan;
    // What each Cluster takes along, in the plan's order: one pass over the plan, not one per
    // Cluster.
    let mut taken_by: std::collections::HashMap<&str, Vec<crate::verify::Taken>> =
        std::collections::HashMap::new();
    for node in plan.groups.iter().flatten().map(|moved| plan.node(moved)) {
        for tenant in &node.tenants {
            taken_by
                .entry(tenant.as_str())
                .or_default()
                .push(crate::verify::Taken {
                    reference: &node.reference,
                    uid: &node.uid,
                    kept_in_source: plan.kept_in_source.contains(&node.uid),
                });
        }
    }
    let clusters: std::collections::HashMap<crate::model::ObjectRef, _> = source
        .clusters()
        .iter()
        .map(|o| (crate::model::ObjectRef::of(o), o))
        .collect();
    planned
        .clusters
        .iter()
        .filter_map(|reference| clusters.get(reference))
        .map(|o| {
            let uid = o.metadata.uid.as_deref().unwrap_or_default();
            let taken = taken_by.remove(uid).unwrap_or_default();
            crate::verify::MovedCluster::record(&crate::model::ClusterView::read(o), &source)
                .taking(taken)
        })
        .collect()
}
