//! The move, as clusterctl's `move()` reads: a short list of named steps over a checked plan —
//! pause, wait for block-move, create, delete, unpause — each journalled.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::kube::Cluster;
use crate::model::ObjectRef;
use crate::snapshot::{Content, Keep, ListScope, Status};

use crate::kube::Connected;
use crate::kube::Stop;
use crate::mover::graph::discover::MoveType;
use crate::mover::graph::plan::MovePlan;
use crate::mover::journal::{JournalFile, Stage};
use crate::mover::progress::Progress;
use crate::mover::report::{Phases, Summary};
use crate::mover::write::create::{Created, Creating, Fresh, create_groups};
use crate::mover::write::delete::delete_entries;
use crate::mover::write::namespaces::{MadeNamespace, remove_namespaces};
use crate::mover::write::pause::{
    PausedWhere, patch_paused, paused_entries, read_when_unblocked, set_paused,
};

/// The source management cluster, and what move reads there.
pub struct Source<'a> {
    pub cluster: &'a Cluster,
    pub types: &'a [MoveType],
    pub scope: &'a ListScope,
}

/// How the move runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// One global limit for block-move to go.
    pub timeout: Duration,
    /// Replay `.status` after create.
    pub restore_status: bool,
    /// Writes in flight at once.
    pub concurrency: usize,
    /// `--overwrite-existing`: update objects that were in the target before the move.
    pub overwrite_existing: bool,
    /// Namespaces the preflight created in the target: removed again if the move stops before
    /// its first create.
    pub made_namespaces: Vec<MadeNamespace>,
    /// Set on Ctrl-C: no new write starts; those in flight finish and are journalled.
    pub stop: Stop,
}

/// Runs the move after a passed preflight, as clusterctl's `move()` does: pause the source
/// and read it again once block-move lets go, create in the target, delete from the source,
/// unpause the target — each step journalled before it starts.
pub async fn run(
    plan: &MovePlan,
    source: &Source<'_>,
    target: &Connected,
    options: &RunOptions,
    clusters: Vec<ObjectRef>,
    progress: &dyn Progress,
    journal: &mut JournalFile,
) -> Result<Summary> {
    let started = Instant::now();
    if journal.journal.move_id.is_empty() {
        // An older version's journal: this run marks what it creates (saved with its stage).
        journal.journal.move_id = crate::mover::journal::new_move_id();
    }
    let mut phases = Phases::default();
    let mut lap = Instant::now();
    let mut lap_seconds = move || {
        let seconds = lap.elapsed().as_secs_f64();
        lap = Instant::now();
        seconds
    };
    let fresh = match pause_and_read(plan, source, options, progress, journal).await {
        Ok(fresh) => fresh,
        Err(e) => {
            // Nothing was written into the target yet: both ends are left as they were found.
            remove_namespaces(&target.cluster, &options.made_namespaces).await;
            release_pause(source.cluster, options, progress, journal).await;
            return Err(e);
        }
    };
    phases.pause = lap_seconds();
    let created = create(
        plan,
        source.types,
        target,
        fresh,
        options,
        progress,
        journal,
    )
    .await?;
    phases.create = lap_seconds();
    let deleted = delete(source.cluster, target, options, progress, journal).await?;
    phases.delete = lap_seconds();
    let not_recorded = unpause(source, target, options, progress, journal).await?;
    phases.unpause = lap_seconds();
    Ok(Summary {
        api_version: crate::names::OUTPUT_API_VERSION,
        kind: "MoveSummary",
        clusters,
        created: created.per_kind,
        deleted: deleted.count,
        skipped: deleted.skipped,
        kept_in_source: plan.kept_in_source.len(),
        excluded: plan.excluded.clone(),
        frozen_in_target: created.frozen,
        seconds: started.elapsed().as_secs_f64(),
        phases,
        not_recorded,
        moved: journal.journal.moved.clone(),
        verification: None,
    })
}

/// Pauses the source and, once block-move lets go, reads every object to move again (with its
/// managedFields, and its status where a create writes it or `--restore-status` replays it);
/// one that left the source since the plan stops the move before its first create.
async fn pause_and_read(
    plan: &MovePlan,
    source: &Source<'_>,
    options: &RunOptions,
    progress: &dyn Progress,
    journal: &mut JournalFile,
) -> Result<Fresh> {
    let (types, scope) = (source.types, source.scope);
    journal.stage(Stage::Pausing).await?;
    set_paused(
        source.cluster,
        &journal.journal.paused,
        types,
        true,
        options.concurrency,
        progress,
    )
    .await?;
    let keep = |t: &MoveType| Keep {
        managed_fields: true,
        status: if options.restore_status || !t.status {
            Status::Whole
        } else {
            Status::Skip
        },
        // Held until created: as text, but what the graph reads to see what appeared.
        content: if crate::model::kinds::content_read_by_graph(&t.info.group, &t.info.kind) {
            Content::Tree
        } else {
            Content::Text
        },
    };
    let fresh =
        read_when_unblocked(source.cluster, types, scope, plan, (options.timeout, keep)).await?;
    // clusterctl reads each object again before creating it and stops when one is gone; so
    // does this, before the first create.
    let vanished: Vec<String> = plan
        .groups
        .iter()
        .flatten()
        .filter(|uid| !fresh.objects.contains_key(*uid))
        .map(|uid| plan.node(uid).reference.kubectl_name())
        .collect();
    if !vanished.is_empty() {
        return Err(Error::Api {
            context: "reading the objects to move".into(),
            message: format!(
                "{} left the source after the move was planned; nothing was created — run the move again to plan it anew",
                vanished.join(", ")
            ),
        });
    }
    journal.journal.sending_group(0);
    journal.stage(Stage::Creating).await?;
    Ok(fresh)
}

/// A move that stops before its first create (refused by block-move, an object gone, an error)
/// unpauses in the source what it paused and closes its journal as rolled back. If it cannot,
/// the pause stays and the journal still holds what `--rollback` undoes.
async fn release_pause(
    source: &Cluster,
    options: &RunOptions,
    progress: &dyn Progress,
    journal: &mut JournalFile,
) {
    let paused = paused_entries(&journal.journal, PausedWhere::All);
    let released = async {
        patch_paused(source, &paused, false, options.concurrency, progress).await?;
        journal.stage(Stage::RolledBack).await
    }
    .await;
    progress.note(&match released {
        Ok(()) => format!(
            "note: nothing was created in the target, and the {} Cluster(s)/ClusterClass(es) the move paused in the source were unpaused again",
            paused.len()
        ),
        Err(e) => format!(
            "note: the source stays paused ({e}); the same command with --rollback unpauses it"
        ),
    });
}

/// Creates every object in the target, group by group, from what was read once paused.
async fn create(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Connected,
    fresh: Fresh,
    options: &RunOptions,
    progress: &dyn Progress,
    journal: &mut JournalFile,
) -> Result<Created> {
    let creating = Creating {
        preexisting: BTreeSet::new(),
        overwrite_existing: options.overwrite_existing,
        restore_status: options.restore_status,
        concurrency: options.concurrency,
        stop: options.stop.clone(),
        mark: journal.journal.move_id.clone(),
    };
    let created = create_groups(
        plan,
        types,
        target,
        fresh,
        creating,
        progress,
        Some(journal),
    )
    .await?;
    options.stop.check()?;
    Ok(created)
}

/// Deletes the originals from the source, once every copy is in the target.
async fn delete(
    source: &Cluster,
    target: &Connected,
    options: &RunOptions,
    progress: &dyn Progress,
    journal: &mut JournalFile,
) -> Result<crate::mover::write::delete::Deleted> {
    journal.stage(Stage::Deleting).await?;
    delete_entries(
        source,
        journal,
        |e| (!e.kept_in_source && !e.deleted).then(|| e.uid.clone()),
        |e| e.deleted = true,
        ("source", Some(&target.cluster)),
        (options.concurrency, &options.stop),
        progress,
    )
    .await
}

/// Unpauses the target and leaves the verification records; returns the warnings of records
/// that could not be left.
async fn unpause(
    source: &Source<'_>,
    target: &Connected,
    options: &RunOptions,
    progress: &dyn Progress,
    journal: &mut JournalFile,
) -> Result<Vec<String>> {
    journal.stage(Stage::Unpausing).await?;
    let cluster = &target.cluster;
    set_paused(
        cluster,
        &journal.journal.paused,
        source.types,
        false,
        options.concurrency,
        progress,
    )
    .await?;
    // What stays in the source (a shared ClusterClass) ends there as it began.
    patch_paused(
        source.cluster,
        &paused_entries(&journal.journal, PausedWhere::KeptInSource),
        false,
        options.concurrency,
        progress,
    )
    .await?;
    let mut not_recorded =
        crate::mover::write::record::leave_in_target(cluster, journal, options.concurrency).await;
    not_recorded.extend(
        crate::mover::write::record::remove_from_source(source.cluster, &journal.journal).await,
    );
    journal.stage(Stage::Done).await?;
    Ok(not_recorded)
}
