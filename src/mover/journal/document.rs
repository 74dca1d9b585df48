//! The journal document: where a move is (`Stage`), what it wrote object by object (`Entry`),
//! both ends' identities, and its file and copies as JSON.

use std::path::Path;

use serde::{Deserialize, Serialize};

use kube::core::{ApiResource, GroupVersionKind};

use crate::error::{Error, Result};
use crate::model::ObjectRef;
use crate::mover::graph::plan::MovePlan;

use super::move_id::{MoveId, fnv1a, new_move_id};

/// Where a move is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Stage {
    /// Planned and checked; pausing the source.
    Pausing,
    /// Creating in the target (the source is paused, nothing deleted).
    Creating,
    /// Every object exists in the target; deleting from the source.
    Deleting,
    /// Deleted; unpausing in the target.
    Unpausing,
    Done,
    RolledBack,
}

impl Stage {
    pub fn finished(self) -> bool {
        matches!(self, Stage::Done | Stage::RolledBack)
    }
}

/// One moved object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    #[serde(flatten)]
    pub object: ObjectRef,
    /// The REST resource (plural), to act on the object without rediscovering its type.
    pub resource: String,
    pub namespaced: bool,
    pub uid: String,
    /// Its move group (create ascending, delete descending).
    pub group: usize,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept_in_source: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_uid: Option<String>,
    /// Created or updated in the target by this move.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub created: bool,
    /// Already in the target before the move started: a rollback never removes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preexisting: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// Its create may have been sent (recorded before it is), so that a create whose answer was
    /// lost is still known to be this move's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sent: bool,
    /// Removed from the target again by a rollback.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
    /// Its copy in the target is one an earlier move between these two clusters made (their
    /// records say so, by UID): reused like a global object — never overwritten, never removed,
    /// and the original stays in the source.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reused: bool,
    /// Its owners and soft owners in this move (source UIDs): deleted only after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub server: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The kubeconfig given for this end (`--to-kubeconfig` for the target), so that a hint
    /// read back from the journal can repeat it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<String>,
    /// The cluster's identity: the UID of its `kube-system` namespace. A journal is acted on
    /// only between the clusters it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// `--to-cluster`: the target is this workload cluster of the source, reached through its
    /// kubeconfig Secret (never kept here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    pub api_version: String,
    pub kind: String,
    pub source: Endpoint,
    pub target: Endpoint,
    /// `None`: all namespaces.
    pub namespace: Option<String>,
    /// The Clusters named on the command line (empty: every Cluster in scope).
    pub clusters: Vec<String>,
    /// `-l`: the label selector the Clusters were chosen by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    pub stage: Stage,
    /// This move's own ID, the value of the mark it leaves on what it creates until its copy's
    /// UID is recorded ([`crate::names::MOVED_BY_ANNOTATION`]); empty in an older version's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub move_id: String,
    /// The Clusters and ClusterClasses this move pauses in the source (not those paused before
    /// it): what it unpauses again — in the target, and in the source what stays there.
    pub paused: Vec<ObjectRef>,
    /// Which run of the move wrote this: 0 for the first, one more for each rerun that planned
    /// it again, so the newer of two records is known even though a rerun starts its stages over.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u32,
    /// When the move finished or was rolled back (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// How many objects a finished move had; its record keeps no entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<usize>,
    /// Whether entries carry their owners. A journal written before they did is deleted from
    /// group by group, as it was planned.
    #[serde(default)]
    pub owners_recorded: bool,
    /// The moved Clusters as the source had them (Machine names, providerIDs, replicas), for
    /// verifying later that the target adopted them; kept in the finished record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<crate::verify::MovedCluster>,
    /// Namespaces this move created in the target (name and UID): a rollback removes them again
    /// once nothing is left in them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub made_namespaces: Vec<MadeNamespaceRecord>,
    /// Sorted by source UID, so an entry is found in O(log N) (each carries its group).
    pub entries: Vec<Entry>,
}

/// A piece of a journal's JSON (see [`Journal::to_json_pieces`]).
pub struct JsonPiece {
    pub text: String,
    /// A slice of the copy in the cluster may begin here.
    pub starts_slice: bool,
}

/// One entry in this many may begin a slice of the copy.
const ENTRIES_PER_SLICE: u64 = 256;

/// Whether a slice of the copy begins at the entry of this UID: decided by the UID alone, so
/// that slices keep their bounds from one save to the next.
fn starts_slice(uid: &str) -> bool {
    fnv1a(uid.as_bytes()).is_multiple_of(ENTRIES_PER_SLICE)
}

/// A namespace a move created in the target, as its journal records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MadeNamespaceRecord {
    pub name: String,
    pub uid: String,
}

impl Journal {
    pub fn new(
        plan: &MovePlan,
        resource_of: impl Fn(&ObjectRef) -> Option<(String, bool)>,
        source: Endpoint,
        target: Endpoint,
        namespace: Option<String>,
        clusters: Vec<String>,
    ) -> Journal {
        let mut entries = Vec::new();
        for (group, uids) in plan.groups.iter().enumerate() {
            for uid in uids {
                let node = plan.node(uid);
                let Some((resource, namespaced)) = resource_of(&node.reference) else {
                    continue;
                };
                entries.push(Entry {
                    object: node.reference.clone(),
                    resource,
                    namespaced,
                    uid: uid.clone(),
                    group,
                    kept_in_source: plan.kept_in_source.contains(uid),
                    target_uid: None,
                    created: false,
                    preexisting: false,
                    deleted: false,
                    sent: false,
                    removed: false,
                    reused: false,
                    owners: crate::mover::graph::schedule::owners_in_plan(plan, uid),
                });
            }
        }
        let mut journal = Journal {
            api_version: crate::names::JOURNAL_API_VERSION.into(),
            kind: "MoveJournal".into(),
            source,
            target,
            namespace,
            clusters,
            selector: None,
            stage: Stage::Pausing,
            move_id: new_move_id(),
            paused: plan
                .to_pause()
                .into_iter()
                .filter(|r| resource_of(r).is_some())
                .collect(),
            attempt: 0,
            finished_at: None,
            objects: None,
            owners_recorded: true,
            moved: Vec::new(),
            made_namespaces: Vec::new(),
            entries,
        };
        journal.sort();
        journal
    }

    fn sort(&mut self) {
        self.entries.sort_by(|a, b| a.uid.cmp(&b.uid));
    }

    /// Parses a journal's text (a file or the cluster copy).
    pub fn parse(text: &str) -> serde_json::Result<Journal> {
        let mut journal: Journal = serde_json::from_str(text)?;
        journal.sort();
        Ok(journal)
    }

    /// Why this journal must not be acted on between the clusters whose `kube-system` UIDs
    /// are `now`: it names other clusters (one was recreated at the same address), or none (an
    /// older version wrote it).
    pub fn foreign_to(&self, now: &MoveId<'_>) -> Option<String> {
        let recorded = (
            self.source.identity.as_deref(),
            self.target.identity.as_deref(),
        );
        match recorded {
            (Some(source), Some(target)) if source == now.source_uid && target == now.target_uid => {
                None
            }
            (Some(source), Some(_)) if source != now.source_uid => Some(format!(
                "it was written for another cluster at {} (kube-system UID {source}; the one there now has {}): the cluster was recreated at that address",
                self.source.server, now.source_uid
            )),
            (Some(_), Some(target)) => Some(format!(
                "it was written for another cluster at {} (kube-system UID {target}; the one there now has {}): the cluster was recreated at that address",
                self.target.server, now.target_uid
            )),
            _ => Some(
                "an older version of kubectl-capi wrote it without the clusters' identities, so it cannot tell whether the clusters at these addresses are the ones it was written for".into(),
            ),
        }
    }

    pub fn load(path: &Path) -> Result<Journal> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Usage(format!(
                "cannot read the move journal {}: {e}",
                path.display()
            ))
        })?;
        Journal::parse(&text).map_err(|e| {
            Error::Usage(format!(
                "{} is not a kubectl-capi move journal ({e}); pass the right --journal",
                path.display()
            ))
        })
    }

    /// The journal as written to its file and to its copy in the cluster.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("journal serialises")
    }

    /// The journal's JSON as pieces that join into a text [`Journal::parse`] reads back as this
    /// journal: what comes before the entries, each entry (in the order they change: by group,
    /// then UID), and the end. The copy in the cluster is cut only between entries, at places
    /// chosen by the entries' UIDs, so that a save rewrites only the slices whose entries changed
    /// (an entry that grows does not shift every slice after it).
    pub fn to_json_pieces(&mut self) -> impl Iterator<Item = JsonPiece> + '_ {
        // Entries are the last field: the rest is serialised once without them.
        let entries = std::mem::take(&mut self.entries);
        let head = serde_json::to_string(self).expect("journal serialises");
        self.entries = entries;
        let prefix = head
            .strip_suffix("[]}")
            .expect("entries are the journal's last field");
        let mut order: Vec<&Entry> = self.entries.iter().collect();
        order.sort_by(|a, b| (a.group, &a.uid).cmp(&(b.group, &b.uid)));
        let entries = order.into_iter().enumerate().map(|(index, entry)| {
            let json = serde_json::to_string(entry).expect("entry serialises");
            JsonPiece {
                text: if index == 0 { json } else { format!(",{json}") },
                starts_slice: starts_slice(&entry.uid),
            }
        });
        let piece = |text: String| JsonPiece {
            text,
            starts_slice: false,
        };
        std::iter::once(piece(format!("{prefix}[")))
            .chain(entries)
            .chain(std::iter::once(piece("]}".into())))
    }

    /// Where an entry is: entries are sorted by UID.
    fn position(&self, uid: &str) -> Option<usize> {
        self.entries
            .binary_search_by(|e| e.uid.as_str().cmp(uid))
            .ok()
    }

    pub fn entry(&self, uid: &str) -> Option<&Entry> {
        Some(&self.entries[self.position(uid)?])
    }

    /// The short record a finished move leaves: what, between which clusters, when — no
    /// entries.
    pub fn finished_record(&self) -> Journal {
        Journal {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            source: self.source.clone(),
            target: self.target.clone(),
            namespace: self.namespace.clone(),
            clusters: self.clusters.clone(),
            selector: self.selector.clone(),
            stage: self.stage,
            move_id: self.move_id.clone(),
            paused: Vec::new(),
            attempt: self.attempt,
            finished_at: Some(self.finished_at.clone().unwrap_or_else(now)),
            objects: Some(self.objects.unwrap_or(self.entries.len())),
            owners_recorded: self.owners_recorded,
            moved: self.moved.clone(),
            made_namespaces: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// The Clusters this record moved: none unless the move finished (a rolled-back one moved
    /// nothing).
    pub fn moved_clusters(&self) -> Vec<&ObjectRef> {
        if self.stage != Stage::Done {
            return Vec::new();
        }
        self.moved.iter().map(|m| &m.cluster).collect()
    }

    /// How far the move got: its run, its stage, then how many writes it recorded. Of two
    /// records of one move, the one further along is the truth.
    pub fn progress(&self) -> (u32, Stage, usize) {
        let writes = self
            .entries
            .iter()
            .map(|e| {
                usize::from(e.sent)
                    + usize::from(e.created)
                    + usize::from(e.deleted)
                    + usize::from(e.removed)
            })
            .sum();
        (self.attempt, self.stage, writes)
    }

    /// Whether the object with this source UID may be in the target because of this move: its
    /// create answered, or was sent for an object the first preflight found absent there.
    pub fn created_by_this_move(&self, uid: &str) -> bool {
        self.entry(uid)
            .is_some_and(|e| e.created || (!e.preexisting && e.sent))
    }

    /// Records that the creates of `group` may be sent from now on (saved before they are).
    pub fn sending_group(&mut self, group: usize) {
        for entry in self.entries.iter_mut().filter(|e| e.group == group) {
            entry.sent = true;
        }
    }

    pub fn entry_mut(&mut self, uid: &str) -> Option<&mut Entry> {
        let at = self.position(uid)?;
        Some(&mut self.entries[at])
    }
}

/// Now, to the second (RFC 3339), as records give times.
pub use crate::kube::gate::now;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Entry {
    /// The namespace the object is addressed in: empty for a cluster-scoped one.
    pub fn namespace(&self) -> &str {
        if self.namespaced {
            &self.object.namespace
        } else {
            ""
        }
    }
}

/// The API resource of a journal entry.
pub fn entry_resource(entry: &Entry) -> ApiResource {
    let (group, version) = crate::names::group_and_version(&entry.object.api_version);
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, &entry.object.kind),
        &entry.resource,
    )
}

#[cfg(test)]
pub(in crate::mover::journal) mod tests {
    use super::*;
    use crate::mover::journal::local::{FINISHED_RECORDS_KEPT, prune_finished, save_text};

    /// [`sample`] with `count` entries over four groups, each of the sample entry's size.
    pub(in crate::mover::journal) fn with_entries(count: usize) -> Journal {
        let mut journal = sample();
        let entry = journal.entries[0].clone();
        journal.entries = (0..count)
            .map(|n| Entry {
                uid: format!("{:08x}-0000-4000-8000-{n:012x}", n * 7919),
                group: n % 4,
                object: ObjectRef {
                    name: format!("object-{n}"),
                    ..entry.object.clone()
                },
                ..entry.clone()
            })
            .collect();
        journal.sort();
        journal
    }

    #[test]
    fn its_pieces_join_into_the_same_journal_cut_between_entries() {
        let mut journal = with_entries(3000);
        let pieces: Vec<JsonPiece> = journal.to_json_pieces().collect();
        let text: String = pieces.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(Journal::parse(&text).unwrap(), journal);
        let starts = pieces.iter().filter(|p| p.starts_slice).count();
        assert!(
            (3..=40).contains(&starts),
            "about one entry in {ENTRIES_PER_SLICE} begins a slice: {starts}"
        );
        assert!(
            pieces.iter().filter(|p| p.starts_slice).all(|p| p
                .text
                .trim_start_matches(',')
                .starts_with("{\"apiVersion\"")),
            "slices begin at entries"
        );
    }

    pub(in crate::mover::journal) fn sample() -> Journal {
        let object = ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: "ns".into(),
            name: "c-kubeconfig".into(),
        };
        Journal {
            api_version: "kubectl-capi/v1".into(),
            kind: "MoveJournal".into(),
            source: Endpoint {
                server: "https://a".into(),
                context: None,
                kubeconfig: None,
                identity: None,
                cluster: None,
            },
            target: Endpoint {
                server: "https://b".into(),
                context: Some("b".into()),
                kubeconfig: None,
                identity: None,
                cluster: None,
            },
            namespace: Some("ns".into()),
            clusters: vec![],
            selector: None,
            stage: Stage::Creating,
            move_id: "m1".into(),
            paused: vec![],
            attempt: 0,
            finished_at: None,
            objects: None,
            owners_recorded: true,
            moved: Vec::new(),
            made_namespaces: Vec::new(),
            entries: vec![Entry {
                object,
                resource: "secrets".into(),
                namespaced: true,
                uid: "u1".into(),
                group: 1,
                kept_in_source: false,
                target_uid: Some("t1".into()),
                created: true,
                preexisting: false,
                deleted: false,
                sent: true,
                removed: false,
                reused: false,
                owners: vec!["u0".into()],
            }],
        }
    }

    #[test]
    fn round_trips_privately_and_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/er/journal.json");
        let journal = sample();
        save_text(&journal.to_json(), &path).unwrap();
        assert_eq!(Journal::load(&path).unwrap(), journal);
        assert!(!path.with_extension("json.partial").exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(path.parent().unwrap()), 0o700);
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("data"), "names and UIDs only: {text}");
    }

    fn id<'a>(
        target_uid: &'a str,
        namespace: Option<&'a str>,
        clusters: &'a [String],
    ) -> MoveId<'a> {
        MoveId {
            source: "https://a",
            source_uid: "s1",
            target: "https://b",
            target_uid,
            namespace,
            clusters,
            selector: None,
        }
    }

    #[test]
    fn the_same_move_between_the_same_clusters_finds_the_same_file() {
        let (xy, yx) = (["x".into(), "y".into()], ["y".into(), "x".into()]);
        let a = id("t1", Some("ns"), &xy);
        assert_eq!(
            a.file_name(),
            id("t1", Some("ns"), &yx).file_name(),
            "name order does not matter"
        );
        assert_ne!(a.file_name(), id("t1", None, &xy).file_name());
        let recreated = id("t2", Some("ns"), &xy);
        assert_ne!(
            a.file_name(),
            recreated.file_name(),
            "a cluster recreated at the same address has records of its own"
        );
        assert_eq!(a.file_prefixes(), recreated.file_prefixes());
        assert!(a.file_name().starts_with(&a.file_prefixes()[0]));
        assert!(a.legacy_file_name().starts_with(&a.file_prefixes()[1]));
        let elsewhere = MoveId {
            source: "https://localhost",
            ..a
        };
        assert_eq!(
            a.file_name(),
            elsewhere.file_name(),
            "the same clusters through another URL: the same move"
        );
        assert!(a.same_selection(&elsewhere.key()) && a.same_selection(&a.legacy_key()));
        assert!(a.file_name().starts_with("move-ns-") && a.file_name().ends_with(".json"));
    }

    #[test]
    fn a_journal_of_other_clusters_or_of_none_is_foreign() {
        let mut journal = sample();
        let none: [String; 0] = [];
        let now = id("t1", Some("ns"), &none);
        let reason = journal.foreign_to(&now).unwrap();
        assert!(reason.contains("older version"), "{reason}");
        journal.source.identity = Some("s1".into());
        journal.target.identity = Some("t1".into());
        assert_eq!(journal.foreign_to(&now), None);
        let reason = journal.foreign_to(&id("t2", Some("ns"), &none)).unwrap();
        assert!(
            reason.contains(
                "another cluster at https://b (kube-system UID t1; the one there now has t2)"
            ),
            "{reason}"
        );
    }

    #[test]
    fn finished_records_are_pruned_after_their_time_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let mut finished = sample();
        finished.stage = Stage::Done;
        let record = finished.finished_record();
        assert!(record.entries.is_empty() && record.objects == Some(1));
        assert!(
            record
                .finished_at
                .as_deref()
                .is_some_and(|t| t.ends_with('Z'))
        );
        let old = std::time::SystemTime::now() - FINISHED_RECORDS_KEPT * 2;
        let files = [
            ("move-a.json", &record, Some(old)),
            ("move-b.json", &sample(), Some(old)),
            ("move-c.json", &record, None),
            ("other.json", &record, Some(old)),
        ];
        for (name, journal, modified) in files {
            let path = dir.path().join(name);
            save_text(&journal.to_json(), &path).unwrap();
            if let Some(time) = modified {
                std::fs::File::options()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_modified(time)
                    .unwrap();
            }
        }
        prune_finished(dir.path());
        let left: Vec<bool> = files
            .iter()
            .map(|(name, ..)| dir.path().join(name).exists())
            .collect();
        assert_eq!(
            left,
            [false, true, true, true],
            "only the old record of a finished move goes"
        );
    }

    #[test]
    fn a_broken_journal_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.json");
        std::fs::write(&path, "{").unwrap();
        let message = Journal::load(&path).unwrap_err().to_string();
        assert!(
            message.contains("not a kubectl-capi move journal"),
            "{message}"
        );
    }
}
