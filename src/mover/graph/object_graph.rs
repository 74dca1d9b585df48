//! clusterctl move's object graph: nodes keyed by UID, ownerReference edges (owners that were not
//! listed become virtual nodes), soft-ownership edges, tenants (the hierarchy roots that reach a
//! node), and the global / global-hierarchy / should-not-delete rules.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use kube::api::DynamicObject;

use crate::model::{ClusterView, ObjectRef, label};
use crate::names::{CORE_GROUP, MOVE_HIERARCHY_LABEL, MOVE_LABEL};

/// What move knows of a kind (from its CRD: labels, scope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    pub group: String,
    pub kind: String,
    pub namespaced: bool,
    /// The CRD is labelled `clusterctl.cluster.x-k8s.io/move` (or forced hierarchy).
    pub force_move: bool,
    /// Cluster, ClusterClass, ClusterResourceSet, or a CRD labelled `.../move-hierarchy`.
    pub force_move_hierarchy: bool,
}

impl TypeInfo {
    /// clusterctl's rules for a CRD with these labels.
    pub fn from_crd(
        group: &str,
        kind: &str,
        namespaced: bool,
        labels: &BTreeMap<String, String>,
    ) -> TypeInfo {
        let hierarchy = matches!(
            (group, kind),
            (CORE_GROUP, crate::names::CLUSTER)
                | (CORE_GROUP, crate::names::CLUSTER_CLASS)
                | (ADDONS_GROUP, "ClusterResourceSet")
        ) || labels.contains_key(MOVE_HIERARCHY_LABEL);
        TypeInfo {
            group: group.to_string(),
            kind: kind.to_string(),
            namespaced,
            force_move: hierarchy || labels.contains_key(MOVE_LABEL),
            force_move_hierarchy: hierarchy,
        }
    }

    /// Secrets and ConfigMaps are always considered, with no flags.
    pub fn core(kind: &str) -> TypeInfo {
        TypeInfo {
            group: String::new(),
            kind: kind.to_string(),
            namespaced: true,
            force_move: false,
            force_move_hierarchy: false,
        }
    }
}

/// Listed objects with the type move knows them by.
pub type TypedObjects = Vec<(Arc<DynamicObject>, TypeInfo)>;

/// The listed objects as a snapshot, indexed by kind, for the evaluators that read one.
pub fn snapshot_of(objects: &[(Arc<DynamicObject>, TypeInfo)]) -> crate::snapshot::Snapshot {
    let mut by_kind: BTreeMap<crate::snapshot::KindKey, Vec<_>> = BTreeMap::new();
    for (object, info) in objects {
        by_kind
            .entry(crate::snapshot::key(&info.group, &info.kind))
            .or_default()
            .push(object.clone());
    }
    crate::snapshot::Snapshot::from_stores(by_kind)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerEdge {
    pub uid: String,
    pub controller: bool,
    pub block_owner_deletion: bool,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub uid: String,
    pub reference: ObjectRef,
    /// The object as listed; `None` for a virtual node (an owner that was referenced but not
    /// listed) and after [`crate::mover::graph::plan::MovePlan::release_objects`].
    pub object: Option<Arc<DynamicObject>>,
    /// The object's content where it was read as text (then `object` holds its metadata):
    /// see [`crate::snapshot::Content::Text`].
    pub content: Option<Box<serde_json::value::RawValue>>,
    /// Listed in the source (false: a virtual node).
    pub listed: bool,
    pub owners: Vec<OwnerEdge>,
    pub soft_owners: BTreeSet<String>,
    pub force_move: bool,
    pub force_move_hierarchy: bool,
    /// Cluster-scoped.
    pub is_global: bool,
    /// Reached from a cluster-scoped hierarchy root.
    pub global_hierarchy: bool,
    /// Copied to the target but kept in the source (shared with what stays).
    pub should_not_delete: bool,
    /// The hierarchy roots that reach this node (their UIDs, sorted): mostly one, so a `Vec`;
    /// a B-tree set allocates a whole node for one element, per object in the graph.
    pub tenants: Vec<String>,
}

impl Node {
    pub fn is_virtual(&self) -> bool {
        !self.listed
    }

    /// clusterctl's move set: a tenant, or forced.
    pub fn moves(&self) -> bool {
        !self.is_virtual() && (!self.tenants.is_empty() || self.force_move)
    }

    /// Deleted from the source after the copy?
    pub fn deleted_from_source(&self) -> bool {
        !(self.is_global || self.global_hierarchy || self.should_not_delete)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub nodes: BTreeMap<String, Node>,
}

/// The secrets Cluster API names after a Cluster (`<cluster>-<suffix>`).
pub const CLUSTER_SECRET_SUFFIXES: &[&str] = &[
    "kubeconfig",
    "ca",
    "etcd",
    "sa",
    "proxy",
    "apiserver-etcd-client",
];

/// Splits `<cluster>-<suffix>` for the known suffixes, including multi-dash ones (clusterctl
/// splits at the last dash and so never matches `apiserver-etcd-client`).
pub fn parse_cluster_secret(name: &str) -> Option<(&str, &str)> {
    CLUSTER_SECRET_SUFFIXES.iter().find_map(|suffix| {
        let cluster = name.strip_suffix(suffix)?.strip_suffix('-')?;
        (!cluster.is_empty()).then_some((cluster, *suffix))
    })
}

use crate::names::{ADDONS_GROUP, group_of};

impl Graph {
    /// Builds the graph of `objects` (each with the TypeInfo of its kind). `moved_namespace` is the
    /// namespace being moved (`None` for all namespaces), for the should-not-delete rules.
    pub fn build(
        objects: &[(Arc<DynamicObject>, TypeInfo)],
        moved_namespace: Option<&str>,
    ) -> Graph {
        let mut graph = Graph::default();
        for (object, info) in objects {
            let uid = object.metadata.uid.clone().unwrap_or_default();
            let mut node = Node {
                uid: uid.clone(),
                reference: ObjectRef::of(object),
                object: Some(object.clone()),
                content: None,
                listed: true,
                owners: Vec::new(),
                soft_owners: BTreeSet::new(),
                force_move: info.force_move || label(object, MOVE_LABEL).is_some(),
                force_move_hierarchy: info.force_move_hierarchy
                    || label(object, MOVE_HIERARCHY_LABEL).is_some(),
                is_global: !info.namespaced,
                global_hierarchy: false,
                should_not_delete: false,
                tenants: Vec::new(),
            };
            node.force_move |= node.force_move_hierarchy;
            for owner in object.metadata.owner_references.iter().flatten() {
                node.owners.push(OwnerEdge {
                    uid: owner.uid.clone(),
                    controller: owner.controller.unwrap_or(false),
                    block_owner_deletion: owner.block_owner_deletion.unwrap_or(false),
                });
            }
            graph.nodes.insert(uid, node);
        }
        // Owners that were not listed become virtual nodes (no namespace known, never moved).
        let mut virtual_nodes = Vec::new();
        for (object, _) in objects {
            for owner in object.metadata.owner_references.iter().flatten() {
                if !graph.nodes.contains_key(&owner.uid) {
                    virtual_nodes.push(Node {
                        uid: owner.uid.clone(),
                        reference: ObjectRef {
                            api_version: owner.api_version.clone(),
                            kind: owner.kind.clone(),
                            namespace: String::new(),
                            name: owner.name.clone(),
                        },
                        object: None,
                        content: None,
                        listed: false,
                        owners: Vec::new(),
                        soft_owners: BTreeSet::new(),
                        force_move: false,
                        force_move_hierarchy: false,
                        is_global: false,
                        global_hierarchy: false,
                        should_not_delete: false,
                        tenants: Vec::new(),
                    });
                }
            }
        }
        for node in virtual_nodes {
            graph.nodes.entry(node.uid.clone()).or_insert(node);
        }
        graph.set_soft_ownership();
        graph.set_tenants();
        if let Some(namespace) = moved_namespace {
            graph.set_should_not_delete(namespace);
        }
        graph
    }

    /// The graph with the content of the objects read as text, each on its node.
    pub fn with_contents(mut self, mut contents: crate::snapshot::Contents) -> Graph {
        for node in self.nodes.values_mut() {
            node.content = contents.remove(&node.uid);
        }
        self
    }

    fn set_soft_ownership(&mut self) {
        // Soft owners are Clusters and ClusterClasses, found by name: one index, not a scan each.
        let soft_owners: HashMap<(&str, &str, &str), &str> = self
            .nodes
            .values()
            .filter(|n| {
                !n.is_virtual()
                    && group_of(&n.reference.api_version) == CORE_GROUP
                    && matches!(
                        n.reference.kind.as_str(),
                        crate::names::CLUSTER | crate::names::CLUSTER_CLASS
                    )
            })
            .map(|n| {
                (
                    (
                        n.reference.kind.as_str(),
                        n.reference.namespace.as_str(),
                        n.reference.name.as_str(),
                    ),
                    n.uid.as_str(),
                )
            })
            .collect();
        let find = |kind: &str, namespace: &str, name: &str| -> Option<String> {
            soft_owners
                .get(&(kind, namespace, name))
                .map(|uid| uid.to_string())
        };
        let mut edges: Vec<(String, String)> = Vec::new();
        for node in self.nodes.values().filter(|n| !n.is_virtual()) {
            let reference = &node.reference;
            let object = node.object.as_ref().expect("real node");
            match (group_of(&reference.api_version), reference.kind.as_str()) {
                ("", "Secret") if node.owners.is_empty() => {
                    if let Some((cluster, _)) = parse_cluster_secret(&reference.name)
                        && let Some(owner) =
                            find(crate::names::CLUSTER, &reference.namespace, cluster)
                    {
                        edges.push((node.uid.clone(), owner));
                    }
                }
                (CORE_GROUP, crate::names::CLUSTER) => {
                    let view = ClusterView::read(object);
                    if let Some((class_ns, class)) = view.topology_class {
                        let class_ns = class_ns.unwrap_or_else(|| reference.namespace.clone());
                        if let Some(owner) = find(crate::names::CLUSTER_CLASS, &class_ns, &class) {
                            edges.push((node.uid.clone(), owner));
                        }
                    }
                }
                (ADDONS_GROUP, "ClusterResourceSetBinding") => {
                    if let Some(cluster) = object.data["spec"]["clusterName"].as_str()
                        && let Some(owner) =
                            find(crate::names::CLUSTER, &reference.namespace, cluster)
                    {
                        edges.push((node.uid.clone(), owner));
                    }
                }
                _ => {}
            }
        }
        for (dependent, owner) in edges {
            if let Some(node) = self.nodes.get_mut(&dependent) {
                node.soft_owners.insert(owner);
            }
        }
    }

    /// Dependents of every node (owner and soft-owner edges reversed).
    fn dependents(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for node in self.nodes.values() {
            for owner in node
                .owners
                .iter()
                .map(|o| &o.uid)
                .chain(node.soft_owners.iter())
            {
                out.entry(owner.clone()).or_default().push(node.uid.clone());
            }
        }
        out
    }

    fn set_tenants(&mut self) {
        let dependents = self.dependents();
        let roots: Vec<(String, bool)> = self
            .nodes
            .values()
            .filter(|n| n.force_move_hierarchy && !n.is_virtual())
            .map(|n| (n.uid.clone(), n.is_global))
            .collect();
        for (root, global) in roots {
            let mut seen = BTreeSet::new();
            let mut queue = VecDeque::from([root.clone()]);
            while let Some(uid) = queue.pop_front() {
                if !seen.insert(uid.clone()) {
                    continue;
                }
                if let Some(node) = self.nodes.get_mut(&uid) {
                    if let Err(at) = node.tenants.binary_search(&root) {
                        node.tenants.insert(at, root.clone());
                    }
                    if global {
                        node.global_hierarchy = true;
                    }
                }
                for dependent in dependents.get(&uid).into_iter().flatten() {
                    queue.push_back(dependent.clone());
                }
            }
        }
    }

    /// Nodes a node owns (hard owner edges), transitively.
    fn owned_closure(&self, root: &str) -> BTreeSet<String> {
        let dependents: BTreeMap<String, Vec<String>> = {
            let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for node in self.nodes.values() {
                for owner in &node.owners {
                    out.entry(owner.uid.clone())
                        .or_default()
                        .push(node.uid.clone());
                }
            }
            out
        };
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::from([root.to_string()]);
        while let Some(uid) = queue.pop_front() {
            if seen.insert(uid.clone()) {
                queue.extend(dependents.get(&uid).into_iter().flatten().cloned());
            }
        }
        seen
    }

    /// ClusterClasses outside the moved namespace, and those in it used by Clusters elsewhere,
    /// are copied but kept in the source, with the templates they own.
    fn set_should_not_delete(&mut self, namespace: &str) {
        let mut keep = BTreeSet::new();
        for node in self.nodes.values().filter(|n| {
            !n.is_virtual()
                && n.reference.kind == crate::names::CLUSTER_CLASS
                && group_of(&n.reference.api_version) == CORE_GROUP
        }) {
            let outside = node.reference.namespace != namespace;
            let used_elsewhere = self.nodes.values().any(|c| {
                c.reference.is_core_cluster()
                    && c.reference.namespace != namespace
                    && c.soft_owners.contains(&node.uid)
            });
            if outside || used_elsewhere {
                keep.extend(self.owned_closure(&node.uid));
            }
        }
        for uid in keep {
            if let Some(node) = self.nodes.get_mut(&uid) {
                node.should_not_delete = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_secret_names_parse_with_multi_dash_suffixes() {
        assert_eq!(
            parse_cluster_secret("my-cluster-kubeconfig"),
            Some(("my-cluster", "kubeconfig"))
        );
        assert_eq!(
            parse_cluster_secret("c1-apiserver-etcd-client"),
            Some(("c1", "apiserver-etcd-client"))
        );
        assert_eq!(parse_cluster_secret("c1-etcd"), Some(("c1", "etcd")));
        assert_eq!(parse_cluster_secret("-ca"), None);
        assert_eq!(parse_cluster_secret("cloud-config"), None);
    }
}
