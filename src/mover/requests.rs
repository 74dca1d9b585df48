//! How the move addresses objects: their API by type, the parameters of its writes, the field
//! manager it writes as, how many writes run at once, and the destination cluster.

use kube::api::{Api, DeleteParams, DynamicObject, PatchParams, Preconditions};
use kube::core::ApiResource;

use crate::kube::{Catalog, Cluster, FIELD_MANAGER};
use crate::model::ObjectRef;

use super::discover::MoveType;

/// Writes in flight at once within a move group, unless `--concurrency` says otherwise.
pub const DEFAULT_CONCURRENCY: usize = 16;

/// The destination management cluster.
pub struct Destination {
    pub cluster: Cluster,
    pub catalog: Catalog,
}

pub fn type_of<'a>(types: &'a [MoveType], reference: &ObjectRef) -> Option<&'a MoveType> {
    types
        .iter()
        .find(|t| t.info.group == reference.group() && t.info.kind == reference.kind)
}

pub(super) fn api(
    cluster: &Cluster,
    resource: &ApiResource,
    namespace: &str,
) -> Api<DynamicObject> {
    if namespace.is_empty() {
        Api::all_with(cluster.client.clone(), resource)
    } else {
        Api::namespaced_with(cluster.client.clone(), namespace, resource)
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
