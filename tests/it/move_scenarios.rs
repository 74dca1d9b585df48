//! clusterctl's move scenarios (its object-graph fixtures, built from the sandbox's real kinds),
//! each moved for real between two sandbox servers without controllers: the plan's groups are
//! what clusterctl's rules give, and afterwards every object is in the target with owner
//! references rebuilt to the target's UIDs, and the source holds only what is copied but kept.

use crate::common::Writes;
use std::collections::BTreeSet;

use capi_sandbox::{FaultAction, FaultRule};
use serde_json::{Value, json};

use super::move_world::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false);
    let w = World::start(&f).await;
    assert_eq!(
        w.plan(&["-n", "ns1"]).await.0,
        [group(&["Cluster ns1/foo"]), group(&CLUSTER_FOO)]
    );
    // -v 6 logs every request, kubectl-style, on stderr; never a body.
    let verbose = w
        .move_with(&["-n", "ns1", "--dry-run=server", "-v", "6"])
        .await;
    assert_eq!(verbose.code, 0, "{}", verbose.stderr);
    assert!(
        verbose.stdout.starts_with("Move plan:"),
        "{}",
        verbose.stdout
    );
    let logged: Vec<&str> = verbose
        .stderr
        .lines()
        .filter(|l| l.contains(" milliseconds"))
        .collect();
    assert!(
        logged.iter().any(|l| l.starts_with("GET http://")
            && l.contains("/apis/cluster.x-k8s.io/v1beta2/namespaces/ns1/clusters")
            && l.contains(" 200 OK in "))
            && logged
                .iter()
                .any(|l| l.starts_with("POST http://") && l.contains("dryRun=All")),
        "{}",
        verbose.stderr
    );
    assert!(!verbose.stderr.contains("\"data\""), "no bodies");
    // Sequential writes (clusterctl's way) give the same result as the parallel default.
    w.move_and_check(&["-n", "ns1", "--concurrency", "1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_deleted_after_planning_stops_the_move_before_any_create() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false)
        .machine("ns1", "foo", "m1", ("Cluster", "foo", true), false)
        .machine("ns1", "foo", "m2", ("Cluster", "foo", true), false);
    let w = World::start(&f).await;
    // The Cluster's pause is applied and its answer held back while someone deletes m2.
    w.source.inject(
        FaultRule::new(FaultAction::ApplyThenStall(
            std::time::Duration::from_millis(500),
        ))
        .verbs(&["patch"])
        .resource("clusters")
        .dry_run(false)
        .agent(crate::common::PLUGIN_AGENT)
        .times(1),
    );
    let args = MOVE_NS1;
    let child = w.command(&args).output();
    let meanwhile = async {
        crate::common::wait_until("the move's patch to be held", || {
            w.source.answers_held() > 0
        })
        .await;
        capi_sandbox::api::delete(&w.source.client(), CORE, "Machine", "ns1", "m2")
            .await
            .unwrap();
    };
    let (output, ()) = tokio::join!(child, meanwhile);
    let output = output.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        // (Its DockerMachine goes too, once the garbage collector has seen the owner gone.)
        stderr.contains("error: reading the objects to move: machine.cluster.x-k8s.io/m2")
            && stderr.contains("left the source after the move was planned")
            && stderr.contains("nothing was created"),
        "{stderr}"
    );
    assert!(
        w.target.writes().iter().all(|r| r.resource == "namespaces"),
        "nothing but the namespace was created in the target"
    );
    assert!(
        w.target.object("", "namespaces", "", "ns1").is_none(),
        "and it was removed again"
    );
    // The source is left as the move found it: its pause released, its journal closed.
    let cluster = w
        .source
        .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
        .unwrap();
    assert!(cluster["spec"]["paused"].is_null(), "{cluster}");
    assert!(stderr.contains("were unpaused again"), "{stderr}");
    assert!(
        !stderr.contains("--resume") && !stderr.contains("stopped partway"),
        "no move is left to continue, so no hint says to: {stderr}"
    );
    // Run again: planned anew without m2, and moved.
    let again = w.plugin(&args).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        w.target
            .object("cluster.x-k8s.io", "machines", "ns1", "m1")
            .is_some()
            && w.target
                .object("cluster.x-k8s.io", "machines", "ns1", "m2")
                .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machines_owned_by_the_cluster() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false);
    for m in ["m1", "m2"] {
        f.machine("ns1", "foo", m, ("Cluster", "foo", false), true);
    }
    let w = World::start(&f).await;
    let mut second = CLUSTER_FOO.to_vec();
    second.extend(["Machine ns1/m1", "Machine ns1/m2"]);
    assert_eq!(
        w.plan(&["-n", "ns1"]).await.0,
        [
            group(&["Cluster ns1/foo"]),
            group(&second),
            group(&[
                "DockerMachine ns1/m1",
                "KubeadmConfig ns1/m1",
                "DockerMachine ns1/m2",
                "KubeadmConfig ns1/m2"
            ]),
            group(&["Secret ns1/m1", "Secret ns1/m2"]),
        ]
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_set_and_machine_deployments_with_and_without_bootstrap_configs() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false);
    f.add(
        CORE,
        "MachineSet",
        "ns1",
        "ms1",
        &[("Cluster", "foo", false)],
        json!({}),
    )
    .templates("ns1", "foo", "ms1", true)
    .machine("ns1", "foo", "m1", ("MachineSet", "ms1", true), true);
    f.machine_deployment("ns1", "foo", "md1", "md1-a").machine(
        "ns1",
        "foo",
        "m2",
        ("MachineSet", "md1-a", true),
        true,
    );
    // A static bootstrap: no config, no config template.
    f.add(
        CORE,
        "MachineDeployment",
        "ns1",
        "md2",
        &[("Cluster", "foo", false)],
        json!({}),
    )
    .templates("ns1", "foo", "md2", false)
    .add(
        CORE,
        "MachineSet",
        "ns1",
        "md2-a",
        &[("MachineDeployment", "md2", true)],
        json!({}),
    )
    .machine("ns1", "foo", "m3", ("MachineSet", "md2-a", true), false);
    let w = World::start(&f).await;
    let mut second = CLUSTER_FOO.to_vec();
    second.extend([
        "MachineSet ns1/ms1",
        "DockerMachineTemplate ns1/ms1",
        "KubeadmConfigTemplate ns1/ms1",
        "MachineDeployment ns1/md1",
        "DockerMachineTemplate ns1/md1",
        "KubeadmConfigTemplate ns1/md1",
        "MachineDeployment ns1/md2",
        "DockerMachineTemplate ns1/md2",
    ]);
    assert_eq!(
        w.plan(&["-n", "ns1"]).await.0,
        [
            group(&["Cluster ns1/foo"]),
            group(&second),
            group(&[
                "Machine ns1/m1",
                "MachineSet ns1/md1-a",
                "MachineSet ns1/md2-a"
            ]),
            group(&[
                "DockerMachine ns1/m1",
                "KubeadmConfig ns1/m1",
                "Machine ns1/m2",
                "Machine ns1/m3"
            ]),
            group(&[
                "Secret ns1/m1",
                "DockerMachine ns1/m2",
                "KubeadmConfig ns1/m2",
                "DockerMachine ns1/m3"
            ]),
            group(&["Secret ns1/m2"]),
        ]
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_plane_and_a_machine_pool() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", true)
        .machine(
            "ns1",
            "foo",
            "cp1",
            ("KubeadmControlPlane", "foo", true),
            true,
        )
        .add(
            CORE,
            "MachinePool",
            "ns1",
            "mp1",
            &[("Cluster", "foo", false)],
            json!({}),
        )
        .add(
            INFRA,
            "DockerMachinePool",
            "ns1",
            "mp1",
            &[("MachinePool", "mp1", true)],
            json!({}),
        )
        .add(
            BOOTSTRAP,
            "KubeadmConfig",
            "ns1",
            "mp1",
            &[("MachinePool", "mp1", true)],
            json!({}),
        )
        .add(
            "v1",
            "Secret",
            "ns1",
            "mp1",
            &[("KubeadmConfig", "mp1", true)],
            json!({}),
        );
    let w = World::start(&f).await;
    assert_eq!(
        w.plan(&["-n", "ns1"]).await.0,
        [
            group(&["Cluster ns1/foo"]),
            group(&[
                "DockerCluster ns1/foo",
                "Secret ns1/foo-ca",
                "KubeadmControlPlane ns1/foo",
                "DockerMachineTemplate ns1/foo-cp",
                "MachinePool ns1/mp1"
            ]),
            group(&[
                "Secret ns1/foo-kubeconfig",
                "Secret ns1/foo-sa",
                "Machine ns1/cp1",
                "DockerMachinePool ns1/mp1",
                "KubeadmConfig ns1/mp1"
            ]),
            group(&[
                "DockerMachine ns1/cp1",
                "KubeadmConfig ns1/cp1",
                "Secret ns1/mp1"
            ]),
            group(&["Secret ns1/cp1"]),
        ]
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clusters_with_a_shared_object_moved_one_at_a_time() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false)
        .cluster("ns1", "bar", false)
        .add(
            INFRA,
            "DockerMachineTemplate",
            "ns1",
            "shared",
            &[("Cluster", "foo", false), ("Cluster", "bar", false)],
            json!({}),
        );
    let w = World::start(&f).await;
    let mut second = CLUSTER_FOO.to_vec();
    second.extend([
        "DockerCluster ns1/bar",
        "Secret ns1/bar-ca",
        "Secret ns1/bar-kubeconfig",
        "DockerMachineTemplate ns1/shared",
    ]);
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    assert_eq!(
        groups,
        [
            group(&["Cluster ns1/foo", "Cluster ns1/bar"]),
            group(&second)
        ]
    );
    assert!(
        kept.is_empty(),
        "moving both, nothing is shared with what stays"
    );

    // Only foo: the template bar also owns is copied and kept.
    let (_, kept) = w.plan(&["foo", "-n", "ns1"]).await;
    assert_eq!(
        kept,
        BTreeSet::from(["DockerMachineTemplate ns1/shared".to_string()])
    );
    w.move_and_check(&["foo", "-n", "ns1"]).await;
    // foo's verification record says so.
    let record = w
        .target
        .object("", "configmaps", "ns1", "kubectl-capi-moved-foo")
        .unwrap();
    let record: Value =
        serde_json::from_str(record["data"]["moved.json"].as_str().unwrap()).unwrap();
    assert_eq!(
        record["keptInSource"],
        json!(["DockerMachineTemplate ns1/shared"])
    );
    assert!(crate::common::has_cluster(&w.source, "ns1", "bar"));
    assert!(!crate::common::has_cluster(&w.target, "ns1", "bar"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_resource_set_and_a_cloud_config_secret_with_the_move_label() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false)
        .add(
            "v1",
            "Secret",
            "ns1",
            "foo-cloud-config",
            &[],
            json!({"metadata": {"labels": {MOVE_LABEL: ""}}}),
        )
        .add(ADDONS, "ClusterResourceSet", "ns1", "crs1", &[], json!({}))
        .add(
            "v1",
            "Secret",
            "ns1",
            "crs1-secret",
            &[("ClusterResourceSet", "crs1", false)],
            json!({}),
        )
        .add(
            "v1",
            "ConfigMap",
            "ns1",
            "crs1-cm",
            &[("ClusterResourceSet", "crs1", false)],
            json!({}),
        )
        .add(
            ADDONS,
            "ClusterResourceSetBinding",
            "ns1",
            "foo",
            &[("ClusterResourceSet", "crs1", false)],
            json!({"spec": {"clusterName": "foo"}}),
        );
    let w = World::start(&f).await;
    let mut second = CLUSTER_FOO.to_vec();
    second.extend([
        "Secret ns1/crs1-secret",
        "ConfigMap ns1/crs1-cm",
        "ClusterResourceSetBinding ns1/foo",
    ]);
    assert_eq!(
        w.plan(&["-n", "ns1"]).await.0,
        [
            group(&[
                "Cluster ns1/foo",
                "ClusterResourceSet ns1/crs1",
                "Secret ns1/foo-cloud-config"
            ]),
            group(&second),
        ]
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_classes_in_the_namespace_and_across_namespaces() {
    let mut f = Fixture::default();
    for (ns, class) in [("ns1", "local"), ("classes", "shared")] {
        // Templates are found through the class's references (clusterctl GETs them).
        f.add(CORE, "ClusterClass", ns, class, &[], json!({"spec": {
                "infrastructure": {"templateRef": {"apiVersion": INFRA, "kind": "DockerClusterTemplate", "name": class}},
                "controlPlane": {"templateRef": {"apiVersion": CONTROL_PLANE, "kind": "KubeadmControlPlaneTemplate", "name": class}}}}))
            .add(
                INFRA,
                "DockerClusterTemplate",
                ns,
                class,
                &[("ClusterClass", class, false)],
                json!({}),
            )
            .add(
                CONTROL_PLANE,
                "KubeadmControlPlaneTemplate",
                ns,
                class,
                &[("ClusterClass", class, false)],
                json!({}),
            );
    }
    f.cluster("ns1", "foo", false).cluster("ns1", "bar", false);
    f.objects[6].0["spec"]["topology"] = json!({"classRef": {"name": "local"}});
    let bar = f
        .objects
        .iter()
        .position(|(o, _)| o["kind"] == "Cluster" && o["metadata"]["name"] == "bar")
        .unwrap();
    f.objects[bar].0["spec"]["topology"] =
        json!({"classRef": {"name": "shared", "namespace": "classes"}});
    assert_eq!(f.objects[6].0["metadata"]["name"], "foo");
    let w = World::start(&f).await;
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    let mut third = CLUSTER_FOO.to_vec();
    third.extend([
        "DockerCluster ns1/bar",
        "Secret ns1/bar-ca",
        "Secret ns1/bar-kubeconfig",
    ]);
    assert_eq!(
        groups,
        [
            group(&["ClusterClass ns1/local", "ClusterClass classes/shared"]),
            group(&[
                "Cluster ns1/foo",
                "Cluster ns1/bar",
                "DockerClusterTemplate ns1/local",
                "KubeadmControlPlaneTemplate ns1/local",
                "DockerClusterTemplate classes/shared",
                "KubeadmControlPlaneTemplate classes/shared"
            ]),
            group(&third),
        ]
    );
    assert_eq!(
        kept,
        BTreeSet::from([
            "ClusterClass classes/shared".to_string(),
            "DockerClusterTemplate classes/shared".to_string(),
            "KubeadmControlPlaneTemplate classes/shared".to_string()
        ]),
        "a class in another namespace is copied, never deleted"
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_objects_a_global_identity_and_credentials() {
    let mut f = Fixture::default();
    f.crd(
        "external.cluster.x-k8s.io",
        "ExternalThing",
        true,
        MOVE_LABEL,
    )
    .crd(
        "external.cluster.x-k8s.io",
        "GlobalThing",
        false,
        MOVE_LABEL,
    );
    f.cluster("ns1", "foo", false)
        .add(
            "v1",
            "Secret",
            "ns1",
            "foo-credentials",
            &[("Cluster", "foo", false)],
            json!({}),
        )
        .add(
            "external.cluster.x-k8s.io/v1beta2",
            "ExternalThing",
            "ns1",
            "external1",
            &[],
            json!({}),
        )
        .add(
            "external.cluster.x-k8s.io/v1beta2",
            "GlobalThing",
            "",
            "global1",
            &[],
            json!({}),
        )
        .global_identity(json!({}));
    let w = World::start(&f).await;
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    let mut second = CLUSTER_FOO.to_vec();
    second.extend([
        "Secret ns1/foo-credentials",
        "Secret capd-system/identity1-credentials",
    ]);
    assert_eq!(
        groups,
        [
            group(&[
                "Cluster ns1/foo",
                "ExternalThing ns1/external1",
                "GlobalThing /global1",
                "DockerClusterIdentity /identity1"
            ]),
            group(&second),
        ]
    );
    assert_eq!(
        kept,
        BTreeSet::from([
            "GlobalThing /global1".to_string(),
            "DockerClusterIdentity /identity1".to_string(),
            "Secret capd-system/identity1-credentials".to_string()
        ]),
        "cluster-scoped objects and their hierarchy are copied, never deleted"
    );
    w.move_and_check(&["-n", "ns1"]).await;
}
