//! `ready` and the move agree: every reason for which the move's preflight refuses a Cluster's
//! objects is a failing check of `ready` for that Cluster, in the same words — one fixture per
//! reason the preflight has.

use serde_json::{Value, json};

use crate::move_world::{CORE, Fixture, INFRA, World};

/// A change that makes the source refuse the move, applied once the world holds the fixture.
type Break = fn(&mut Fixture);

/// Changes the fixture's `kind` `name` in place.
pub fn edit(f: &mut Fixture, kind: &str, name: &str, change: impl FnOnce(&mut Value)) {
    let (object, _) = f
        .objects
        .iter_mut()
        .find(|(o, _)| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{kind} {name} in the fixture"));
    change(object);
}

/// One case per reason the preflight refuses a Cluster's objects with (clusterctl's P1–P6, what
/// `ready` adds, and dangling owners of any kind); the dangling ones are added after loading,
/// as owner references to objects that are not there.
const CASES: [(&str, Break); 8] = [
    ("infrastructure not provisioned", |f| {
        edit(f, "Cluster", "foo", |c| {
            c["status"]["initialization"]["infrastructureProvisioned"] = json!(false)
        })
    }),
    ("control plane not initialized", |f| {
        edit(f, "Cluster", "foo", |c| {
            c["status"]["initialization"]["controlPlaneInitialized"] = json!(false);
            c["status"]["conditions"][0]["status"] = json!("False");
        })
    }),
    ("a Machine without a node", |f| {
        edit(f, "Machine", "m1", |m| m["status"] = json!({}))
    }),
    // Deleted once loaded: its finalizer keeps it, being deleted.
    ("a Machine being deleted", |f| {
        edit(f, "Machine", "m1", |m| {
            m["metadata"]["finalizers"] = json!(["machine.cluster.x-k8s.io"]);
        })
    }),
    ("a scale-up under way", |f| {
        edit(f, "MachineDeployment", "md1", |md| {
            md["spec"]["replicas"] = json!(3);
            md["spec"]["clusterName"] = json!("foo");
        })
    }),
    ("a paused Cluster", |f| {
        edit(f, "Cluster", "foo", |c| c["spec"]["paused"] = json!(true))
    }),
    ("a paused ClusterClass", |f| {
        f.add(
            CORE,
            "ClusterClass",
            "ns1",
            "class1",
            &[],
            json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": ""}}}),
        );
        edit(f, "Cluster", "foo", |c| {
            c["spec"]["topology"] = json!({"classRef": {"name": "class1"}})
        })
    }),
    ("nothing but dangling owners", |_| {}),
];

/// Owner references to objects that are not there, as the real topology controller leaves them
/// (a KubeadmControlPlane and a DockerCluster owned by a deleted `<cluster>-shim` Secret), and on
/// a Secret and a ConfigMap of the Cluster.
async fn dangle(w: &World) {
    let client = w.source.client();
    for (api_version, kind, plural, group, name) in [
        (
            INFRA,
            "DockerCluster",
            "dockerclusters",
            "infrastructure.cluster.x-k8s.io",
            "foo",
        ),
        ("v1", "Secret", "secrets", "", "foo-kubeconfig"),
        ("v1", "ConfigMap", "configmaps", "", "foo-extra"),
    ] {
        let object = w.source.object(group, plural, "ns1", name).unwrap();
        let mut owners = object["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        owners.push(
            json!({"apiVersion": "v1", "kind": "Secret", "name": "foo-shim",
            "uid": format!("0000-gone-{name}")}),
        );
        capi_sandbox::api::merge_patch(
            &client,
            api_version,
            kind,
            "ns1",
            name,
            &json!({"metadata": {"ownerReferences": owners}}),
        )
        .await
        .unwrap();
    }
}

fn fixture() -> Fixture {
    let mut f = Fixture::workload(&["m1"]);
    f.add(
        "v1",
        "ConfigMap",
        "ns1",
        "foo-extra",
        &[],
        json!({
        "metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "foo"}}, "data": {"k": "v"}}),
    );
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reason_the_move_refuses_a_cluster_for_fails_ready_in_the_same_words() {
    for (case, break_it) in CASES {
        let mut f = fixture();
        break_it(&mut f);
        let w = World::start(&f).await;
        let dangling = case == "nothing but dangling owners";
        if dangling {
            // Until a garbage collector sees them (the window the real controllers leave).
            w.source.set_garbage_collection(false);
            dangle(&w).await;
        }
        if case == "a Machine being deleted" {
            capi_sandbox::api::delete(&w.source.client(), CORE, "Machine", "ns1", "m1")
                .await
                .unwrap();
        }
        let moved = w.move_with(&["foo", "-n", "ns1"]).await;
        assert_eq!(moved.code, 1, "{case}: {}", moved.stderr);
        let reasons: Vec<&str> = moved
            .stderr
            .lines()
            .filter_map(|l| l.strip_prefix("  "))
            .collect();
        assert!(!reasons.is_empty(), "{case}: {}", moved.stderr);
        if dangling {
            for owned in ["DockerCluster", "Secret", "ConfigMap"] {
                assert!(
                    reasons
                        .iter()
                        .any(|r| r.starts_with(owned) && r.contains("missing owner")),
                    "{case}: the move refuses the {owned}'s dangling owner: {reasons:?}"
                );
            }
        }

        let ready = w
            .plugin(&[
                "ready",
                "foo",
                "-n",
                "ns1",
                "--context",
                "source",
                "-o",
                "json",
            ])
            .await;
        assert_eq!(ready.code, 1, "{case}: ready fails too: {}", ready.stdout);
        let report: Value = serde_json::from_str(&ready.stdout).unwrap();
        let failing: Vec<&str> = report["clusters"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "fail")
            .map(|c| c["message"].as_str().unwrap())
            .collect();
        for reason in &reasons {
            assert!(
                failing.iter().any(|m| m.contains(reason)),
                "{case}: the move refuses with\n  {reason}\nwhich ready does not fail with: {failing:#?}"
            );
        }
    }
}
