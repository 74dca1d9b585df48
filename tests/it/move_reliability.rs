//! The move's reliability: writes that fail, a plugin killed at any write and run again, a
//! rollback, Ctrl-C, the benchmark's small run, reads and writes counted against the object
//! count and `--concurrency`.

use std::collections::BTreeSet;

use capi_sandbox::{ApiServer, FaultAction, FaultRule};
use serde_json::json;

use super::move_world::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_through_failing_writes_ends_like_a_clean_one() {
    let f = Fixture::workload(&["w1", "w2", "w3"]);
    let clean = World::start(&f).await;
    clean.move_and_check(&["-n", "ns1"]).await;

    let faulty = World::start(&f).await;
    // About one write in ten fails: server errors, throttling with Retry-After, conflicts, slow
    // answers, connections dropped before or after the write was applied.
    let writes = ["create", "update", "patch", "delete"];
    for server in [&faulty.source, &faulty.target] {
        for (action, p) in [
            (
                FaultAction::Fail {
                    code: 500,
                    retry_after: None,
                },
                0.02,
            ),
            (
                FaultAction::Fail {
                    code: 503,
                    retry_after: None,
                },
                0.01,
            ),
            (
                FaultAction::Fail {
                    code: 429,
                    retry_after: Some(1),
                },
                0.01,
            ),
            (
                FaultAction::Fail {
                    code: 409,
                    retry_after: None,
                },
                0.02,
            ),
            (
                FaultAction::Latency(std::time::Duration::from_millis(30)),
                0.02,
            ),
            (FaultAction::Drop, 0.01),
            (FaultAction::ApplyThenDrop, 0.01),
        ] {
            server.inject(
                FaultRule::new(action)
                    .verbs(&writes)
                    .agent(crate::common::PLUGIN_AGENT)
                    .probability(p),
            );
        }
    }
    // And two that surely happen: the Cluster's create fails once, a Machine's DELETE is
    // throttled once.
    faulty.target.inject(
        FaultRule::fail(500)
            .verbs(&["create"])
            .resource("clusters")
            .times(1),
    );
    faulty.source.inject(
        FaultRule::new(FaultAction::Fail {
            code: 429,
            retry_after: Some(1),
        })
        .verbs(&["delete"])
        .resource("machines")
        .times(1),
    );
    faulty.move_and_check(&["-n", "ns1"]).await;
    let injected = [&faulty.source, &faulty.target]
        .iter()
        .flat_map(|s| s.requests())
        .filter(|r| {
            r.agent.starts_with(crate::common::PLUGIN_AGENT) && [429, 500, 503].contains(&r.code)
        })
        .count();
    assert!(injected >= 2, "{injected} faults answered");
    assert_eq!(end_state(&faulty.target), end_state(&clean.target));
    assert_eq!(end_state(&faulty.source), end_state(&clean.source));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_killed_at_any_write_converges_when_run_again() {
    let f = Fixture::workload(&["w1"]);
    let clean = World::start(&f).await;
    let writes_before = clean.plugin_writes().len();
    clean.move_and_check(&["-n", "ns1"]).await;
    let clean_writes = clean.plugin_writes();
    let total = clean_writes.len() - writes_before;
    let journal_writes = clean_writes
        .iter()
        .skip(writes_before)
        .filter(|r| journal_shard(r))
        .count();
    let args = MOVE_NS1;

    // Spread over all writes, at every phase boundary, and between a write's apply and its
    // answer at points spread over each server's writes.
    let mut points: Vec<KillPoint> = (1..total)
        .step_by((total / 16).max(1))
        .map(KillPoint::Writes)
        .collect();
    points.extend((1..journal_writes).map(KillPoint::JournalWrites));
    for (server, (writes, reviews)) in write_attempts(&clean).into_iter().enumerate() {
        points.extend((1..=5).map(|i| KillPoint::Unanswered {
            server,
            skip: (reviews + writes * i / 6) as u32,
        }));
    }

    let (mut killed, mut unanswered, mut resumed) = (0, 0, 0);
    let mut stages = BTreeSet::new();
    for point in points {
        let world = World::start(&f).await;
        if !kill_at(&world, &args, point).await {
            continue;
        }
        killed += 1;
        if matches!(point, KillPoint::Unanswered { .. }) {
            unanswered += 1;
        }
        if world.writes_since([0, 0]).len() >= 3 {
            assert!(
                journal_copies(&world) > 0,
                "killed at {point:?}: a copy in the source"
            );
        }
        // Every third time, the local journal is lost: the copy in the source carries on.
        if killed % 3 == 0 {
            let _ = std::fs::remove_dir_all(world.state_dir());
        }
        // The same command again: it finds the journal and finishes (or, killed before the
        // journal was written, starts afresh).
        let again = world.plugin(&args).await;
        assert_eq!(again.code, 0, "killed at {point:?}: {}", again.stderr);
        if again.stderr.contains("continuing the interrupted move") {
            resumed += 1;
        }
        stages.insert(
            ["Pausing", "Creating", "Deleting", "Unpausing"]
                .into_iter()
                .find(|s| again.stderr.contains(&format!("(stage: {s})")))
                .unwrap_or("none"),
        );
        assert_eq!(
            end_state(&world.target),
            end_state(&clean.target),
            "killed at {point:?}: the target"
        );
        assert_eq!(
            end_state(&world.source),
            end_state(&clean.source),
            "killed at {point:?}: the source"
        );
        assert_eq!(
            journal_copies(&world),
            0,
            "the copy goes when the move is done"
        );
        // Running it once more finds nothing left to move, and succeeds without a write.
        if killed % 4 == 0 {
            let before = world.writes_per_server();
            let again = world.plugin(&args).await;
            again.assert_stderr(0, "nothing left to move");
            assert!(world.writes_since(before).is_empty());
        }
    }
    assert!(
        killed >= 30,
        "{killed} kill points of {total} writes, {journal_writes} to the journal"
    );
    assert!(
        unanswered >= 8,
        "{unanswered} kills with an unanswered write"
    );
    assert!(
        resumed >= killed - 2,
        "{resumed} of {killed} reruns continued from the journal"
    );
    assert!(
        ["Pausing", "Creating", "Deleting", "Unpausing"]
            .iter()
            .all(|s| stages.contains(s)),
        "resumed from {stages:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_before_deletion_restores_the_source_and_cleans_the_target() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", true)
        .machine(
            "ns1",
            "foo",
            "cp1",
            ("KubeadmControlPlane", "foo", true),
            true,
        )
        .global_identity(json!({}));
    let args = MOVE_NS1;
    let mut rollback = args.to_vec();
    rollback.push("--rollback");

    let w = World::start(&f).await;
    // The identity is already in the target: a rollback must leave it.
    w.target
        .load(json!({"apiVersion": INFRA, "kind": "DockerClusterIdentity", "metadata": {"name": "identity1"}}))
        .unwrap();
    let source_before = end_state(&w.source);
    let target_before = end_state(&w.target);
    assert!(
        kill_at(&w, &args, KillPoint::Writes(8)).await,
        "killed while creating"
    );
    assert_ne!(end_state(&w.target), target_before, "copies were made");

    let out = w.plugin(&rollback).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("rolled back: "), "{}", out.stdout);
    let mut target_after = end_state(&w.target);
    // Namespaces the move needed may stay (they might have been there before).
    target_after.retain(|k, _| !k.starts_with("Namespace "));
    let mut expected = target_before.clone();
    expected.retain(|k, _| !k.starts_with("Namespace "));
    assert_eq!(
        target_after, expected,
        "only what was there before remains in the target"
    );
    assert_eq!(
        end_state(&w.source),
        source_before,
        "the source as it was, unpaused"
    );
    let deletes = plugin_deletes(&w.target);
    assert!(
        !deletes.is_empty() && deletes.iter().all(|r| r.precondition_uid.is_some()),
        "every rollback DELETE names its UID"
    );
    assert_eq!(
        w.plugin(&rollback).await.code,
        2,
        "nothing left to roll back"
    );
    // The tool can start over from here.
    w.move_and_check(&["-n", "ns1"]).await;

    // Once deletion started, rollback is refused and resume finishes the move.
    let w = World::start(&f).await;
    let clean = World::start(&f).await;
    let total = {
        let before = clean.plugin_writes().len();
        clean.move_and_check(&["-n", "ns1"]).await;
        clean.plugin_writes().len() - before
    };
    assert!(
        kill_at(&w, &args, KillPoint::Writes(total - 3)).await,
        "killed while deleting"
    );
    let refused = w.plugin(&rollback).await;
    refused.assert_stderr(1, "rollback refused");
    let mut resume = args.to_vec();
    resume.push("--resume");
    assert_eq!(w.plugin(&resume).await.code, 0);
    assert_eq!(end_state(&w.target), end_state(&clean.target));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_at_a_safe_point_and_says_how_to_resume() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", true);
    for m in ["m1", "m2", "m3", "m4"] {
        f.machine("ns1", "foo", m, ("KubeadmControlPlane", "foo", true), true);
    }
    let clean = World::start(&f).await;
    clean.move_and_check(&["-n", "ns1"]).await;
    let args = MOVE_NS1;

    let w = World::start(&f).await;
    // Slow writes, so that the interrupt lands mid-creation.
    w.target
        .set_write_latency(std::time::Duration::from_millis(20));
    let before = w.plugin_writes().len();
    let child = w.command(&args).spawn().unwrap();
    crate::common::wait_until("six writes of the move", || {
        w.plugin_writes().len() - before >= 6
    })
    .await;
    let out = crate::common::interrupt(child).await;
    let stderr = &out.stderr;
    assert_eq!(out.code, 130, "{stderr}");
    assert!(
        stderr.contains(
            "continue with: kubectl capi move --context source --to-context target -n ns1 --resume"
        ),
        "{stderr}"
    );
    assert_ne!(
        end_state(&w.target),
        end_state(&clean.target),
        "stopped partway"
    );

    let mut resume = args.to_vec();
    resume.push("--resume");
    let resumed = w.plugin(&resume).await;
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(end_state(&w.target), end_state(&clean.target));
    assert_eq!(end_state(&w.source), end_state(&clean.source));
}

/// The benchmark itself stays runnable (its figures come from `capi-sandbox bench-move`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_move_benchmark_runs_on_a_small_fixture() {
    let options = capi_sandbox_tools::bench_move::MoveOptions {
        clusters: 2,
        workers: 2,
        write_latency: std::time::Duration::ZERO,
        concurrency: 4,
        plugin: crate::common::PLUGIN.into(),
        sequential: true,
        // Objects as heavy as a real server's pass the move's preflight and move as well.
        real_shaped: true,
        plain_http: false,
    };
    let report = capi_sandbox_tools::bench_move::run(&options).await.unwrap();
    assert!(
        report.starts_with(
            "2 clusters × (1 control-plane + 2 workers) = 50 objects shaped like a real management cluster's"
        ),
        "{report}"
    );
    for line in [
        "move --concurrency   4:",
        "move --concurrency   1:",
        "raw ceiling",
        "raw ceiling with the move's 4 writes per object",
        "parallel vs sequential",
        "ms/object)  writes in flight: ",
        "phases: preflight ",
        "move vs 4-write ceiling + the move's own preflight",
    ] {
        assert!(report.contains(line), "{line}: {report}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_reads_per_kind_not_per_object() {
    let measure = |clusters, workers| {
        let options = capi_sandbox_tools::bench_move::MoveOptions {
            clusters,
            workers,
            write_latency: std::time::Duration::ZERO,
            concurrency: 16,
            plugin: crate::common::PLUGIN.into(),
            sequential: false,
            real_shaped: false,
            plain_http: false,
        };
        async move {
            capi_sandbox_tools::bench_move::measure_move(&options)
                .await
                .unwrap()
        }
    };
    let small = measure(1, 1).await;
    let large = measure(6, 5).await;
    assert!(large.objects > 5 * small.objects && small.reads > 0);
    assert_eq!(
        small.reads, large.reads,
        "the same reads for {} and {} objects",
        small.objects, large.objects
    );
    for (run, clusters) in [(&small, 1), (&large, 6)] {
        // Create, managedFields, mark, DELETE; plus pausing and unpausing each Cluster, the
        // namespace and the journal's copy.
        assert!(
            run.writes <= 4 * run.objects + 3 * clusters + 30,
            "{} writes for {} objects",
            run.writes,
            run.objects
        );
    }
    // What is neither a read nor a write: one server-side dry-run create per object, and access
    // reviews per kind.
    let rest = |run: &capi_sandbox_tools::bench_move::MoveRun| {
        run.requests - run.writes - run.reads - run.objects
    };
    assert_eq!(rest(&small), rest(&large));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_stay_within_concurrency_and_follow_ownership_object_by_object() {
    let mut fixture = Fixture::default();
    for (name, workers) in [("a", 4), ("b", 2), ("c", 3)] {
        fixture.provisioned("ns1", name, workers);
    }
    let w = World::start(&fixture).await;
    // One slow create early in the plan: with groups as barriers nothing deeper would start
    // before it answered; object by object, other Clusters' Machines do.
    w.target.inject(
        FaultRule::new(FaultAction::Latency(std::time::Duration::from_millis(1500)))
            .verbs(&["create"])
            .resource("dockerclusters")
            .dry_run(false)
            .agent(crate::common::PLUGIN_AGENT)
            .times(1),
    );
    // The same for one slow delete: other Clusters are deleted meanwhile.
    w.source.inject(
        FaultRule::new(FaultAction::Latency(std::time::Duration::from_millis(1500)))
            .verbs(&["delete"])
            .resource("dockerclusters")
            .agent(crate::common::PLUGIN_AGENT)
            .times(1),
    );
    let moved = w.move_with(&["-n", "ns1", "--concurrency", "3"]).await;
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    let creates: Vec<_> = writes_to(&w.target)
        .into_iter()
        .filter(|r| r.verb == "create")
        .collect();
    let deletes: Vec<_> = writes_to(&w.source)
        .into_iter()
        .filter(|r| r.verb == "delete" && r.resource != "configmaps")
        .collect();
    assert!(creates.len() > 60 && deletes.len() > 60);
    assert!(most_in_flight(&writes_to(&w.target)) <= 3);
    assert!(most_in_flight(&deletes) <= 3);
    assert!(
        most_in_flight(&creates) >= 2,
        "the move does write in parallel"
    );
    let slow = creates
        .iter()
        .filter(|r| r.resource == "dockerclusters")
        .max_by_key(|r| r.finished - r.started)
        .unwrap();
    assert!(
        creates
            .iter()
            .any(|r| r.resource == "machines" && r.started < slow.finished),
        "a Machine was created while an earlier group's DockerCluster was still being created"
    );
    let slow = deletes
        .iter()
        .filter(|r| r.resource == "dockerclusters")
        .max_by_key(|r| r.finished - r.started)
        .unwrap();
    assert!(
        deletes
            .iter()
            .any(|r| r.resource == "clusters" && r.name != slow.name && r.started < slow.finished),
        "another Cluster was deleted while a DockerCluster of a later group was still being deleted"
    );
    let record = |records: &[capi_sandbox::RequestRecord], kind: &str, name: &str| {
        let plural = format!("{}s", kind.to_lowercase());
        records
            .iter()
            .find(|r| r.resource == plural && r.name.as_deref() == Some(name))
            .cloned()
            .unwrap_or_else(|| panic!("{kind} {name} written"))
    };
    for object in w
        .loaded
        .values()
        .filter(|o| o["metadata"]["namespace"] == "ns1")
    {
        let (kind, name) = (
            object["kind"].as_str().unwrap(),
            object["metadata"]["name"].as_str().unwrap(),
        );
        let created = record(&creates, kind, name);
        let deleted = record(&deletes, kind, name);
        for owner in object["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let (owner_kind, owner_name) = (
                owner["kind"].as_str().unwrap(),
                owner["name"].as_str().unwrap(),
            );
            assert!(
                record(&creates, owner_kind, owner_name).finished < created.started,
                "{owner_kind} {owner_name} exists before {kind} {name} is created"
            );
            assert!(
                deleted.finished < record(&deletes, owner_kind, owner_name).started,
                "{kind} {name} is gone before its owner {owner_kind} {owner_name} is deleted"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_one_is_one_request_at_a_time_in_each_cluster() {
    let mut fixture = Fixture::default();
    fixture
        .provisioned("ns1", "a", 3)
        .provisioned("ns1", "b", 2);
    let w = World::start(&fixture).await;
    let moved = w.move_with(&["-n", "ns1", "--concurrency", "1"]).await;
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    // Every request of the plugin: reads, access reviews, dry runs, writes, the journal's copy.
    let requests = |server: &ApiServer| -> Vec<capi_sandbox::RequestRecord> {
        server
            .requests()
            .into_iter()
            .filter(|r| {
                r.agent.starts_with(crate::common::PLUGIN_AGENT) && !r.path.contains("watch=true")
            })
            .collect()
    };
    let dry_runs = requests(&w.target).iter().filter(|r| r.dry_run).count();
    assert!(dry_runs > 20, "the preflight's dry runs are among them");
    // A real server ignores a DELETE's dryRun query beside a body: the delete would be real.
    for server in [&w.source, &w.target] {
        let deletes = requests(server);
        let queried: Vec<_> = deletes
            .iter()
            .filter(|r| r.verb == "delete" && r.dry_run_query)
            .map(|r| &r.path)
            .collect();
        assert!(
            queried.is_empty(),
            "DELETEs with a dryRun query: {queried:?}"
        );
    }
    assert_eq!(most_in_flight(&requests(&w.target)), 1);
    assert_eq!(most_in_flight(&requests(&w.source)), 1);
}

/// The existence and identity checks — the preflight's objects-in-target check and the delete
/// phase's copy check — read metadata only (`PartialObjectMetadataList`): every LIST the plugin
/// sends the target of a kind it moves asks for it (the provider inventory, read for versions,
/// aside).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn existence_checks_read_metadata_only() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let moved = w.move_with(&["-n", "ns1"]).await;
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    let lists: Vec<_> = w
        .target
        .requests()
        .into_iter()
        .filter(|r| r.agent == crate::common::PLUGIN_AGENT && r.verb == "list")
        .filter(|r| r.group.ends_with("cluster.x-k8s.io") || r.resource == "secrets")
        // The provider inventory is read for its versions: whole, as it must be.
        .filter(|r| r.resource != "providers")
        .collect();
    assert!(
        lists.len() >= 2,
        "the preflight and the delete phase list the target: {lists:?}"
    );
    let full: Vec<String> = lists
        .iter()
        .filter(|r| !r.metadata_only)
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(
        full,
        Vec::<String>::new(),
        "whole objects listed in the target"
    );
}
