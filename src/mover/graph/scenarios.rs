//! clusterctl's move scenarios (cmd/clusterctl/client/cluster/mover_test.go), rebuilt with the
//! sandbox's fixture builder (its objects without a server: UIDs are `Kind ns/name`); expected
//! groups follow from clusterctl's rules (longest path over owners and soft owners).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use capi_sandbox::fixture::{CONTROL_PLANE, CORE, Fixture, INFRA};
use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::mover::graph::object_graph::{Graph, TypeInfo};
use crate::mover::graph::plan::{MovePlan, plan};

const ADDONS: &str = "addons.cluster.x-k8s.io/v1beta2";
const EXTERNAL: &str = "external.cluster.x-k8s.io/v1beta2";
const MOVE_LABEL: &str = "clusterctl.cluster.x-k8s.io/move";

/// The move graph of the fixture's objects, each typed from the fixture's CRDs (their scope and
/// move labels) or, without one, as a namespaced kind of its group.
fn graph(fixture: &Fixture, moved_namespace: Option<&str>) -> Graph {
    let objects: Vec<(Arc<DynamicObject>, TypeInfo)> = fixture
        .resolved()
        .into_iter()
        .map(|o| {
            let api_version = o["apiVersion"].as_str().unwrap();
            let group = crate::names::group_of(api_version);
            let kind = o["kind"].as_str().unwrap();
            let crd = fixture
                .crds
                .iter()
                .find(|c| c["spec"]["names"]["kind"] == kind);
            let info = match crd {
                _ if group.is_empty() => TypeInfo::core(kind),
                Some(crd) => {
                    let labels = serde_json::from_value(crd["metadata"]["labels"].clone()).unwrap();
                    TypeInfo::from_crd(group, kind, crd["spec"]["scope"] == "Namespaced", &labels)
                }
                None => TypeInfo::from_crd(group, kind, true, &BTreeMap::new()),
            };
            (Arc::new(serde_json::from_value(o).unwrap()), info)
        })
        .collect();
    Graph::build(&objects, moved_namespace)
}

fn plan_of(fixture: &Fixture, moved_namespace: Option<&str>, selected: &[&str]) -> MovePlan {
    let selected: BTreeSet<String> = selected.iter().map(|s| s.to_string()).collect();
    plan(graph(fixture, moved_namespace), &selected)
}

/// Sets a Cluster's topology to use a ClusterClass.
fn use_class(fixture: &mut Fixture, cluster: &str, class_ref: Value) {
    let (object, _) = fixture
        .objects
        .iter_mut()
        .find(|(o, _)| o["kind"] == "Cluster" && o["metadata"]["name"] == cluster)
        .unwrap();
    object["spec"]["topology"] = json!({ "classRef": class_ref });
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
    let mut w = Fixture::default();
    w.cluster("ns1", "foo", false);
    let p = plan_of(&w, None, &[]);
    assert_eq!(
        groups(&p),
        vec![
            sorted(&["Cluster ns1/foo"]),
            sorted(&[
                "DockerCluster ns1/foo",
                "Secret ns1/foo-ca",
                "Secret ns1/foo-kubeconfig"
            ]),
        ]
    );
    assert!(p.excluded.is_empty() && p.kept_in_source.is_empty());
}

#[test]
fn cloud_config_secret_with_the_move_label() {
    let mut w = Fixture::default();
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
    let p = plan_of(&w, None, &[]);
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
    let mut w = Fixture::default();
    w.cluster("ns1", "foo", false);
    w.machine_deployment("ns1", "foo", "md1", "ms1");
    w.machine("ns1", "foo", "m1", ("MachineSet", "ms1", true), true);
    let p = plan_of(&w, None, &[]);
    assert_eq!(
        groups(&p),
        vec![
            sorted(&["Cluster ns1/foo"]),
            sorted(&[
                "DockerCluster ns1/foo",
                "Secret ns1/foo-ca",
                "Secret ns1/foo-kubeconfig",
                "MachineDeployment ns1/md1",
                "DockerMachineTemplate ns1/md1",
                "KubeadmConfigTemplate ns1/md1"
            ]),
            sorted(&["MachineSet ns1/ms1"]),
            sorted(&["Machine ns1/m1"]),
            sorted(&["DockerMachine ns1/m1", "KubeadmConfig ns1/m1"]),
            sorted(&["Secret ns1/m1"]),
        ]
    );
}

#[test]
fn control_plane() {
    let mut w = Fixture::default();
    w.cluster("ns1", "foo", true);
    w.machine(
        "ns1",
        "foo",
        "m1",
        ("KubeadmControlPlane", "foo", true),
        true,
    );
    let p = plan_of(&w, None, &[]);
    assert_eq!(
        groups(&p),
        vec![
            sorted(&["Cluster ns1/foo"]),
            sorted(&[
                "DockerCluster ns1/foo",
                "Secret ns1/foo-ca",
                "KubeadmControlPlane ns1/foo",
                "DockerMachineTemplate ns1/foo-cp"
            ]),
            sorted(&[
                "Secret ns1/foo-kubeconfig",
                "Secret ns1/foo-sa",
                "Machine ns1/m1"
            ]),
            sorted(&["DockerMachine ns1/m1", "KubeadmConfig ns1/m1"]),
            sorted(&["Secret ns1/m1"]),
        ]
    );
}

#[test]
fn machine_pool() {
    let mut w = Fixture::default();
    w.cluster("ns1", "foo", false);
    w.add(
        CORE,
        "MachinePool",
        "ns1",
        "mp1",
        &[("Cluster", "foo", false)],
        json!({}),
    );
    w.templates("ns1", "foo", "mp1", true);
    let p = plan_of(&w, None, &[]);
    assert_eq!(groups(&p)[1].len(), 6);
    assert!(groups(&p)[1].contains(&"MachinePool ns1/mp1".to_string()));
}

#[test]
fn two_clusters_and_a_cluster_resource_set() {
    let mut w = Fixture::default();
    w.cluster("ns1", "foo", false);
    w.cluster("ns1", "bar", false);
    w.add(ADDONS, "ClusterResourceSet", "ns1", "crs1", &[], json!({}));
    w.add(
        "v1",
        "Secret",
        "ns1",
        "resource-s1",
        &[("ClusterResourceSet", "crs1", false)],
        json!({}),
    );
    w.add(
        "v1",
        "ConfigMap",
        "ns1",
        "resource-c1",
        &[("ClusterResourceSet", "crs1", false)],
        json!({}),
    );
    w.add(
        ADDONS,
        "ClusterResourceSetBinding",
        "ns1",
        "foo",
        &[("ClusterResourceSet", "crs1", false)],
        json!({"spec": {"clusterName": "foo"}}),
    );
    let p = plan_of(&w, None, &[]);
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
    let foo = plan_of(&w, None, &["Cluster ns1/foo"]);
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
    let mut w = Fixture::default();
    w.add(CORE, "ClusterClass", "ns1", "class1", &[], json!({}));
    w.add(
        INFRA,
        "DockerClusterTemplate",
        "ns1",
        "class1",
        &[("ClusterClass", "class1", false)],
        json!({}),
    );
    w.add(
        CONTROL_PLANE,
        "KubeadmControlPlaneTemplate",
        "ns1",
        "class1",
        &[("ClusterClass", "class1", false)],
        json!({}),
    );
    w.cluster("ns1", "foo", false);
    w.cluster("ns1", "bar", false);
    for c in ["foo", "bar"] {
        use_class(&mut w, c, json!({"name": "class1"}));
    }
    let p = plan_of(&w, Some("ns1"), &[]);
    assert_eq!(groups(&p)[0], sorted(&["ClusterClass ns1/class1"]));
    assert_eq!(
        groups(&p)[1],
        sorted(&[
            "Cluster ns1/foo",
            "Cluster ns1/bar",
            "DockerClusterTemplate ns1/class1",
            "KubeadmControlPlaneTemplate ns1/class1"
        ])
    );
    assert!(p.kept_in_source.is_empty());

    // Moving only foo copies the class (bar still uses it) and keeps it in the source.
    let foo = plan_of(&w, Some("ns1"), &["Cluster ns1/foo"]);
    assert!(foo.kept_in_source.contains("ClusterClass ns1/class1"));
    assert!(
        foo.kept_in_source
            .contains("DockerClusterTemplate ns1/class1")
    );
    assert!(!foo.kept_in_source.contains("Cluster ns1/foo"));

    // A class only a Cluster that stays uses stays with it, unremarked — never reported as
    // "not linked to any Cluster".
    w.add(CORE, "ClusterClass", "ns1", "class2", &[], json!({}));
    use_class(&mut w, "bar", json!({"name": "class2"}));
    let foo = plan_of(&w, Some("ns1"), &["Cluster ns1/foo"]);
    assert!(
        !foo.excluded.iter().any(|e| e.object.name == "class2"),
        "{:?}",
        foo.excluded
    );
    assert!(
        !groups(&foo)
            .concat()
            .contains(&"ClusterClass ns1/class2".to_string())
    );

    // A class in another namespace is copied but never deleted (clusterctl ≥ 1.10).
    let mut cross = Fixture::default();
    cross.add(CORE, "ClusterClass", "classes", "shared", &[], json!({}));
    cross.add(
        INFRA,
        "DockerClusterTemplate",
        "classes",
        "shared",
        &[("ClusterClass", "shared", false)],
        json!({}),
    );
    cross.cluster("ns1", "foo", false);
    use_class(
        &mut cross,
        "foo",
        json!({"name": "shared", "namespace": "classes"}),
    );
    let p = plan_of(&cross, Some("ns1"), &[]);
    assert!(
        p.kept_in_source.contains("ClusterClass classes/shared")
            && p.kept_in_source
                .contains("DockerClusterTemplate classes/shared")
    );
    assert_eq!(
        groups(&p)[1],
        sorted(&["Cluster ns1/foo", "DockerClusterTemplate classes/shared"])
    );
}

#[test]
fn external_objects_and_a_global_identity() {
    let mut w = Fixture::default();
    w.cluster("ns1", "foo", false)
        .crd(
            "external.cluster.x-k8s.io",
            "GenericExternalObject",
            true,
            MOVE_LABEL,
        )
        .crd(
            "external.cluster.x-k8s.io",
            "GenericClusterExternalObject",
            false,
            MOVE_LABEL,
        )
        .add(
            EXTERNAL,
            "GenericExternalObject",
            "ns1",
            "external1",
            &[],
            json!({}),
        )
        .add(
            EXTERNAL,
            "GenericClusterExternalObject",
            "",
            "externalcluster1",
            &[],
            json!({}),
        )
        // Its credentials Secret is namespaced; its owner reference names no namespace.
        .global_identity(json!({}));
    let p = plan_of(&w, None, &[]);
    assert!(groups(&p)[0].contains(&"GenericExternalObject ns1/external1".to_string()));
    assert!(groups(&p)[0].contains(&"GenericClusterExternalObject /externalcluster1".to_string()));
    assert!(groups(&p)[0].contains(&"DockerClusterIdentity /identity1".to_string()));
    assert!(groups(&p)[1].contains(&"Secret capd-system/identity1-credentials".to_string()));
    for global in [
        "GenericClusterExternalObject /externalcluster1",
        "DockerClusterIdentity /identity1",
        "Secret capd-system/identity1-credentials",
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
    let mut w = Fixture::default();
    w.cluster("ns1", "foo", false);
    w.add(
        CORE,
        "Machine",
        "ns1",
        "orphan",
        &[("MachineSet", "gone", true)],
        json!({}),
    );
    w.add(
        INFRA,
        "DockerMachine",
        "ns1",
        "lost",
        &[("Cluster", "foo", false), ("Machine", "missing", true)],
        json!({}),
    );
    let p = plan_of(&w, None, &[]);
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
    fn walk(node: &crate::mover::graph::plan::TreeNode, depth: usize, out: &mut Vec<String>) {
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
    let mut w = Fixture::default();
    w.add(CORE, "ClusterClass", "classes", "shared", &[], json!({}));
    w.cluster("ns1", "foo", true);
    use_class(
        &mut w,
        "foo",
        json!({"name": "shared", "namespace": "classes"}),
    );
    w.machine(
        "ns1",
        "foo",
        "m1",
        ("KubeadmControlPlane", "foo", true),
        true,
    );
    let p = plan_of(&w, Some("ns1"), &[]);
    assert_eq!(
        tree_lines(&p),
        [
            // The Cluster is a root although its class soft-owns it; the class is a shared root.
            // Children are ordered by kind, then name.
            "Cluster ns1/foo",
            "  DockerCluster ns1/foo",
            "  DockerMachineTemplate ns1/foo-cp",
            "  KubeadmControlPlane ns1/foo",
            "    Machine ns1/m1",
            "      DockerMachine ns1/m1",
            "      KubeadmConfig ns1/m1",
            "        Secret ns1/m1",
            "    Secret ns1/foo-kubeconfig",
            "    Secret ns1/foo-sa",
            "  Secret ns1/foo-ca",
            "ClusterClass classes/shared (kept)",
        ]
    );
    assert_eq!(tree_lines(&p).len(), p.scheduled.len(), "every object once");
}

/// Runs a schedule to the end, finishing what is ready in the order it became ready.
fn drain(mut schedule: crate::mover::graph::schedule::Schedule) -> Vec<String> {
    let mut order = Vec::new();
    loop {
        let ready = schedule.take_ready();
        if ready.is_empty() {
            break;
        }
        for uid in ready {
            schedule.done(&uid);
            order.push(uid);
        }
    }
    assert!(
        schedule.check_finished("draining").is_ok(),
        "nothing is left waiting"
    );
    order
}

#[test]
fn objects_wait_for_their_owners_only_not_for_a_whole_group() {
    use crate::mover::graph::schedule::{Schedule, owners_in_plan};
    let mut w = Fixture::default();
    w.cluster("ns1", "foo", true);
    w.machine(
        "ns1",
        "foo",
        "m1",
        ("KubeadmControlPlane", "foo", true),
        true,
    );
    w.cluster("ns1", "bar", false);
    let p = plan_of(&w, None, &[]);
    let owners = |uid: &str| owners_in_plan(&p, uid);
    let creates = drain(Schedule::creates(&p));
    assert_eq!(
        creates.iter().collect::<BTreeSet<_>>(),
        p.scheduled.iter().collect::<BTreeSet<_>>(),
        "every object once"
    );
    let at = |order: &[String], uid: &str| order.iter().position(|u| u == uid).unwrap();
    for uid in &creates {
        for owner in owners(uid) {
            assert!(
                at(&creates, &owner) < at(&creates, uid),
                "{owner} before {uid}"
            );
        }
    }
    let deletes = drain(Schedule::deletes(
        p.groups
            .iter()
            .rev()
            .flatten()
            .map(|uid| (uid.clone(), owners(uid))),
    ));
    for uid in &deletes {
        for owner in owners(uid) {
            assert!(
                at(&deletes, uid) < at(&deletes, &owner),
                "{uid} before its owner {owner}"
            );
        }
    }
    // No barrier: the first wave is every object without a moved owner, and the Machine's
    // bootstrap Secret waits only for its own chain.
    let mut schedule = Schedule::creates(&p);
    let first = schedule.take_ready();
    assert!(
        first.contains(&"Cluster ns1/foo".to_string())
            && first.contains(&"Cluster ns1/bar".to_string())
    );
    assert!(!first.contains(&"DockerCluster ns1/foo".to_string()));
    schedule.done("Cluster ns1/foo");
    let next = schedule.take_ready();
    assert!(
        next.contains(&"DockerCluster ns1/foo".to_string()),
        "ready once its own Cluster is, whatever bar's state: {next:?}"
    );
    assert!(
        !next
            .iter()
            .any(|u| u.ends_with("/bar") || u.contains("bar-")),
        "{next:?}"
    );
}
