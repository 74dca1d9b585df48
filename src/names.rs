//! Every label, annotation and group name users may search for, in one place.

pub const CORE_GROUP: &str = "cluster.x-k8s.io";
/// The kinds of the core group the commands read by name.
pub const CLUSTER: &str = "Cluster";
pub const CLUSTER_CLASS: &str = "ClusterClass";
pub const MACHINE: &str = "Machine";
/// The core kinds that scale and remediate Machines (their roles: `model::kinds`).
pub const MACHINE_DEPLOYMENT: &str = "MachineDeployment";
pub const MACHINE_SET: &str = "MachineSet";
pub const MACHINE_POOL: &str = "MachinePool";
pub const MACHINE_HEALTH_CHECK: &str = "MachineHealthCheck";

/// Whether `kind` of `group` is Cluster API's Cluster (not a provider's kind of that name).
pub fn is_core_cluster(group: &str, kind: &str) -> bool {
    group == CORE_GROUP && kind == CLUSTER
}

/// What the plugin's documents say they are (`-o json|yaml`): the output's API version.
pub const OUTPUT_API_VERSION: &str = "kubectl-capi/v1";
/// The version of the move journal's format (local file and cluster copy); it changes only when
/// an older plugin could no longer read it.
pub const JOURNAL_API_VERSION: &str = "kubectl-capi/v1";
pub const CONTROL_PLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";
pub const INFRASTRUCTURE_GROUP: &str = "infrastructure.cluster.x-k8s.io";
pub const BOOTSTRAP_GROUP: &str = "bootstrap.cluster.x-k8s.io";
pub const CLUSTERCTL_GROUP: &str = "clusterctl.cluster.x-k8s.io";
pub const ADDONS_GROUP: &str = "addons.cluster.x-k8s.io";
pub const IPAM_GROUP: &str = "ipam.cluster.x-k8s.io";
pub const RUNTIME_GROUP: &str = "runtime.cluster.x-k8s.io";

/// The label prefix of Cluster API contract versions on CRDs (`cluster.x-k8s.io/v1beta2: v1beta1_v1beta2`).
pub const CONTRACT_LABEL_PREFIX: &str = "cluster.x-k8s.io/";

/// clusterctl's Provider inventory: one object per installed provider, with its version.
pub const PROVIDER_KIND: &str = "Provider";
pub const PROVIDER_VERSION: &str = "v1alpha3";
pub const PROVIDER_PLURAL: &str = "providers";

/// `cluster.x-k8s.io` and its provider groups (`infrastructure.cluster.x-k8s.io`, …).
pub fn is_cluster_api_group(group: &str) -> bool {
    group == CORE_GROUP || group.ends_with(".cluster.x-k8s.io")
}

/// Every Cluster API group discovery looks at.
pub const CAPI_GROUPS: &[&str] = &[
    CORE_GROUP,
    CONTROL_PLANE_GROUP,
    BOOTSTRAP_GROUP,
    INFRASTRUCTURE_GROUP,
    ADDONS_GROUP,
    IPAM_GROUP,
    RUNTIME_GROUP,
    CLUSTERCTL_GROUP,
];

/// The group of an `apiVersion` (`cluster.x-k8s.io/v1beta2` → `cluster.x-k8s.io`; `v1` → the
/// core group, empty).
pub fn group_of(api_version: &str) -> &str {
    group_and_version(api_version).0
}

/// The group and the version of an `apiVersion`.
pub fn group_and_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// The versions of Cluster API's two dialects: v1beta1 (CAPI ≤ 1.10) and v1beta2 (≥ 1.11).
pub const V1BETA1: &str = "v1beta1";
pub const V1BETA2: &str = "v1beta2";
/// The version of a Cluster API kind to read when its CRD does not say: the newer dialect first.
pub const PREFERRED_VERSIONS: [&str; 2] = [V1BETA2, V1BETA1];
/// Where a v1beta1 object keeps its v1beta2 status (`status.v1beta2`).
pub const V1BETA2_STATUS: &str = V1BETA2;

/// `plural.group`, the way kubectl takes a resource (`clusters.cluster.x-k8s.io`; `secrets` for
/// the core group).
pub fn qualified(plural: &str, group: &str) -> String {
    match group {
        "" => plural.to_string(),
        group => format!("{plural}.{group}"),
    }
}

/// The type of the Secrets Cluster API writes (kubeconfigs, certificates).
pub const CLUSTER_SECRET_TYPE: &str = "cluster.x-k8s.io/secret";

/// Pauses the object that carries it (Cluster API's `IsPaused`).
pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
pub const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
/// Set by providers while an object cannot be paused instantly; move waits for it to go.
pub const BLOCK_MOVE_ANNOTATION: &str = "clusterctl.cluster.x-k8s.io/block-move";
pub const DELETE_FOR_MOVE_ANNOTATION: &str = "clusterctl.cluster.x-k8s.io/delete-for-move";
/// CRDs installed by clusterctl carry this label; move only considers such kinds.
pub const CLUSTERCTL_LABEL: &str = "clusterctl.cluster.x-k8s.io";
pub const MOVE_LABEL: &str = "clusterctl.cluster.x-k8s.io/move";
pub const MOVE_HIERARCHY_LABEL: &str = "clusterctl.cluster.x-k8s.io/move-hierarchy";
pub const AUTOSCALER_MIN_ANNOTATION: &str =
    "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
pub const AUTOSCALER_MAX_ANNOTATION: &str =
    "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
pub const REPLICAS_MANAGED_BY_ANNOTATION: &str = "cluster.x-k8s.io/replicas-managed-by";

/// The marker `kubectl capi pause` puts beside `cluster.x-k8s.io/paused` on every object it
/// freezes: when, by whom and why. `resume` only releases objects that carry it.
pub const FROZEN_BY_ANNOTATION: &str = "kubectl-capi.dev/frozen";

/// The Lease that lets one kubectl-capi command at a time write for a move in a cluster
/// (`kube-system/kubectl-capi`, `coordination.k8s.io/v1`), and the annotation on it that says who
/// holds it (host, process, command, since when).
pub const LEASE_NAMESPACE: &str = "kube-system";
pub const LEASE_NAME: &str = "kubectl-capi";
/// The API group of Leases, which a command needs access to in [`LEASE_NAMESPACE`].
pub const LEASE_GROUP: &str = "coordination.k8s.io";
/// The label every object the plugin makes carries, as Kubernetes recommends.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const LEASE_HOLDER_ANNOTATION: &str = "kubectl-capi.dev/holder";
/// Beside each renewal: when it was sent, in milliseconds on its host's boot clock
/// (`CLOCK_BOOTTIME`), so a taker on that host counts the holder's last writes out on a clock
/// that never steps.
pub const LEASE_RENEWED_ANNOTATION: &str = "kubectl-capi.dev/renewed-since-boot";
/// The header every guarded write carries: the `holderIdentity` of the lease its sender held
/// when it went out, so a server's audit log (and the sandbox's fencing check) can tell which
/// holder made each write.
pub const LEASE_HOLDER_HEADER: &str = "kubectl-capi-lease-holder";

/// The annotation a move sets on every object it creates in the target (its value: the move's
/// own ID) and removes once its journal holds the copy's UID: the proof that an object of that
/// name in the target is this move's copy, not one that appeared meanwhile.
pub const MOVED_BY_ANNOTATION: &str = "kubectl-capi.dev/moved-by";

/// The label on each ConfigMap slice of a move's journal copy in the source; its value is the
/// move's key.
pub const JOURNAL_COPY_LABEL: &str = "kubectl-capi.dev/move-journal";

/// The label on the Secret a `--to-cluster` move keeps its target's kubeconfig in while it runs;
/// its value is the workload Cluster's name.
pub const MOVE_KUBECONFIG_LABEL: &str = "kubectl-capi.dev/move-target-kubeconfig";
/// The slice number of a journal copy's ConfigMap.
pub const JOURNAL_SHARD_LABEL: &str = "kubectl-capi.dev/move-journal-shard";
/// A moved Cluster's verification record (a ConfigMap in the target).
pub const RECORD_LABEL: &str = "kubectl-capi.dev/moved-cluster";
/// The names of what a move leaves in a cluster, each followed by what it is for: a slice of a
/// journal copy (`…-KEY-SHARD`), the kept kubeconfig of a `--to-cluster` target
/// (`…-kubeconfig-CLUSTER`), a verification record (`kubectl-capi-moved-CLUSTER`).
pub const JOURNAL_COPY_PREFIX: &str = "kubectl-capi-move-";
pub const KEPT_KUBECONFIG_PREFIX: &str = "kubectl-capi-move-kubeconfig-";
pub const RECORD_PREFIX: &str = "kubectl-capi-moved-";
/// When the move that left a verification record moved its Cluster.
pub const MOVED_AT_ANNOTATION: &str = "kubectl-capi.dev/moved-at";

/// clusterctl's preflight messages, word for word (with the GroupVersionKind rendered in full
/// where clusterctl prints `"/, Kind="`), so users can search for them.
pub mod clusterctl {
    pub fn infrastructure(gvk: &str, namespace: &str, name: &str) -> String {
        format!(
            "cannot start the move operation while \"{gvk}\" {namespace}/{name} is still provisioning the infrastructure"
        )
    }
    pub fn control_plane_not_initialized(gvk: &str, namespace: &str, name: &str) -> String {
        format!(
            "cannot start the move operation while the control plane for \"{gvk}\" {namespace}/{name} is not yet initialized"
        )
    }
    /// v1beta1 management clusters (clusterctl ≤ 1.10) check `status.controlPlaneReady`.
    pub fn control_plane_not_ready(gvk: &str, namespace: &str, name: &str) -> String {
        format!(
            "cannot start the move operation while the control plane for \"{gvk}\" {namespace}/{name} is not yet ready"
        )
    }
    pub fn node(gvk: &str, namespace: &str, name: &str) -> String {
        format!(
            "cannot start the move operation while \"{gvk}\" {namespace}/{name} is still provisioning the node"
        )
    }
    pub fn paused_clusters(list: &str) -> String {
        format!("cannot start operation while the following Clusters are paused: {list}")
    }
    pub fn paused_cluster_classes(list: &str) -> String {
        format!("cannot start operation while the following ClusterClasses are paused: {list}")
    }
}

/// The field manager every write of the plugin names (servers record it in managedFields).
pub const FIELD_MANAGER: &str = "kubectl-capi";
