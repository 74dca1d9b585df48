//! Which record of a move a rerun, `--resume` or `--rollback` trusts. A move keeps two: the local
//! journal and its copy in the source cluster (for a resume from another machine). Either can be
//! stale — the move may have been continued, finished or rolled back elsewhere — so before
//! anything acts on one, the two are reconciled with each other and with the source.

use std::collections::BTreeSet;
use std::path::Path;

use futures::{StreamExt, TryStreamExt, stream};

use crate::error::{Error, Result};
use crate::kube::Cluster;
use crate::model::ClusterView;
use crate::mover::addressing::{DEFAULT_CONCURRENCY, api};
use crate::mover::journal::{self, Entry, Journal, Stage, entry_resource};
use crate::ready::evaluate::UnfinishedMove;
use crate::snapshot::Snapshot;

/// What the records of a move say.
#[derive(Debug)]
pub enum Recorded {
    /// No record: a fresh move.
    Nothing,
    /// The move finished here; its short record.
    Finished(Journal),
    /// An interrupted move, from the record that is furthest along.
    Interrupted { journal: Journal, from_copy: bool },
    /// The local journal of an interrupted move, but its copy is gone and so are its objects
    /// from the source: it was finished from elsewhere.
    FinishedElsewhere(Journal),
    /// The records disagree in a way no command should act on; why, and what to do.
    Untrusted(String),
}

/// Where a move's records are.
pub struct Records<'a> {
    pub path: &'a Path,
    pub source: &'a Cluster,
    pub copy_namespace: &'a str,
    pub key: &'a str,
}

/// Reads both records and reconciles them. `rollback`: the caller will delete from the target on
/// the strength of the result, so a copy that is further along than the local journal (the move
/// went on elsewhere) is not followed but refused.
pub async fn recorded(records: &Records<'_>, rollback: bool) -> Result<Recorded> {
    let shown = records.path.display();
    let local = if records.path.exists() {
        Some(Journal::load(records.path)?)
    } else {
        None
    };
    let copy = journal::copy::load(records.source, records.copy_namespace, records.key)
        .await?
        .filter(|j| !j.stage.finished());
    Ok(match (local, copy) {
        (None, None) => Recorded::Nothing,
        (None, Some(copy)) => Recorded::Interrupted {
            journal: copy,
            from_copy: true,
        },
        (Some(local), None) if local.stage.finished() => Recorded::Finished(local),
        // Finished here, then started again from elsewhere and interrupted there.
        (Some(local), Some(copy))
            if local.stage.finished() || copy.progress() > local.progress() =>
        {
            if rollback {
                Recorded::Untrusted(format!(
                    "the move was continued elsewhere: its copy in the source cluster is further along (stage: {:?}) than {shown} (stage: {:?}); if that run has stopped, remove {shown} and run the rollback again to use the copy",
                    copy.stage, local.stage
                ))
            } else {
                Recorded::Interrupted {
                    journal: copy,
                    from_copy: true,
                }
            }
        }
        (Some(local), Some(_)) => Recorded::Interrupted {
            journal: local,
            from_copy: false,
        },
        // The copy goes only when a move finishes or is rolled back; only reality can tell
        // which, or whether the copy was never written (the first save stopped halfway, so
        // nothing was done).
        (Some(local), None) => {
            let moved: Vec<&Entry> = local.entries.iter().filter(|e| !e.kept_in_source).collect();
            let gone = originals_gone(records.source, &moved).await?;
            if !moved.is_empty() && gone == moved.len() {
                Recorded::FinishedElsewhere(local)
            } else if gone == 0 && local.stage == Stage::Pausing && !rollback {
                Recorded::Nothing
            } else {
                Recorded::Untrusted(format!(
                    "{shown} records an interrupted move (stage: {:?}), but the source cluster holds no copy of it and {gone} of its {} objects have left the source: the move was continued elsewhere and finished or rolled back there, or its copy was deleted; check both clusters, then remove {shown} to start afresh",
                    local.stage,
                    moved.len()
                ))
            }
        }
    })
}

/// Where to look for records of this move written for other clusters at the same addresses.
pub struct Elsewhere<'a> {
    pub id: journal::MoveId<'a>,
    /// The journal file this move uses.
    pub path: &'a Path,
    /// `--journal`: only that file is looked at, and one without identities (an older
    /// version's) is taken as the user's choice.
    pub chosen: bool,
    pub source: &'a Cluster,
    pub copy_namespace: &'a str,
}

/// Sets aside every record of this move that was written for other clusters at the same
/// addresses (a cluster recreated there), or by an older version that recorded no identities:
/// local journals are renamed (see [`journal::set_aside`]), copies in the source removed. Returns
/// what was set aside and why, one line each; no command acts on those records.
pub async fn set_aside_foreign(at: &Elsewhere<'_>) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    let mut files = vec![at.path.to_path_buf()];
    if !at.chosen
        && let Some(dir) = at.path.parent()
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        let prefixes = at.id.file_prefixes();
        files.extend(entries.flatten().map(|e| e.path()).filter(|p| {
            p.as_path() != at.path
                && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                    prefixes.iter().any(|prefix| n.starts_with(prefix.as_str()))
                        && n.ends_with(".json")
                })
        }));
    }
    for file in files.iter().filter(|f| f.exists()) {
        let Ok(recorded) = Journal::load(file) else {
            continue;
        };
        let unidentified = recorded.source.identity.is_none();
        let Some(reason) = recorded.foreign_to(&at.id) else {
            continue;
        };
        if !unidentified && !at.same_addresses(&recorded) {
            // The same selection between other clusters: a move of its own.
            continue;
        }
        if at.chosen && unidentified {
            continue;
        }
        let aside = journal::set_aside(file)?;
        notes.push(format!(
            "the journal {} was not acted on: {reason}; it was set aside as {}",
            file.display(),
            aside.display()
        ));
    }
    let keys = journal::copy::keys(at.source, at.copy_namespace).await?;
    for key in keys.iter().filter(|k| at.id.same_selection(k)) {
        let Some(recorded) = journal::copy::load(at.source, at.copy_namespace, key).await? else {
            continue;
        };
        let Some(reason) = recorded.foreign_to(&at.id) else {
            continue;
        };
        if recorded.source.identity.is_some() && !at.same_addresses(&recorded) {
            continue;
        }
        journal::copy::remove(at.source, at.copy_namespace, key).await?;
        notes.push(format!(
            "the journal's copy {key} in namespace {} of the source was not acted on: {reason}; it was removed",
            at.copy_namespace
        ));
    }
    Ok(notes)
}

impl Elsewhere<'_> {
    /// Whether `recorded` names the clusters at the addresses this move reaches them through.
    fn same_addresses(&self, recorded: &Journal) -> bool {
        recorded.source.server == self.id.source && recorded.target.server == self.id.target
    }
}

/// How many of `entries` no longer exist in the source with their recorded UID.
pub async fn originals_gone(source: &Cluster, entries: &[&Entry]) -> Result<usize> {
    let present: Vec<bool> = stream::iter(entries.iter().map(|entry| async move {
        let found = uid_by_name(source, entry, "source").await?;
        Ok::<_, Error>(found.as_deref() == Some(entry.uid.as_str()))
    }))
    .buffered(DEFAULT_CONCURRENCY)
    .try_collect()
    .await?;
    Ok(present.iter().filter(|p| !**p).count())
}

/// The UID of the object that now has a journal entry's name in `cluster` (the `source` or
/// `target`, for the message); `None` when there is none.
async fn uid_by_name(cluster: &Cluster, entry: &Entry, which: &str) -> Result<Option<String>> {
    Ok(object_by_name(cluster, entry, which)
        .await?
        .and_then(|o| o.metadata.uid))
}

/// The object that now has a journal entry's name in `cluster`, if any.
pub(super) async fn object_by_name(
    cluster: &Cluster,
    entry: &Entry,
    which: &str,
) -> Result<Option<kube::api::DynamicObject>> {
    api(cluster, &entry_resource(entry), entry.namespace())
        .get_opt(&entry.object.name)
        .await
        .map_err(|e| {
            cluster.api_error(
                e,
                &format!("reading {} in the {which}", entry.object.kubectl_name()),
            )
        })
}

/// The kubectl-capi moves that paused Clusters of the snapshot and did not finish, from their
/// journal copies (in the Clusters' namespaces and `default`), with the commands that finish
/// and undo them — repeating the user's connection flags, so that they work when pasted.
pub async fn unfinished_moves(
    cluster: &Cluster,
    snapshot: &Snapshot,
    flags: &str,
) -> Result<Vec<UnfinishedMove>> {
    let paused: Vec<ClusterView> = snapshot
        .clusters()
        .iter()
        .map(|c| ClusterView::read(c))
        .filter(ClusterView::is_paused)
        .collect();
    if paused.is_empty() {
        return Ok(Vec::new());
    }
    let mut namespaces: BTreeSet<String> = paused
        .iter()
        .map(|c| c.reference.namespace.clone())
        .collect();
    namespaces.insert("default".into());
    let namespaces: Vec<String> = namespaces.into_iter().collect();
    Ok(
        crate::mover::journal::copy::unfinished(cluster, &namespaces)
            .await?
            .into_iter()
            .map(|journal| {
                let word = crate::settings::shell_word;
                let mut command = String::from("kubectl capi move");
                for name in &journal.clusters {
                    command.push_str(&format!(" {}", word(name)));
                }
                command.push_str(flags);
                match &journal.namespace {
                    Some(namespace) => command.push_str(&format!(" -n {}", word(namespace))),
                    None => command.push_str(" -A"),
                }
                if let Some(selector) = &journal.selector {
                    command.push_str(&format!(" -l {}", word(selector)));
                }
                if let Some(kubeconfig) = &journal.target.kubeconfig {
                    command.push_str(&format!(" --to-kubeconfig {}", word(kubeconfig)));
                }
                if let Some(context) = &journal.target.context {
                    command.push_str(&format!(" --to-context {}", word(context)));
                }
                if let Some(cluster) = &journal.target.cluster {
                    command.push_str(&format!(" --to-cluster {}", word(cluster)));
                }
                UnfinishedMove {
                    clusters: journal
                        .paused
                        .iter()
                        .filter(|r| r.is_core_cluster())
                        .map(|r| (r.namespace.clone(), r.name.clone()))
                        .collect(),
                    resume: format!("{command} --resume"),
                    rollback: format!("{command} --rollback"),
                }
            })
            .collect(),
    )
}
