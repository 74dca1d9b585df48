//! Every label, annotation and group name users may search for, in one place.

pub const CORE_GROUP: &str = "cluster.x-k8s.io";
pub const CONTROL_PLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";
pub const CLUSTERCTL_GROUP: &str = "clusterctl.cluster.x-k8s.io";

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
