//! Namespace moves where no Cluster is: clusterctl moves the whole graph of the scope —
//! ClusterClasses with their templates, labelled objects, global objects and identities — and
//! refuses only where it refuses. The expected groups follow clusterctl's rules (a root with
//! `move-hierarchy` or a ClusterClass takes what it owns; a cluster-scoped root makes its whole
//! hierarchy global: copied, never deleted), not the plugin's output.

use serde_json::json;

use crate::move_world::{
    CLUSTER_FOO, CONTROL_PLANE, CORE, Fixture, INFRA, MOVE_HIERARCHY_LABEL, MOVE_LABEL, MOVE_NS1,
    World, group,
};

/// A kind's CRD as clusterctl init labels it, without a move label of its own (the objects
/// carry theirs).
const NO_MOVE_LABEL: &str = "cluster.x-k8s.io/provider";

fn class_with_templates(f: &mut Fixture, annotations: serde_json::Value) {
    f.add(CORE, "ClusterClass", "ns1", "class1", &[], json!({
        "metadata": {"annotations": annotations},
        "spec": {
            "infrastructure": {"templateRef": {"apiVersion": INFRA, "kind": "DockerClusterTemplate", "name": "class1"}},
            "controlPlane": {"templateRef": {"apiVersion": CONTROL_PLANE, "kind": "KubeadmControlPlaneTemplate", "name": "class1"}}}}))
        .add(INFRA, "DockerClusterTemplate", "ns1", "class1", &[("ClusterClass", "class1", false)], json!({}))
        .add(
            CONTROL_PLANE,
            "KubeadmControlPlaneTemplate",
            "ns1",
            "class1",
            &[("ClusterClass", "class1", false)],
            json!({}),
        );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_class_and_its_templates_alone() {
    let mut f = Fixture::default();
    class_with_templates(&mut f, json!({}));
    let w = World::start(&f).await;
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    assert_eq!(
        groups,
        [
            group(&["ClusterClass ns1/class1"]),
            group(&[
                "DockerClusterTemplate ns1/class1",
                "KubeadmControlPlaneTemplate ns1/class1"
            ]),
        ]
    );
    assert!(kept.is_empty(), "{kept:?}");
    w.move_and_check(&["-n", "ns1"]).await;
    // Unpaused in the target at the end, as clusterctl does.
    let class = w
        .target
        .object("cluster.x-k8s.io", "clusterclasses", "ns1", "class1")
        .unwrap();
    assert!(
        class["metadata"]["annotations"]
            .get("cluster.x-k8s.io/paused")
            .is_none(),
        "{class}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_cluster_class_no_cluster_uses_refuses_the_move() {
    let mut f = Fixture::default();
    class_with_templates(&mut f, json!({"cluster.x-k8s.io/paused": ""}));
    let w = World::start(&f).await;
    for extra in [&[][..], &["--dry-run=server"]] {
        let mut args = MOVE_NS1.to_vec();
        args.extend_from_slice(extra);
        let out = w.plugin(&args).await;
        out.assert_stderr(
            1,
            "  cannot start operation while the following ClusterClasses are paused: ns1/class1\n",
        );
    }
    assert!(w.plugin_writes().is_empty(), "nothing written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespaced_object_labelled_move_alone() {
    let mut f = Fixture::default();
    f.crd(
        "external.cluster.x-k8s.io",
        "ExternalThing",
        true,
        NO_MOVE_LABEL,
    )
    .add(
        "external.cluster.x-k8s.io/v1beta2",
        "ExternalThing",
        "ns1",
        "external1",
        &[],
        json!({"metadata": {"labels": {MOVE_LABEL: ""}}}),
    )
    // Without the label it is not moved (it belongs to nothing that moves).
    .add(
        "external.cluster.x-k8s.io/v1beta2",
        "ExternalThing",
        "ns1",
        "unlabelled",
        &[],
        json!({}),
    );
    let w = World::start(&f).await;
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    assert_eq!(groups, [group(&["ExternalThing ns1/external1"])]);
    assert!(kept.is_empty());
    w.move_and_check(&["-n", "ns1"]).await;
    assert!(
        w.source
            .object(
                "external.cluster.x-k8s.io",
                "externalthings",
                "ns1",
                "unlabelled"
            )
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_scoped_move_hierarchy_root_with_a_namespaced_dependent() {
    let mut f = Fixture::default();
    f.crd(
        "external.cluster.x-k8s.io",
        "GlobalThing",
        false,
        NO_MOVE_LABEL,
    )
    .add(
        "external.cluster.x-k8s.io/v1beta2",
        "GlobalThing",
        "",
        "global1",
        &[],
        json!({"metadata": {"labels": {MOVE_HIERARCHY_LABEL: ""}}}),
    )
    .add(
        "v1",
        "Secret",
        "ns1",
        "global1-settings",
        &[("GlobalThing", "global1", false)],
        json!({}),
    );
    let w = World::start(&f).await;
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    assert_eq!(
        groups,
        [
            group(&["GlobalThing /global1"]),
            group(&["Secret ns1/global1-settings"])
        ]
    );
    assert_eq!(
        kept,
        ["GlobalThing /global1", "Secret ns1/global1-settings"]
            .map(String::from)
            .into(),
        "a cluster-scoped root makes its hierarchy global: copied, never deleted"
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_identity_with_its_secret_in_the_provider_namespace() {
    let mut f = Fixture::default();
    f.global_identity(json!({}));
    let w = World::start(&f).await;
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    assert_eq!(
        groups,
        [
            group(&["DockerClusterIdentity /identity1"]),
            group(&["Secret capd-system/identity1-credentials"])
        ]
    );
    assert_eq!(kept.len(), 2, "{kept:?}");
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_namespace_is_nothing_to_move() {
    let mut f = Fixture::default();
    f.add("v1", "ConfigMap", "empty", "unrelated", &[], json!({}));
    let w = World::start(&f).await;
    let out = w.move_with(&["-n", "empty"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr.trim(), "nothing to move in namespace empty");
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(w.plugin_writes().is_empty(), "nothing written");
}

/// clusterctl's "Two Clusters sharing one ClusterClass" and "Cluster with unused ClusterClass"
/// in one namespace: the unused class moves like the used one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clusters_sharing_a_class_next_to_an_unused_class() {
    let mut f = Fixture::default();
    class_with_templates(&mut f, json!({}));
    f.add(CORE, "ClusterClass", "ns1", "unused", &[], json!({"spec": {
        "infrastructure": {"templateRef": {"apiVersion": INFRA, "kind": "DockerClusterTemplate", "name": "unused"}}}}))
        .add(INFRA, "DockerClusterTemplate", "ns1", "unused", &[("ClusterClass", "unused", false)], json!({}));
    f.cluster("ns1", "foo", false).cluster("ns1", "bar", false);
    for (object, _) in f.objects.iter_mut().filter(|(o, _)| o["kind"] == "Cluster") {
        object["spec"]["topology"] = json!({"classRef": {"name": "class1"}});
    }
    let w = World::start(&f).await;
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    let mut third: Vec<&str> = CLUSTER_FOO.to_vec();
    third.extend([
        "DockerCluster ns1/bar",
        "Secret ns1/bar-ca",
        "Secret ns1/bar-kubeconfig",
    ]);
    assert_eq!(
        groups,
        [
            group(&["ClusterClass ns1/class1", "ClusterClass ns1/unused"]),
            group(&[
                "Cluster ns1/foo",
                "Cluster ns1/bar",
                "DockerClusterTemplate ns1/class1",
                "KubeadmControlPlaneTemplate ns1/class1",
                "DockerClusterTemplate ns1/unused",
            ]),
            group(&third),
        ]
    );
    assert!(kept.is_empty(), "{kept:?}");
    w.move_and_check(&["-n", "ns1"]).await;
}
