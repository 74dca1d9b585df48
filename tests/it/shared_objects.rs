//! What a move keeps in the source ends there as it began: a ClusterClass shared with a Cluster
//! that stays is copied, paused for the move and unpaused again — when the move finishes, when
//! `--resume` finishes it, when `--rollback` undoes it and when it stops before creating.

use serde_json::{Value, json};

use crate::common::Writes;

use crate::move_world::{CORE, Fixture, INFRA, KillPoint, World, kill_at, move_one};

const PAUSED: &str = "cluster.x-k8s.io/paused";

/// Clusters foo and bar in ns1, both of ClusterClass `shared`, with a Machine each.
fn two_clusters_of_one_class() -> Fixture {
    let mut f = crate::selection::two_clusters();
    f.add(CORE, "ClusterClass", "ns1", "shared", &[], json!({"spec": {
            "infrastructure": {"templateRef": {"apiVersion": INFRA, "kind": "DockerClusterTemplate", "name": "shared"}}}}))
        .add(
            INFRA,
            "DockerClusterTemplate",
            "ns1",
            "shared",
            &[("ClusterClass", "shared", false)],
            json!({}),
        );
    for name in ["foo", "bar"] {
        crate::agreement::edit(&mut f, "Cluster", name, |c| {
            c["spec"]["topology"] = json!({"classRef": {"name": "shared"}})
        });
    }
    f
}

fn class(server: &capi_sandbox::ApiServer) -> Value {
    server
        .object("cluster.x-k8s.io", "clusterclasses", "ns1", "shared")
        .expect("the ClusterClass is there")
}

fn paused(object: &Value) -> bool {
    !object["metadata"]["annotations"][PAUSED].is_null()
}

/// The class ends unpaused at both ends, and foo's Cluster (moved) unpaused in the target.
fn assert_class_released(w: &World) {
    assert!(!paused(&class(&w.source)), "{}", class(&w.source));
    assert!(!paused(&class(&w.target)), "{}", class(&w.target));
    let cluster = w
        .target
        .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
        .expect("foo moved");
    assert!(cluster["spec"]["paused"].is_null(), "{cluster}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_class_ends_unpaused_in_the_source_and_the_next_move_proceeds() {
    let w = World::start(&two_clusters_of_one_class()).await;
    let out = w.plugin(&move_one("foo")).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_class_released(&w);
    // The move did pause it while it ran (and nothing else of the source's stays changed).
    let class_patches: Vec<_> = w
        .source
        .writes()
        .into_iter()
        .filter(|r| {
            r.agent.starts_with(crate::common::PLUGIN_AGENT) && r.resource == "clusterclasses"
        })
        .collect();
    assert_eq!(class_patches.len(), 2, "{class_patches:?}");

    let out = w.plugin(&move_one("bar")).await;
    assert_eq!(
        out.code, 0,
        "the next Cluster of the class moves: {}",
        out.stderr
    );
    assert!(crate::common::has_cluster(&w.target, "ns1", "bar"));
    assert!(!paused(&class(&w.source)) && !paused(&class(&w.target)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_move_releases_the_shared_class_on_rollback_and_on_resume() {
    for (how, flag) in [("rolled back", "--rollback"), ("resumed", "--resume")] {
        let w = World::start(&two_clusters_of_one_class()).await;
        // Killed once the source is paused (the journal says Creating).
        assert!(kill_at(&w, &move_one("foo"), KillPoint::JournalWrites(2)).await);
        assert!(paused(&class(&w.source)), "the move paused the class first");
        let mut args = move_one("foo");
        args.push(flag);
        let out = w.plugin(&args).await;
        assert_eq!(out.code, 0, "{how}: {}", out.stderr);
        assert!(!paused(&class(&w.source)), "{how}: {}", class(&w.source));
        let foo_where = if flag == "--rollback" {
            &w.source
        } else {
            &w.target
        };
        let cluster = foo_where
            .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
            .unwrap();
        assert!(cluster["spec"]["paused"].is_null(), "{how}: {cluster}");
        if flag == "--resume" {
            assert_class_released(&w);
        }
    }
}

/// A Machine a controller creates after the plan, before it sees the pause: the move's read
/// once paused finds it, so the move releases its pause and refuses, naming it, before anything
/// is created in the target — never moving the Cluster without it. Run again, it is planned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_created_after_the_plan_is_never_left_behind() {
    use capi_sandbox::{FaultAction, FaultRule};

    let w = World::start(&Fixture::workload(&["m1"])).await;
    // The Cluster's pause is applied and its answer held back while the Machine appears.
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
    let args = crate::move_world::MOVE_NS1;
    let child = w.command(&args).output();
    let meanwhile = async {
        crate::common::wait_until("the move's pause to be held", || {
            w.source.answers_held() > 0
        })
        .await;
        let set = w
            .source
            .object("cluster.x-k8s.io", "machinesets", "ns1", "md1-a")
            .unwrap();
        capi_sandbox::api::create(&w.source.client(), &json!({
            "apiVersion": CORE, "kind": "Machine",
            "metadata": {"name": "m3", "namespace": "ns1",
                "labels": {"cluster.x-k8s.io/cluster-name": "foo"},
                "ownerReferences": [{"apiVersion": CORE, "kind": "MachineSet", "name": "md1-a",
                    "uid": set["metadata"]["uid"], "controller": true}]},
            "spec": {"clusterName": "foo", "bootstrap": {"dataSecretName": "m3"},
                "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine", "name": "m3"}}}))
        .await
        .unwrap();
    };
    let (output, ()) = tokio::join!(child, meanwhile);
    let output = output.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "machine.cluster.x-k8s.io/m3 appeared in the source after the move was planned"
        ),
        "{stderr}"
    );
    assert!(
        w.target.writes().iter().all(|r| r.resource == "namespaces"),
        "nothing but the namespace was created in the target"
    );
    let cluster = w
        .source
        .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
        .unwrap();
    assert!(
        cluster["spec"]["paused"].is_null(),
        "pause released: {cluster}"
    );
    assert!(stderr.contains("were unpaused again"), "{stderr}");
    assert!(
        !stderr.contains("--resume") && !stderr.contains("stopped partway"),
        "no move is left to continue, so no hint says to: {stderr}"
    );

    // Planned anew, m3 is the move's own: it holds the move until it has its node, as any
    // Machine still provisioning does.
    let again = w.plugin(&args).await;
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains("ns1/m3 is still provisioning the node"),
        "{}",
        again.stderr
    );
}
