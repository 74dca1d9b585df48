//! What every readiness check of one Cluster reads and adds to: the Cluster's objects in the
//! snapshot (`ClusterScope`), and the checks found so far with their next steps (`Checks`).

use kube::api::DynamicObject;

use super::next_steps::NextSteps;
use super::report::{Check, CheckId, CheckStatus};
use crate::model::{ClusterView, ObjectRef};
use crate::snapshot::Snapshot;

/// One Cluster in the snapshot: the objects its checks read.
pub(super) struct ClusterScope<'a> {
    pub(super) snapshot: &'a Snapshot,
    pub(super) namespace: &'a str,
    pub(super) cluster: &'a ClusterView,
    pub(super) cluster_object: &'a DynamicObject,
}

impl<'a> ClusterScope<'a> {
    /// Objects of a kind that belong to this Cluster.
    pub(super) fn of(&self, group: &str, kind: &str) -> Vec<&'a DynamicObject> {
        self.snapshot
            .of_cluster(group, kind, self.namespace, &self.cluster.reference.name)
            .map(|o| o.as_ref())
            .collect()
    }

    /// The control plane object, by `spec.controlPlaneRef`.
    pub(super) fn control_plane(&self) -> Option<&'a DynamicObject> {
        let reference = self.cluster.control_plane_ref.as_ref()?;
        self.snapshot
            .named(
                (&reference.api_group, &reference.kind),
                self.namespace,
                &reference.name,
            )
            .map(|o| o.as_ref())
    }

    /// Every object of the cluster the snapshot holds (for block-move and dangling owners).
    pub(super) fn all_objects(&self) -> Vec<&'a DynamicObject> {
        let mut out: Vec<&DynamicObject> = vec![self.cluster_object];
        for (group, kind) in self.snapshot.kinds() {
            if crate::names::is_core_cluster(group, kind) {
                continue;
            }
            out.extend(self.of(group, kind));
        }
        if let Some(cp) = self.control_plane()
            && !out.iter().any(|o| o.metadata.uid == cp.metadata.uid)
        {
            out.push(cp);
        }
        if let Some(infra) = self.cluster.infrastructure_ref.as_ref() {
            let named =
                self.snapshot
                    .named((&infra.api_group, &infra.kind), self.namespace, &infra.name);
            if let Some(object) = named
                && !out.iter().any(|o| o.metadata.uid == object.metadata.uid)
            {
                out.push(object);
            }
        }
        // And whatever they own, as the move's graph finds it (a Secret without the cluster-name
        // label is moved with the Cluster that owns it, so its owners are checked too).
        // Round by round through the snapshot's owner index (never a scan of every object per
        // Cluster), each round in the snapshot's order.
        let mut uids: std::collections::HashSet<String> =
            out.iter().filter_map(|o| o.metadata.uid.clone()).collect();
        let mut round: Vec<String> = uids.iter().cloned().collect();
        loop {
            let mut owned: Vec<&'a crate::snapshot::index::Owned> = round
                .iter()
                .flat_map(|uid| self.snapshot.owned_by(uid))
                .filter(|o| o.object.metadata.namespace.as_deref() == Some(self.namespace))
                .filter(|o| {
                    o.object
                        .metadata
                        .uid
                        .as_ref()
                        .is_some_and(|u| !uids.contains(u))
                })
                .collect();
            owned.sort_by(|a, b| (&a.kind, a.sequence).cmp(&(&b.kind, b.sequence)));
            owned.dedup_by(|a, b| std::sync::Arc::ptr_eq(&a.object, &b.object));
            if owned.is_empty() {
                return out;
            }
            round = owned
                .iter()
                .filter_map(|o| o.object.metadata.uid.clone())
                .collect();
            uids.extend(round.iter().cloned());
            out.extend(owned.iter().map(|o| o.object.as_ref()));
        }
    }
}

/// The checks of one Cluster, as they are found.
pub(super) struct Checks {
    pub(super) list: Vec<Check>,
    /// The next steps the checks suggest, for this Cluster.
    pub(super) next: NextSteps,
}

impl Checks {
    pub(super) fn push(
        &mut self,
        check: CheckId,
        status: CheckStatus,
        object: &ObjectRef,
        message: String,
    ) {
        self.list.push(Check {
            check,
            status,
            object: object.clone(),
            message,
        });
    }
}
