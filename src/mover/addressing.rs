//! How the move addresses objects: their API by type, the parameters of its writes, the field
//! manager it writes as, how many writes run at once, and the destination cluster.

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::core::ApiResource;
use serde::Deserialize;
use serde_json::Value;

use crate::kube::Cluster;
use crate::model::ObjectRef;
use crate::names::FIELD_MANAGER;

use crate::mover::graph::discover::MoveType;

/// Name → UID of every object of `resource` in `namespace` of `cluster` (all namespaces when
/// empty): metadata-only LIST pages (`PartialObjectMetadataList`), as existence and identity need
/// nothing else. A kind the cluster does not serve has none; any other failure is an error
/// naming the `which` end.
pub async fn uids_by_name(
    cluster: &Cluster,
    resource: &ApiResource,
    namespace: &str,
    which: &str,
) -> crate::error::Result<std::collections::BTreeMap<String, String>> {
    let objects = api(cluster, resource, namespace);
    let mut uids = std::collections::BTreeMap::new();
    let mut params = kube::api::ListParams::default().limit(crate::snapshot::PAGE_SIZE);
    loop {
        let page = match objects.list_metadata(&params).await {
            Ok(page) => page,
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(uids),
            Err(e) => {
                return Err(cluster.api_error(
                    e,
                    &format!(
                        "listing {} in the {which}",
                        crate::snapshot::qualified(resource)
                    ),
                ));
            }
        };
        uids.extend(
            page.items
                .into_iter()
                .filter_map(|o| Some((o.metadata.name?, o.metadata.uid?))),
        );
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(uids),
        }
    }
}

/// Writes in flight at once, unless `--concurrency` says otherwise.
pub const DEFAULT_CONCURRENCY: usize = 16;

pub fn type_of<'a>(types: &'a [MoveType], reference: &ObjectRef) -> Option<&'a MoveType> {
    types
        .iter()
        .find(|t| t.info.group == reference.group() && t.info.kind == reference.kind)
}

pub fn api(cluster: &Cluster, resource: &ApiResource, namespace: &str) -> Api<DynamicObject> {
    if namespace.is_empty() {
        Api::all_with(cluster.client.clone(), resource)
    } else {
        Api::namespaced_with(cluster.client.clone(), namespace, resource)
    }
}

/// What the move reads from a write's answer — the UID and the finalizers, nothing else: parsing
/// the whole object back (a real server's answers carry every field and full managedFields) would
/// cost more than the write itself.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Answer {
    #[serde(default)]
    pub metadata: AnswerMeta,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct AnswerMeta {
    #[serde(default)]
    pub uid: Option<String>,
    #[serde(default)]
    pub finalizers: Option<Vec<String>>,
}

/// The writes of a move to one resource in one namespace (or cluster-wide): each body serialised
/// once, each answer read as an [`Answer`].
pub(super) struct Writes {
    client: kube::Client,
    request: kube::core::Request,
}

impl Writes {
    pub fn new(cluster: &Cluster, resource: &ApiResource, namespace: &str) -> Writes {
        let url = api(cluster, resource, namespace).resource_url().to_string();
        Writes {
            client: cluster.client.clone(),
            request: kube::core::Request::new(url),
        }
    }

    pub async fn create(&self, body: &Value, pp: &PostParams) -> kube::Result<Answer> {
        let bytes = serde_json::to_vec(body).map_err(kube::Error::SerdeError)?;
        self.send(self.request.create(pp, bytes)).await
    }

    pub async fn merge_patch(
        &self,
        name: &str,
        patch: &impl serde::Serialize,
        pp: &PatchParams,
    ) -> kube::Result<Answer> {
        self.send(self.request.patch(name, pp, &Patch::Merge(patch)))
            .await
    }

    pub async fn merge_patch_status(
        &self,
        name: &str,
        patch: &Value,
        pp: &PatchParams,
    ) -> kube::Result<Answer> {
        self.send(
            self.request
                .patch_subresource("status", name, pp, &Patch::Merge(patch)),
        )
        .await
    }

    async fn send(
        &self,
        request: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> kube::Result<Answer> {
        let request = request.map_err(kube::Error::BuildRequest)?;
        self.client.request(request).await
    }

    /// The object while it is still there (Terminating), else a Status: both read as an
    /// [`Answer`] (a Status has no finalizers).
    pub async fn delete(&self, name: &str, dp: &DeleteParams) -> kube::Result<Answer> {
        self.send(self.request.delete(name, dp)).await
    }
}

/// DeleteOptions that delete exactly the object with `uid` (one made anew under its name stays).
pub(super) fn only_uid(uid: &str) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    }
}

pub(super) fn params(dry_run: bool) -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        dry_run,
        ..PatchParams::default()
    }
}

/// The summary's per-kind key: `Kind.group`, or `Kind` for the core group.
pub(super) fn kind_key(kind: &str, group: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}
