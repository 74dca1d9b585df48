//! clusterctl's move scenarios (cmd/clusterctl/client/cluster/mover_test.go), rebuilt with this
//! crate's own fixtures; expected groups follow from clusterctl's rules (longest path over owners
//! and soft owners).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::api::DynamicObject;
use serde_json::{Value, json};

use super::graph::{Graph, TypeInfo};
use super::plan::{MovePlan, plan};

const CORE: &str = "cluster.x-k8s.io/v1beta2";
const INFRA: &str = "infrastructure.cluster.x-k8s.io/v1beta2";
const BOOTSTRAP: &str = "bootstrap.cluster.x-k8s.io/v1beta2";
const CONTROL_PLANE: &str = "controlplane.cluster.x-k8s.io/v1beta2";
const ADDONS: &str = "addons.cluster.x-k8s.io/v1beta2";
const EXTERNAL: &str = "external.cluster.x-k8s.io/v1beta2";

/// Objects with readable UIDs (`Kind ns/name`) and their owner edges.
#[derive(Default)]
struct World {
    objects: Vec<Value>,
}

fn uid(kind: &str, ns: &str, name: &str) -> String {
    format!("{kind} {ns}/{name}")
}

impl World {
    fn add(
        &mut self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
        owners: &[(&str, &str, &str, bool)],
        extra: Value,
    ) -> String {
        let refs: Vec<Value> = owners
            .iter()
            .map(|(av, k, n, controller)| json!({"apiVersion": av, "kind": k, "name": n, "uid": uid(k, ns, n), "controller": controller}))
            .collect();
        let mut object = json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "uid": uid(kind, ns, name), "ownerReferences": refs}});
        if !ns.is_empty() {
            object["metadata"]["namespace"] = json!(ns);
        }
        crate::freeze::plan::merge_into(&mut object, &extra);
        self.objects.push(object);
        uid(kind, ns, name)
    }

    /// NewFakeCluster: Cluster, its infrastructure cluster, `<name>-ca` (soft-owned) and
    /// `<name>-kubeconfig` (owned by the Cluster, or by the control plane when there is one).
    fn cluster(&mut self, ns: &str, name: &str, control_plane: bool) {
        let mut spec = json!({"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "GenericInfrastructureCluster", "name": name}}});
        if control_plane {
            spec["spec"]["controlPlaneRef"] = json!({"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "GenericControlPlane", "name": name});
        }
        self.add(CORE, "Cluster", ns, name, &[], spec);
        self.add(
            INFRA,
            "GenericInfrastructureCluster",
            ns,
            name,
            &[(CORE, "Cluster", name, false)],
            json!({}),
        );
        self.add("v1", "Secret", ns, &format!("{name}-ca"), &[], json!({}));
        if control_plane {
            self.add(
                CONTROL_PLANE,
                "GenericControlPlane",
                ns,
                name,
                &[(CORE, "Cluster", name, true)],
                json!({}),
            );
            self.add(
                INFRA,
                "GenericInfrastructureMachineTemplate",
                ns,
                &format!("{name}-cp"),
                &[(CORE, "Cluster", name, false)],
                json!({}),
            );
            self.add(
                "v1",
                "Secret",
                ns,
                &format!("{name}-kubeconfig"),
                &[(CONTROL_PLANE, "GenericControlPlane", name, true)],
                json!({}),
            );
            self.add(
                "v1",
                "Secret",
                ns,
                &format!("{name}-sa"),
                &[(CONTROL_PLANE, "GenericControlPlane", name, true)],
                json!({}),
            );
        } else {
            self.add(
                "v1",
                "Secret",
                ns,
                &format!("{name}-kubeconfig"),
                &[(CORE, "Cluster", name, false)],
                json!({}),
            );
        }
    }

    /// NewFakeMachine: Machine (owned by `owner`), infrastructure machine and bootstrap config
    /// (owned by the Machine), bootstrap data Secret (owned by the config).
    fn machine(&mut self, ns: &str, name: &str, owner: (&str, &str, &str, bool)) {
        self.add(
            CORE,
            "Machine",
            ns,
            name,
            &[owner],
            json!({"metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "x"}}}),
        );
        self.add(
            INFRA,
            "GenericInfrastructureMachine",
            ns,
            name,
            &[(CORE, "Machine", name, true)],
            json!({}),
        );
        self.add(
            BOOTSTRAP,
            "GenericBootstrapConfig",
            ns,
            name,
            &[(CORE, "Machine", name, true)],
            json!({}),
        );
        self.add(
            "v1",
            "Secret",
            ns,
            name,
            &[(BOOTSTRAP, "GenericBootstrapConfig", name, true)],
            json!({}),
        );
    }

    fn templates(&mut self, ns: &str, cluster: &str, prefix: &str) {
        self.add(
            INFRA,
            "GenericInfrastructureMachineTemplate",
            ns,
            prefix,
            &[(CORE, "Cluster", cluster, false)],
            json!({}),
        );
        self.add(
            BOOTSTRAP,
            "GenericBootstrapConfigTemplate",
            ns,
            prefix,
            &[(CORE, "Cluster", cluster, false)],
            json!({}),
        );
    }

    fn graph(&self, moved_namespace: Option<&str>) -> Graph {
        let objects: Vec<(Arc<DynamicObject>, TypeInfo)> = self
            .objects
            .iter()
            .map(|o| {
                let object: DynamicObject = serde_json::from_value(o.clone()).unwrap();
                let api_version = o["apiVersion"].as_str().unwrap();
                let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
                let kind = o["kind"].as_str().unwrap();
                let info = match (group, kind) {
                    ("", k) => TypeInfo::core(k),
                    (EXT, "GenericExternalObject") if group == EXT => TypeInfo::from_crd(
                        group,
                        kind,
                        true,
                        &labels(&["clusterctl.cluster.x-k8s.io/move"]),
                    ),
                    (EXT, "GenericClusterExternalObject") => TypeInfo::from_crd(
                        group,
                        kind,
                        false,
                        &labels(&["clusterctl.cluster.x-k8s.io/move"]),
                    ),
                    (_, "GenericClusterInfrastructureIdentity") => TypeInfo::from_crd(
                        group,
                        kind,
                        false,
                        &labels(&["clusterctl.cluster.x-k8s.io/move-hierarchy"]),
                    ),
                    _ => TypeInfo::from_crd(group, kind, true, &BTreeMap::new()),
                };
                (Arc::new(object), info)
            })
            .collect();
        Graph::build(&objects, moved_namespace)
    }

    fn plan(&self, moved_namespace: Option<&str>, selected: &[&str]) -> MovePlan {
        let selected: BTreeSet<String> = selected.iter().map(|s| s.to_string()).collect();
        plan(self.graph(moved_namespace), &selected)
    }
}

const EXT: &str = "external.cluster.x-k8s.io";

fn labels(keys: &[&str]) -> BTreeMap<String, String> {
    keys.iter()
        .map(|k| (k.to_string(), String::new()))
        .collect()
}

fn groups(plan: &MovePlan) -> Vec<Vec<String>> {
    plan.groups
        .iter()
        .map(|g| {
            g.iter()
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect()
        })
        .collect()
}

fn sorted(items: &[&str]) -> Vec<String> {
    items
        .iter()
        .map(|s| s.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[test]
fn cluster() {
    let mut w = World::default();
    w.cluster("ns1", "foo", false);
    let p = w.plan(None, &[]);
    assert_eq!(
        groups(&p),
        vec![
            sorted(&["Cluster ns1/foo"]),
            sorted(&[
                "GenericInfrastructureCluster ns1/foo",
                "Secret ns1/foo-ca",
                "Secret ns1/foo-kubeconfig"
            ]),
        ]
    );
    assert!(p.excluded.is_empty() && p.kept_in_source.is_empty());
}

#[test]
fn cloud_config_secret_with_the_move_label() {
    let mut w = World::default();
    w.cluster("ns1", "foo", false);
    w.add(
        "v1",
        "Secret",
        "ns1",
        "foo-cloud-config",
        &[],
        json!({"metadata": {"labels": {"clusterctl.cluster.x-k8s.io/move": ""}}}),
    );
    w.add("v1", "Secret", "ns1", "unrelated", &[], json!({}));
    let p = w.plan(None, &[]);
    assert_eq!(
        groups(&p)[0],
        sorted(&["Cluster ns1/foo", "Secret ns1/foo-cloud-config"])
    );
    assert_eq!(
        p.excluded.len(),
        1,
        "the unlabelled, unowned Secret is listed as excluded"
    );
    assert_eq!(p.excluded[0].object.name, "unrelated");
}

#[test]
fn machines_machine_set_and_deployment() {
    let mut w = World::default();
    w.cluster("ns1", "foo", false);
    w.add(
        CORE,
        "MachineDeployment",
        "ns1",
        "md1",
        &[(CORE, "Cluster", "foo", false)],
        json!({}),
    );
    w.templates("ns1", "foo", "md1");
    w.add(
        CORE,
        "MachineSet",
        "ns1",
        "ms1",
        &[(CORE, "MachineDeployment", "md1", true)],
        json!({}),
    );
    w.machine("ns1", "m1", (CORE, "MachineSet", "ms1", true));
    let p = w.plan(None, &[]);
    assert_eq!(
        groups(&p),
        vec![
            sorted(&["Cluster ns1/foo"]),
            sorted(&[
                "GenericInfrastructureCluster ns1/foo",
                "Secret ns1/foo-ca",
                "Secret ns1/foo-kubeconfig",
                "MachineDeployment ns1/md1",
                "GenericInfrastructureMachineTemplate ns1/md1",
                "GenericBootstrapConfigTemplate ns1/md1"
            ]),
            sorted(&["MachineSet ns1/ms1"]),
            sorted(&["Machine ns1/m1"]),
            sorted(&[
                "GenericInfrastructureMachine ns1/m1",
                "GenericBootstrapConfig ns1/m1"
            ]),
            sorted(&["Secret ns1/m1"]),
        ]
    );
}

#[test]
fn control_plane() {
    let mut w = World::default();
    w.cluster("ns1", "foo", true);
    w.machine(
        "ns1",
        "m1",
        (CONTROL_PLANE, "GenericControlPlane", "foo", true),
    );
    let p = w.plan(None, &[]);
    assert_eq!(
        groups(&p),
        vec![
            sorted(&["Cluster ns1/foo"]),
            sorted(&[
                "GenericInfrastructureCluster ns1/foo",
                "Secret ns1/foo-ca",
                "GenericControlPlane ns1/foo",
                "GenericInfrastructureMachineTemplate ns1/foo-cp"
            ]),
            sorted(&[
                "Secret ns1/foo-kubeconfig",
                "Secret ns1/foo-sa",
                "Machine ns1/m1"
            ]),
            sorted(&[
                "GenericInfrastructureMachine ns1/m1",
                "GenericBootstrapConfig ns1/m1"
            ]),
            sorted(&["Secret ns1/m1"]),
        ]
    );
}

#[test]
fn machine_pool() {
    let mut w = World::default();
    w.cluster("ns1", "foo", false);
    w.add(
        CORE,
        "MachinePool",
        "ns1",
        "mp1",
        &[(CORE, "Cluster", "foo", false)],
        json!({}),
    );
    w.templates("ns1", "foo", "mp1");
    let p = w.plan(None, &[]);
    assert_eq!(groups(&p)[1].len(), 6);
    assert!(groups(&p)[1].contains(&"MachinePool ns1/mp1".to_string()));
}

#[test]
fn two_clusters_and_a_cluster_resource_set() {
    let mut w = World::default();
    w.cluster("ns1", "foo", false);
    w.cluster("ns1", "bar", false);
    w.add(ADDONS, "ClusterResourceSet", "ns1", "crs1", &[], json!({}));
    w.add(
        "v1",
        "Secret",
        "ns1",
        "resource-s1",
        &[(ADDONS, "ClusterResourceSet", "crs1", false)],
        json!({}),
    );
    w.add(
        "v1",
        "ConfigMap",
        "ns1",
        "resource-c1",
        &[(ADDONS, "ClusterResourceSet", "crs1", false)],
        json!({}),
    );
    w.add(
        ADDONS,
        "ClusterResourceSetBinding",
        "ns1",
        "foo",
        &[(ADDONS, "ClusterResourceSet", "crs1", false)],
        json!({"spec": {"clusterName": "foo"}}),
    );
    let p = w.plan(None, &[]);
    assert_eq!(
        groups(&p)[0],
        sorted(&[
            "Cluster ns1/foo",
            "Cluster ns1/bar",
            "ClusterResourceSet ns1/crs1"
        ])
    );
    assert!(
        groups(&p)[1].contains(&"ClusterResourceSetBinding ns1/foo".to_string()),
        "after both the set and the Cluster"
    );
    assert!(groups(&p)[1].contains(&"ConfigMap ns1/resource-c1".to_string()));

    // Only foo: bar stays; the set is shared with nothing that stays, its binding for foo moves.
    let foo = w.plan(None, &["Cluster ns1/foo"]);
    let moved: BTreeSet<String> = foo.groups.iter().flatten().cloned().collect();
    assert!(!moved.contains("Cluster ns1/bar") && !moved.contains("Secret ns1/bar-ca"));
    assert!(
        moved.contains("ClusterResourceSet ns1/crs1")
            && moved.contains("ClusterResourceSetBinding ns1/foo")
    );
    assert!(
        foo.excluded.is_empty(),
        "bar's objects are not excluded, just not selected: {:?}",
        foo.excluded
    );
}

#[test]
fn cluster_classes_shared_and_across_namespaces() {
    let mut w = World::default();
    w.add(CORE, "ClusterClass", "ns1", "class1", &[], json!({}));
    w.add(
        INFRA,
        "GenericInfrastructureClusterTemplate",
        "ns1",
        "class1",
        &[(CORE, "ClusterClass", "class1", false)],
        json!({}),
    );
    w.add(
        CONTROL_PLANE,
        "GenericControlPlaneTemplate",
        "ns1",
        "class1",
        &[(CORE, "ClusterClass", "class1", false)],
        json!({}),
    );
    w.cluster("ns1", "foo", false);
    w.cluster("ns1", "bar", false);
    for c in ["foo", "bar"] {
        w.objects
            .iter_mut()
            .find(|o| o["kind"] == "Cluster" && o["metadata"]["name"] == c)
            .unwrap()["spec"]["topology"] = json!({"classRef": {"name": "class1"}});
    }
    let p = w.plan(Some("ns1"), &[]);
    assert_eq!(groups(&p)[0], sorted(&["ClusterClass ns1/class1"]));
    assert_eq!(
        groups(&p)[1],
        sorted(&[
            "Cluster ns1/foo",
            "Cluster ns1/bar",
            "GenericInfrastructureClusterTemplate ns1/class1",
            "GenericControlPlaneTemplate ns1/class1"
        ])
    );
    assert!(p.kept_in_source.is_empty());

    // Moving only foo copies the class (bar still uses it) and keeps it in the source.
    let foo = w.plan(Some("ns1"), &["Cluster ns1/foo"]);
    assert!(foo.kept_in_source.contains("ClusterClass ns1/class1"));
    assert!(
        foo.kept_in_source
            .contains("GenericInfrastructureClusterTemplate ns1/class1")
    );
    assert!(!foo.kept_in_source.contains("Cluster ns1/foo"));

    // A class in another namespace is copied but never deleted (clusterctl ≥ 1.10).
    let mut cross = World::default();
    cross.add(CORE, "ClusterClass", "classes", "shared", &[], json!({}));
    cross.add(
        INFRA,
        "GenericInfrastructureClusterTemplate",
        "classes",
        "shared",
        &[(CORE, "ClusterClass", "shared", false)],
        json!({}),
    );
    cross.cluster("ns1", "foo", false);
    cross
        .objects
        .iter_mut()
        .find(|o| o["kind"] == "Cluster")
        .unwrap()["spec"]["topology"] =
        json!({"classRef": {"name": "shared", "namespace": "classes"}});
    let p = cross.plan(Some("ns1"), &[]);
    assert!(
        p.kept_in_source.contains("ClusterClass classes/shared")
            && p.kept_in_source
                .contains("GenericInfrastructureClusterTemplate classes/shared")
    );
    assert_eq!(
        groups(&p)[1],
        sorted(&[
            "Cluster ns1/foo",
            "GenericInfrastructureClusterTemplate classes/shared"
        ])
    );
}

#[test]
fn external_objects_and_a_global_identity() {
    let mut w = World::default();
    w.cluster("ns1", "foo", false);
    w.add(
        EXTERNAL,
        "GenericExternalObject",
        "ns1",
        "external1",
        &[],
        json!({}),
    );
    w.add(
        EXTERNAL,
        "GenericClusterExternalObject",
        "",
        "externalcluster1",
        &[],
        json!({}),
    );
    w.add(
        INFRA,
        "GenericClusterInfrastructureIdentity",
        "",
        "infra1-identity",
        &[],
        json!({}),
    );
    w.add(
        "v1",
        "Secret",
        "infra1-system",
        "infra1-identity-credentials",
        &[(
            INFRA,
            "GenericClusterInfrastructureIdentity",
            "infra1-identity",
            false,
        )],
        json!({}),
    );
    // The identity is cluster-scoped: its owner reference from a namespaced Secret names no namespace.
    w.objects.last_mut().unwrap()["metadata"]["ownerReferences"][0]["uid"] =
        json!("GenericClusterInfrastructureIdentity /infra1-identity");
    let p = w.plan(None, &[]);
    assert!(groups(&p)[0].contains(&"GenericExternalObject ns1/external1".to_string()));
    assert!(groups(&p)[0].contains(&"GenericClusterExternalObject /externalcluster1".to_string()));
    assert!(
        groups(&p)[0]
            .contains(&"GenericClusterInfrastructureIdentity /infra1-identity".to_string())
    );
    assert!(
        groups(&p)[1].contains(&"Secret infra1-system/infra1-identity-credentials".to_string())
    );
    for global in [
        "GenericClusterExternalObject /externalcluster1",
        "GenericClusterInfrastructureIdentity /infra1-identity",
        "Secret infra1-system/infra1-identity-credentials",
    ] {
        assert!(
            p.kept_in_source.contains(global),
            "global (hierarchy) objects are copied, never deleted: {global}"
        );
    }
    assert!(
        !p.kept_in_source
            .contains("GenericExternalObject ns1/external1")
    );
}

#[test]
fn dangling_owners_are_excluded_with_the_reason() {
    let mut w = World::default();
    w.cluster("ns1", "foo", false);
    w.add(
        CORE,
        "Machine",
        "ns1",
        "orphan",
        &[(CORE, "MachineSet", "gone", true)],
        json!({}),
    );
    w.add(
        INFRA,
        "GenericInfrastructureMachine",
        "ns1",
        "lost",
        &[
            (CORE, "Cluster", "foo", false),
            (CORE, "Machine", "missing", true),
        ],
        json!({}),
    );
    let p = w.plan(None, &[]);
    let reasons: BTreeMap<String, String> = p
        .excluded
        .iter()
        .map(|e| (e.object.name.clone(), e.reason.clone()))
        .collect();
    assert_eq!(
        reasons["lost"],
        "its owner Machine missing (uid Machine ns1/missing) does not exist"
    );
    assert!(
        reasons["orphan"].starts_with("it is not linked to any Cluster"),
        "{reasons:?}"
    );
}

/// The `-o wide` forest as indented `Kind ns/name` lines.
fn tree_lines(plan: &MovePlan) -> Vec<String> {
    fn walk(node: &super::plan::TreeNode, depth: usize, out: &mut Vec<String>) {
        let r = &node.object;
        let kept = if node.kept_in_source { " (kept)" } else { "" };
        out.push(format!(
            "{}{} {}/{}{kept}",
            "  ".repeat(depth),
            r.kind,
            r.namespace,
            r.name
        ));
        for child in &node.children {
            walk(child, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    for root in plan.tree() {
        walk(&root, 0, &mut out);
    }
    out
}

#[test]
fn the_wide_tree_hangs_every_object_once_under_its_controller() {
    let mut w = World::default();
    w.add(CORE, "ClusterClass", "classes", "shared", &[], json!({}));
    w.cluster("ns1", "foo", true);
    w.objects
        .iter_mut()
        .find(|o| o["kind"] == "Cluster")
        .unwrap()["spec"]["topology"] =
        json!({"classRef": {"name": "shared", "namespace": "classes"}});
    w.machine(
        "ns1",
        "m1",
        (CONTROL_PLANE, "GenericControlPlane", "foo", true),
    );
    let p = w.plan(Some("ns1"), &[]);
    assert_eq!(
        tree_lines(&p),
        [
            // The Cluster is a root although its class soft-owns it; the class is a shared root.
            "Cluster ns1/foo",
            "  GenericControlPlane ns1/foo",
            "    Machine ns1/m1",
            "      GenericBootstrapConfig ns1/m1",
            "        Secret ns1/m1",
            "      GenericInfrastructureMachine ns1/m1",
            "    Secret ns1/foo-kubeconfig",
            "    Secret ns1/foo-sa",
            "  GenericInfrastructureCluster ns1/foo",
            "  GenericInfrastructureMachineTemplate ns1/foo-cp",
            "  Secret ns1/foo-ca",
            "ClusterClass classes/shared (kept)",
        ]
    );
    assert_eq!(tree_lines(&p).len(), p.scheduled.len(), "every object once");
}
