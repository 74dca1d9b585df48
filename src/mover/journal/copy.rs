//! The journal's copy in the source cluster, for a resume from another machine: ConfigMaps
//! `kubectl-capi-move-<key>-<n>` in the moved namespace (`default` for `-A`, or when it does not
//! exist), each holding a slice
//! of the journal well below the 1 MiB object limit. Unowned and unlabelled for move, they never
//! move themselves; they are removed when the move is done or rolled back.

use std::hash::{DefaultHasher, Hash, Hasher};

use futures::{StreamExt, stream};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::error::Result;
use crate::kube::Cluster;
use crate::mover::addressing::only_uid;
use crate::mover::journal::document::Journal;

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
    format!("kubectl-capi-move-{key}-{shard}")
}

/// The journal's JSON in slices (on character boundaries).
pub fn shards(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = rest.len().min(SHARD_SIZE);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (head, tail) = rest.split_at(end);
        out.push(head);
        rest = tail;
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

/// Writes the slices of `text` (a journal's [`Journal::to_json`]) that changed since
/// `previous` (all of them when it is `None`), in
/// parallel (server-side apply, so a slice is created or replaced in one request), and
/// removes slices left from a longer earlier version: those beyond `previous` if known (the
/// last save of this process), else those a listing finds. Returns what it wrote.
pub async fn save(
    cluster: &Cluster,
    namespace: &str,
    key: &str,
    text: &str,
    (previous, concurrency): (Option<&Written>, usize),
) -> Result<Written> {
    let api = configmaps(cluster, namespace);
    let slices = shards(text);
    let fingerprints: Vec<u64> = slices.iter().map(|s| fingerprint(s)).collect();
    let unchanged = |index: usize| {
        previous
            .and_then(|p| p.get(index))
            .filter(|(f, ..)| *f == fingerprints[index])
            .map(|(_, uid, version)| (uid.clone(), version.clone()))
    };
    let written_at = |index: usize| previous.and_then(|p| p.get(index)).map(|w| w.2.clone());
    let answers: Vec<Result<(usize, (String, String))>> = stream::iter(
        slices
            .iter()
            .enumerate()
            .filter(|(index, _)| unchanged(*index).is_none())
            .map(|(index, slice)| {
                let api = &api;
                let written_at = written_at(index);
                async move {
                    let mut body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name(key, index), "namespace": namespace,
                            "labels": {LABEL: key, SHARD_LABEL: index.to_string()}},
                        "data": {"journal": slice}});
                    if let Some(version) = written_at.filter(|v| !v.is_empty()) {
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
            }),
    )
    .buffer_unordered(concurrency.max(1))
    .collect()
    .await;
    let mut uids: Vec<Option<(String, String)>> = (0..slices.len()).map(unchanged).collect();
    for answer in answers {
        let (index, written) = answer?;
        uids[index] = Some(written);
    }
    let written: Written = fingerprints
        .into_iter()
        .zip(uids)
        .map(|(f, w)| {
            let (uid, version) = w.unwrap_or_default();
            (f, uid, version)
        })
        .collect();
    // Slices left from a longer earlier version, each deleted by its UID.
    let stale: Vec<(String, String)> = match previous {
        Some(previous) => (slices.len()..previous.len())
            .map(|n| (name(key, n), previous[n].1.clone()))
            .collect(),
        None => list_slices(cluster, &api, key)
            .await?
            .iter()
            .filter(|c| shard_of(c).is_some_and(|n| n >= slices.len()))
            .filter_map(|c| Some((c.metadata.name.clone()?, c.metadata.uid.clone()?)))
            .collect(),
    };
    for (stale, uid) in stale {
        let _ = api.delete(&stale, &only_uid(&uid)).await;
    }
    Ok(written)
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

/// Reads the copy back, if there is a complete one.
pub async fn load(cluster: &Cluster, namespace: &str, key: &str) -> Result<Option<Journal>> {
    let mut found = list_slices(cluster, &configmaps(cluster, namespace), key).await?;
    found.sort_by_key(|c| shard_of(c).unwrap_or(usize::MAX));
    let text: String = found
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

    #[test]
    fn slices_stay_under_the_limit_and_join_back() {
        let text = "é".repeat(SHARD_SIZE); // two bytes each: boundaries matter
        let slices = shards(&text);
        assert!(slices.iter().all(|s| s.len() <= SHARD_SIZE));
        assert_eq!(slices.concat(), text);
        assert_eq!(slices.len(), 2);
        assert!(shards("").is_empty());
    }

    /// A holder that was overtaken can never overwrite the journal's copy the command that
    /// overtook it wrote: each save of a slice is conditional on the resourceVersion it last
    /// wrote.
    #[tokio::test]
    async fn a_save_over_a_copy_someone_else_wrote_since_is_refused() {
        let server = capi_sandbox::ApiServer::new(capi_sandbox::ServerOptions::default());
        let cluster = Cluster::from_client(server.client(), "sandbox");
        let first = save(&cluster, "default", "k", "{\"a\":1}", (None, 1))
            .await
            .unwrap();
        let again = save(&cluster, "default", "k", "{\"a\":2}", (Some(&first), 1))
            .await
            .unwrap();
        assert_ne!(first[0].2, again[0].2, "a new resourceVersion each write");
        // Another command writes the copy (its own save, without this one's versions).
        save(&cluster, "default", "k", "{\"b\":3}", (None, 1))
            .await
            .unwrap();
        let stale = save(&cluster, "default", "k", "{\"a\":4}", (Some(&again), 1)).await;
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
