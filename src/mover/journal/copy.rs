//! The journal's copy in the source cluster, for a resume from another machine: ConfigMaps
//! `kubectl-capi-move-<key>-<n>` in the moved namespace (`default` for `-A`, or when it does not
//! exist), each holding a slice
//! of the journal well below the 1 MiB object limit. Unowned and unlabelled for move, they never
//! move themselves; they are removed when the move is done or rolled back.

use std::hash::{DefaultHasher, Hash, Hasher};

use futures::{StreamExt, stream};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;
use tokio::sync::Semaphore;

use crate::error::Result;
use crate::kube::Cluster;
use crate::mover::addressing::only_uid;
use crate::mover::journal::document::{Journal, JsonPiece};

use crate::names::JOURNAL_COPY_LABEL as LABEL;
use crate::names::JOURNAL_SHARD_LABEL as SHARD_LABEL;
/// Characters of journal JSON per ConfigMap: a quarter of the 1 MiB limit.
pub const SHARD_SIZE: usize = 256 * 1024;

/// The namespace the copy lives in: the moved one, else (`-A`, or a namespace that does not
/// exist in the source — a move of cluster-scoped objects only) `default`.
pub async fn namespace(cluster: &Cluster, moved: Option<&str>) -> Result<String> {
    let Some(moved) = moved else {
        return Ok("default".into());
    };
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cluster.client.clone());
    let exists = namespaces
        .get_opt(moved)
        .await
        .map_err(|e| cluster.api_error(e, &format!("reading namespace {moved}")))?
        .is_some();
    Ok(if exists { moved } else { "default" }.to_string())
}

fn name(key: &str, shard: usize) -> String {
    format!("{}{key}-{shard}", crate::names::JOURNAL_COPY_PREFIX)
}

/// The journal's pieces (see [`Journal::to_json_pieces`]) gathered into slices of at most
/// [`SHARD_SIZE`], each begun where a piece may begin one once the slice before holds half that
/// (a small journal is one slice, written in one request); a piece longer than that is cut on
/// character boundaries.
pub fn shards(pieces: impl IntoIterator<Item = JsonPiece>) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for piece in pieces {
        if !current.is_empty()
            && ((piece.starts_slice && current.len() >= SHARD_SIZE / 2)
                || current.len() + piece.text.len() > SHARD_SIZE)
        {
            out.push(std::mem::take(&mut current));
        }
        let mut rest = piece.text.as_str();
        while current.len() + rest.len() > SHARD_SIZE {
            let mut end = SHARD_SIZE - current.len();
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            let (head, tail) = rest.split_at(end);
            current.push_str(head);
            out.push(std::mem::take(&mut current));
            rest = tail;
        }
        current.push_str(rest);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Per slice a save wrote, its fingerprint (so the next save skips unchanged ones), the UID of
/// its ConfigMap (so a delete names exactly it) and the resourceVersion it was written at (so
/// the next write of it is conditional on it: a holder that was overtaken can never overwrite
/// the journal of the command that overtook it).
pub type Written = Vec<(u64, String, String)>;

fn fingerprint(slice: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    slice.hash(&mut hasher);
    hasher.finish()
}

/// The key of slice 0's ConfigMap that lists the resourceVersions of the other slices as the
/// save that wrote slice 0 left them: a copy whose slices are not all those (a save cut off
/// halfway) is no complete copy.
const SLICES_KEY: &str = "slices";

/// Writes the `slices` (a journal's [`shards`]) that changed since `previous` (all of them when
/// it is `None`), in parallel (server-side apply, so a slice is created or replaced in one
/// request), then slice 0 with the resourceVersions of all the others; removes slices left from
/// a longer earlier version: those beyond `previous` if known (the last save of this process),
/// else those a listing finds. Returns what it wrote.
pub async fn save(
    cluster: &Cluster,
    namespace: &str,
    key: &str,
    slices: &[String],
    (previous, slots): (Option<&Written>, &Semaphore),
) -> Result<Written> {
    let api = configmaps(cluster, namespace);
    let fingerprints: Vec<u64> = slices.iter().map(|s| fingerprint(s)).collect();
    let unchanged = |index: usize| {
        previous
            .and_then(|p| p.get(index))
            .filter(|(f, ..)| *f == fingerprints[index])
            .map(|(_, uid, version)| (uid.clone(), version.clone()))
    };
    let write = |index: usize, listed: Option<Vec<String>>| {
        let slice = Slice {
            namespace,
            key,
            index,
            text: &slices[index],
            written_at: previous.and_then(|p| p.get(index)).map(|w| w.2.clone()),
            listed,
        };
        write_slice((cluster, &api), slice, slots)
    };
    let answers: Vec<Result<(usize, (String, String))>> = stream::iter(
        (1..slices.len())
            .filter(|index| unchanged(*index).is_none())
            .map(|index| write(index, None)),
    )
    .buffer_unordered(slices.len().max(1))
    .collect()
    .await;
    let mut uids: Vec<Option<(String, String)>> = (0..slices.len()).map(unchanged).collect();
    for answer in answers {
        let (index, written) = answer?;
        uids[index] = Some(written);
    }
    if !slices.is_empty() {
        let listed = uids[1..]
            .iter()
            .map(|w| {
                w.as_ref()
                    .map(|(_, version)| version.clone())
                    .unwrap_or_default()
            })
            .collect();
        let (_, written) = write(0, Some(listed)).await?;
        uids[0] = Some(written);
    }
    let written: Written = fingerprints
        .into_iter()
        .zip(uids)
        .map(|(f, w)| {
            let (uid, version) = w.unwrap_or_default();
            (f, uid, version)
        })
        .collect();
    remove_stale((cluster, &api), key, slices.len(), previous).await?;
    Ok(written)
}

/// One slice of a journal copy to write: its text, the resourceVersion this process last wrote
/// it at (a precondition), and for slice 0 the resourceVersions of all the others.
struct Slice<'a> {
    namespace: &'a str,
    key: &'a str,
    index: usize,
    text: &'a str,
    written_at: Option<String>,
    listed: Option<Vec<String>>,
}

/// Writes `slice` (server-side apply, under one of `slots`): its index, UID and resourceVersion.
async fn write_slice(
    (cluster, api): (&Cluster, &Api<ConfigMap>),
    slice: Slice<'_>,
    slots: &Semaphore,
) -> Result<(usize, (String, String))> {
    let _slot = slots
        .acquire()
        .await
        .expect("the semaphore is never closed");
    let (namespace, key, index) = (slice.namespace, slice.key, slice.index);
    let mut body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name(key, index), "namespace": namespace,
            "labels": {LABEL: key, SHARD_LABEL: index.to_string()}},
        "data": {"journal": slice.text}});
    if let Some(listed) = slice.listed {
        body["data"][SLICES_KEY] = json!(serde_json::to_string(&listed).expect("strings"));
    }
    if let Some(version) = slice.written_at.filter(|v| !v.is_empty()) {
        body["metadata"]["resourceVersion"] = json!(version);
    }
    let written = api
        .patch(
            &name(key, index),
            &PatchParams::apply(crate::names::FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await
        .map_err(|e| {
            cluster.api_error(
                e,
                "writing the move journal to the source cluster (a conflict: another command wrote it since this one did)",
            )
        })?;
    let meta = written.metadata;
    Ok((
        index,
        (
            meta.uid.unwrap_or_default(),
            meta.resource_version.unwrap_or_default(),
        ),
    ))
}

/// Removes slices left from a longer earlier version, each by its UID: those beyond `previous`
/// if known (the last save of this process), else those a listing finds beyond `count`.
async fn remove_stale(
    (cluster, api): (&Cluster, &Api<ConfigMap>),
    key: &str,
    count: usize,
    previous: Option<&Written>,
) -> Result<()> {
    let stale: Vec<(String, String)> = match previous {
        Some(previous) => (count..previous.len())
            .map(|n| (name(key, n), previous[n].1.clone()))
            .collect(),
        None => list_slices(cluster, api, key)
            .await?
            .iter()
            .filter(|c| shard_of(c).is_some_and(|n| n >= count))
            .filter_map(|c| Some((c.metadata.name.clone()?, c.metadata.uid.clone()?)))
            .collect(),
    };
    for (stale, uid) in stale {
        let _ = api.delete(&stale, &only_uid(&uid)).await;
    }
    Ok(())
}

type ConfigMap = k8s_openapi::api::core::v1::ConfigMap;

fn configmaps(cluster: &Cluster, namespace: &str) -> Api<ConfigMap> {
    Api::namespaced(cluster.client.clone(), namespace)
}

/// The copy's slices as they are in the cluster, in no particular order.
async fn list_slices(cluster: &Cluster, api: &Api<ConfigMap>, key: &str) -> Result<Vec<ConfigMap>> {
    Ok(api
        .list(&ListParams::default().labels(&format!("{LABEL}={key}")))
        .await
        .map_err(|e| cluster.api_error(e, "reading the move journal in the source cluster"))?
        .items)
}

fn shard_of(configmap: &ConfigMap) -> Option<usize> {
    configmap
        .metadata
        .labels
        .as_ref()?
        .get(SHARD_LABEL)?
        .parse()
        .ok()
}

/// The slices (sorted) slice 0 was written with, if they are all there as it lists them (slices
/// beyond those are left from a longer earlier version, not yet removed). A copy from before
/// slice 0 listed them is all its slices, complete when their text is a journal.
fn complete(found: &[ConfigMap]) -> Option<&[ConfigMap]> {
    let Some(listed) = found
        .first()
        .filter(|c| shard_of(c) == Some(0))
        .and_then(|c| c.data.as_ref()?.get(SLICES_KEY))
    else {
        return Some(found);
    };
    let listed: Vec<String> = serde_json::from_str(listed).ok()?;
    let slices = found.get(..=listed.len())?;
    slices[1..]
        .iter()
        .zip(&listed)
        .enumerate()
        .all(|(n, (c, version))| {
            shard_of(c) == Some(n + 1) && c.metadata.resource_version.as_ref() == Some(version)
        })
        .then_some(slices)
}

/// Reads the copy back, if there is a complete one.
pub async fn load(cluster: &Cluster, namespace: &str, key: &str) -> Result<Option<Journal>> {
    let mut found = list_slices(cluster, &configmaps(cluster, namespace), key).await?;
    found.sort_by_key(|c| shard_of(c).unwrap_or(usize::MAX));
    let Some(slices) = complete(&found) else {
        return Ok(None);
    };
    let text: String = slices
        .iter()
        .filter_map(|c| c.data.as_ref()?.get("journal").cloned())
        .collect();
    Ok(Journal::parse(&text).ok())
}

/// The unfinished moves whose copies are in these namespaces of `cluster`. A read that fails
/// is an error (a user who may not read ConfigMaps there hears which permission is missing),
/// never "none".
pub async fn unfinished(cluster: &Cluster, namespaces: &[String]) -> Result<Vec<Journal>> {
    let mut found = Vec::new();
    for namespace in namespaces {
        for key in keys(cluster, namespace).await? {
            if let Some(journal) = load(cluster, namespace, &key).await?
                && !journal.stage.finished()
            {
                found.push(journal);
            }
        }
    }
    Ok(found)
}

/// The keys of every move whose copy is in `namespace` of `cluster`.
pub async fn keys(
    cluster: &Cluster,
    namespace: &str,
) -> Result<std::collections::BTreeSet<String>> {
    let listed = configmaps(cluster, namespace)
        .list(&ListParams::default().labels(LABEL))
        .await
        .map_err(|e| match e {
            // A permission missing is a refusal like the others (exit 1), named.
            kube::Error::Api(status) if status.code == 403 => {
                crate::error::Error::Refused(vec![format!(
                    "{} (403 Forbidden): the move journals in namespace {namespace} cannot be read, so it cannot tell which moves are unfinished; grant list on configmaps there",
                    status.message
                )])
            }
            other => {
                cluster.api_error(other, "reading the move journals in the source cluster")
            }
        })?;
    Ok(listed
        .items
        .iter()
        .filter_map(|c| c.metadata.labels.as_ref()?.get(LABEL).cloned())
        .collect())
}

/// Removes the copy (the move is over).
pub async fn remove(cluster: &Cluster, namespace: &str, key: &str) -> Result<()> {
    let api = configmaps(cluster, namespace);
    for configmap in list_slices(cluster, &api, key).await? {
        let (Some(name), Some(uid)) = (configmap.metadata.name, configmap.metadata.uid) else {
            continue;
        };
        let _ = api.delete(&name, &only_uid(&uid)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(text: &str) -> JsonPiece {
        JsonPiece {
            text: text.into(),
            starts_slice: false,
        }
    }

    /// Saves `slices` as the copy of key `k` in `default`, four writes at a time.
    async fn save_slices(
        cluster: &Cluster,
        slices: &[String],
        previous: Option<&Written>,
    ) -> Result<Written> {
        save(
            cluster,
            "default",
            "k",
            slices,
            (previous, &Semaphore::new(4)),
        )
        .await
    }

    #[test]
    fn slices_stay_under_the_limit_and_join_back() {
        let text = "é".repeat(SHARD_SIZE); // two bytes each: boundaries matter
        let slices = shards([whole(&text)]);
        assert!(slices.iter().all(|s| s.len() <= SHARD_SIZE));
        assert_eq!(slices.concat(), text);
        assert_eq!(slices.len(), 2);
        assert!(shards([]).is_empty());
    }

    /// A save after one entry changed rewrites the slice that holds it and slice 0 (which lists
    /// the others), not the whole journal; the copy reads back as the journal.
    #[tokio::test]
    async fn a_save_rewrites_only_the_slices_whose_entries_changed() {
        let server = capi_sandbox::ApiServer::new(capi_sandbox::ServerOptions::default());
        let cluster = Cluster::from_client(server.client(), "sandbox");
        let mut journal = crate::mover::journal::document::tests::with_entries(20_000);
        let first = save_slices(&cluster, &shards(journal.to_json_pieces()), None)
            .await
            .unwrap();
        assert!(first.len() > 20, "{} slices", first.len());
        let uid = journal.entries[12_345].uid.clone();
        journal.entry_mut(&uid).unwrap().deleted = true;
        let again = save_slices(&cluster, &shards(journal.to_json_pieces()), Some(&first))
            .await
            .unwrap();
        let rewritten: Vec<usize> = (0..again.len())
            .filter(|n| first.get(*n).map(|w| &w.2) != Some(&again[*n].2))
            .collect();
        assert_eq!(rewritten.len(), 2, "slice 0 and the entry's: {rewritten:?}");
        assert_eq!(rewritten[0], 0);
        let read = load(&cluster, "default", "k").await.unwrap();
        assert!(read == Some(journal), "the copy reads back as the journal");
    }

    /// A save cut off after some slices but before slice 0 leaves no copy that reads as a
    /// journal: the slices are not those slice 0 lists.
    #[tokio::test]
    async fn a_copy_whose_slices_are_not_those_slice_0_lists_is_no_copy() {
        let server = capi_sandbox::ApiServer::new(capi_sandbox::ServerOptions::default());
        let cluster = Cluster::from_client(server.client(), "sandbox");
        let mut journal = crate::mover::journal::document::tests::with_entries(2_000);
        save_slices(&cluster, &shards(journal.to_json_pieces()), None)
            .await
            .unwrap();
        let read = load(&cluster, "default", "k").await.unwrap();
        assert!(read == Some(journal.clone()), "the copy reads back");
        // The next save wrote the slice of an entry that changed, and was cut off before it
        // got to slice 0.
        let before = shards(journal.to_json_pieces());
        // The last entry of the text (group, then UID): not in slice 0.
        let last = journal.entries.iter().max_by_key(|e| (e.group, &e.uid));
        let uid = last.unwrap().uid.clone();
        journal.entry_mut(&uid).unwrap().deleted = true;
        let after = shards(journal.to_json_pieces());
        let changed = (1..after.len()).find(|n| before[*n] != after[*n]).unwrap();
        configmaps(&cluster, "default")
            .patch(
                &name("k", changed),
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"journal": after[changed].clone()}})),
            )
            .await
            .unwrap();
        let read = load(&cluster, "default", "k").await.unwrap();
        assert!(read.is_none(), "a copy cut off halfway is no copy");
    }

    /// A holder that was overtaken can never overwrite the journal's copy the command that
    /// overtook it wrote: each save of a slice is conditional on the resourceVersion it last
    /// wrote.
    #[tokio::test]
    async fn a_save_over_a_copy_someone_else_wrote_since_is_refused() {
        let server = capi_sandbox::ApiServer::new(capi_sandbox::ServerOptions::default());
        let cluster = Cluster::from_client(server.client(), "sandbox");
        let first = save_slices(&cluster, &["{\"a\":1}".to_string()], None)
            .await
            .unwrap();
        let again = save_slices(&cluster, &["{\"a\":2}".to_string()], Some(&first))
            .await
            .unwrap();
        assert_ne!(first[0].2, again[0].2, "a new resourceVersion each write");
        // Another command writes the copy (its own save, without this one's versions).
        save_slices(&cluster, &["{\"b\":3}".to_string()], None)
            .await
            .unwrap();
        let stale = save_slices(&cluster, &["{\"a\":4}".to_string()], Some(&again)).await;
        assert!(stale.is_err(), "the stale write must fail");
        let kept = load(&cluster, "default", "k").await.unwrap();
        assert!(
            kept.is_none(),
            "not a journal, but the other command's text stays"
        );
        let configmap = server
            .dump()
            .into_iter()
            .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == "kubectl-capi-move-k-0")
            .unwrap();
        assert_eq!(configmap["data"]["journal"], "{\"b\":3}");
    }
}
