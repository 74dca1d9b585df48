//! `move --verify` and `kubectl capi verify`: the real binary watching a sandbox target adopt (or
//! fail to adopt) the moved Clusters.

use std::collections::BTreeSet;

use capi_sandbox::controllers::Delays;
use capi_sandbox::crds::Dialect;
use capi_sandbox::environment::{Options, SOURCE_CONTEXT, TARGET_CONTEXT};
use serde_json::Value;

use crate::moving::{Pair, workload};

/// The names of the Machines of `managed`'s default namespace.
fn machines(pair: &Pair, managed: &capi_sandbox::environment::Managed) -> BTreeSet<String> {
    pair.objects(managed, "default")
        .iter()
        .filter(|o| o["kind"] == "Machine")
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// A clean move verifies at once with `--verify`, leaves its record next to the Cluster in the
/// target, and `kubectl capi verify` finds that record later with the local journal gone.
async fn a_clean_move_verifies(dialect: Dialect) {
    let pair = Pair::start(dialect, &[workload("prod", 1, 2)]).await;
    let journal = pair.dir.path().join("journal.json");
    let journal_flag = journal.to_str().unwrap();
    let cloud_before = pair.env.cloud.totals();

    let moved = pair
        .move_(&[
            "prod",
            "--verify",
            "--verify-timeout",
            "40s",
            "--journal",
            journal_flag,
        ])
        .await;
    assert_eq!(moved.code, 0, "{}\n{}", moved.stdout, moved.stderr);
    let verified = moved
        .stdout
        .lines()
        .find(|l| l.starts_with("cluster.cluster.x-k8s.io/prod verified:"))
        .unwrap_or_else(|| panic!("a verified line: {}", moved.stdout));
    assert!(
        verified.contains(": 1 control-plane + 2 worker Machines adopted, "),
        "{verified}"
    );
    assert_eq!(
        pair.env.cloud.totals(),
        cloud_before,
        "nothing was provisioned again"
    );

    // The record lives next to the Cluster in the target, owned by it there.
    let cluster = pair
        .env
        .target
        .server
        .object("cluster.x-k8s.io", "clusters", "default", "prod")
        .unwrap();
    let record = pair
        .env
        .target
        .server
        .object("", "configmaps", "default", "kubectl-capi-moved-prod")
        .expect("the move leaves its record in the target");
    assert_eq!(
        record["metadata"]["ownerReferences"][0]["uid"],
        cluster["metadata"]["uid"]
    );
    assert!(
        !record["data"]["moved.json"]
            .as_str()
            .unwrap()
            .contains("spec"),
        "names and IDs only"
    );

    // Later, from a machine without the journal: the target's record is enough.
    std::fs::remove_file(&journal).unwrap();
    let later = pair
        .plugin(&[
            "verify",
            "prod",
            "--context",
            TARGET_CONTEXT,
            "--from-context",
            SOURCE_CONTEXT,
            "-o",
            "json",
        ])
        .await;
    assert_eq!(later.code, 0, "{}\n{}", later.stdout, later.stderr);
    let report: Value = serde_json::from_str(&later.stdout).unwrap();
    assert_eq!(report["kind"], "VerificationReport");
    assert_eq!(report["sourceChecked"], true);
    assert_eq!(report["clusters"][0]["verified"], true, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_move_verifies_in_v1beta2() {
    a_clean_move_verifies(Dialect::V1beta2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_move_verifies_in_v1beta1() {
    a_clean_move_verifies(Dialect::V1beta1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_cannot_adopt_fails_naming_the_new_machines_with_a_hint_that_works() {
    let mut options = Options::new(Dialect::V1beta2, Delays::millis(20));
    options.target_cannot_adopt = true;
    let pair = Pair::start_with(options, &[workload("prod", 1, 1)]).await;
    let moved_machines = machines(&pair, &pair.env.source);

    let moved = pair
        .move_(&["prod", "--verify", "--verify-timeout", "40s"])
        .await;
    assert_eq!(moved.code, 1, "{}\n{}", moved.stdout, moved.stderr);
    assert!(
        moved
            .stdout
            .contains("cluster.cluster.x-k8s.io/prod not verified: "),
        "{}",
        moved.stdout
    );
    // The first failure it sees ends the watch: a replaced Machine going, or its replacement.
    assert!(
        moved
            .stdout
            .contains(" is being deleted in the target after the move")
            || moved
                .stdout
                .contains(" was created in the target after the move"),
        "{}",
        moved.stdout
    );

    // Once the target's controllers have replaced the Machines, verify names the new ones.
    let deadline = tokio::time::Instant::now() + crate::moving::SETTLE;
    let replacements = loop {
        let new: BTreeSet<String> = machines(&pair, &pair.env.target)
            .difference(&moved_machines)
            .cloned()
            .collect();
        if new.len() == moved_machines.len() {
            break new;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the target never replaced the Machines"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    };
    let later = pair
        .plugin(&["verify", "prod", "--context", TARGET_CONTEXT])
        .await;
    assert_eq!(later.code, 1, "{}\n{}", later.stdout, later.stderr);
    let created: BTreeSet<String> = later
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  failed: Machine default/"))
        .filter_map(|l| l.split_once(" was created in the target after the move"))
        .map(|(name, _)| name.to_string())
        .collect();
    assert_eq!(created, replacements, "{}", later.stdout);

    // The hint stops the target's controllers from going on, when pasted.
    let hint = later
        .stdout
        .split("pause the Cluster (`")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("a pause hint: {}", later.stdout));
    assert_eq!(
        hint,
        format!("kubectl capi pause prod -n default --context {TARGET_CONTEXT}")
    );
    let paused = pair.paste(hint).await;
    assert_eq!(paused.code, 0, "{}", paused.stderr);
    assert!(
        paused.stdout.contains(
            "kubeadmcontrolplane.controlplane.cluster.x-k8s.io/prod-control-plane frozen"
        ),
        "{}",
        paused.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_deleted_in_the_target_after_the_move_is_named() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("prod", 1, 2)]).await;
    let journal = pair.dir.path().join("journal.json");
    let journal_flag = journal.to_str().unwrap();
    let moved = pair.move_(&["prod", "--journal", journal_flag]).await;
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    // Without its record in the target, the move's journal still says what was moved.
    capi_sandbox::api::delete(
        &pair.env.target.server.client(),
        "v1",
        "ConfigMap",
        "default",
        "kubectl-capi-moved-prod",
    )
    .await
    .unwrap();
    let worker = machines(&pair, &pair.env.target)
        .into_iter()
        .find(|m| m.starts_with("prod-md-0"))
        .unwrap();
    capi_sandbox::api::delete(
        &pair.env.target.server.client(),
        "cluster.x-k8s.io/v1beta2",
        "Machine",
        "default",
        &worker,
    )
    .await
    .unwrap();

    let verified = pair
        .plugin(&[
            "verify",
            "--context",
            TARGET_CONTEXT,
            "--journal",
            journal_flag,
            "--wait",
            "--timeout",
            "40s",
        ])
        .await;
    assert_eq!(verified.code, 1, "{}\n{}", verified.stdout, verified.stderr);
    // Still there with its finalizer, or gone already: named either way.
    assert!(
        verified.stdout.contains(&format!(
            "failed: Machine default/{worker} is being deleted in the target after the move"
        )) || verified.stdout.contains(&format!(
            "failed: Machine default/{worker} was deleted in the target after the move"
        )),
        "{}",
        verified.stdout
    );
    assert!(
        verified.stderr.contains("the source was not checked"),
        "{}",
        verified.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_never_becomes_healthy_times_out_naming_what_is_pending() {
    let pair = Pair::start(Dialect::V1beta1, &[workload("prod", 1, 1)]).await;
    // The target's Cluster API controllers are down: nothing there reconciles the moved objects.
    pair.env.target.controllers.stop();
    let moved = pair
        .move_(&["prod", "--verify", "--verify-timeout", "2s", "-o", "json"])
        .await;
    assert_eq!(moved.code, 1, "{}\n{}", moved.stdout, moved.stderr);
    assert!(
        moved
            .stderr
            .contains("timed out after 2s waiting for the target to adopt the moved Clusters"),
        "{}",
        moved.stderr
    );
    let summary: Value = serde_json::from_str(&moved.stdout).unwrap();
    assert_eq!(summary["kind"], "MoveSummary", "one document: the move's");
    let cluster = &summary["verification"]["clusters"][0];
    assert_eq!(cluster["verified"], false);
    assert_eq!(cluster["failed"], serde_json::json!([]), "{cluster}");
    let pending: Vec<&str> = cluster["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        pending
            .iter()
            .any(|p| p.starts_with("Cluster default/prod is not healthy yet")),
        "{pending:?}"
    );
    assert!(
        pending
            .iter()
            .any(|p| p.starts_with("KubeadmControlPlane ")),
        "{pending:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_without_a_record_says_where_to_look() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("prod", 1, 0)]).await;
    let output = pair
        .plugin(&["verify", "prod", "--context", TARGET_CONTEXT])
        .await;
    assert_eq!(output.code, 2, "{}", output.stderr);
    assert!(
        output.stderr.starts_with(
            "error: no record of a move of Cluster prod in namespace default of this cluster"
        ) && output.stderr.contains("--journal"),
        "{}",
        output.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_verification_says_how_to_verify_later_and_that_works_when_pasted() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("prod", 1, 1)]).await;
    // Nothing reconciles in the target, so the verification waits.
    pair.env.target.controllers.stop();
    let child = crate::common::plugin_command(
        Some(&pair.kubeconfig),
        &[
            "move",
            "prod",
            "--context",
            SOURCE_CONTEXT,
            "--to-context",
            TARGET_CONTEXT,
            "--verify",
            "--verify-timeout",
            "50s",
        ],
    )
    .spawn()
    .unwrap();
    // The verification is watching the target once the plugin opened a watch there.
    let watching = || {
        pair.env
            .target
            .server
            .requests()
            .iter()
            .any(|r| r.verb == "watch" && r.agent.starts_with(crate::common::PLUGIN_AGENT))
    };
    let deadline = tokio::time::Instant::now() + crate::moving::SETTLE;
    while !watching() {
        assert!(tokio::time::Instant::now() < deadline, "never watched");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let out = crate::common::interrupt(child).await;
    let stderr = &out.stderr;
    assert_eq!(out.code, 130, "{stderr}");
    let hint = stderr
        .lines()
        .find(|l| l.contains("the move finished, its verification did not"))
        .and_then(|l| l.split('`').nth(1))
        .unwrap_or_else(|| panic!("a verify hint: {stderr}"));
    assert_eq!(
        hint,
        format!(
            "kubectl capi verify prod --context {TARGET_CONTEXT} -n default --from-context {SOURCE_CONTEXT} --wait"
        )
    );
    // Pasted (with a short wait: nothing reconciles there), it verifies the same move.
    let pasted = pair.paste(&format!("{hint} --timeout 1s")).await;
    assert_eq!(pasted.code, 1, "{}", pasted.stderr);
    assert!(
        pasted
            .stdout
            .starts_with("cluster.cluster.x-k8s.io/prod not verified: 0 failed, "),
        "{}",
        pasted.stdout
    );
}

/// A freeze travels with the move, and frozen controllers write no status: `move --verify`
/// checks at once what a frozen target can show (every moved Machine there with its
/// providerID, none created, none deleted) and lists what waits for `resume` with the commands
/// that release it and verify again — which work when pasted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_target_is_verified_at_once_as_far_as_it_can_show() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("cold", 1, 1)]).await;
    let paused = pair.plugin(&["pause", "cold"]).await;
    assert_eq!(paused.code, 0, "{}", paused.stderr);
    let started = std::time::Instant::now();
    let out = pair
        .move_(&["cold", "--verify", "--verify-timeout", "5m"])
        .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(120),
        "it does not sit out its timeout"
    );
    assert!(
        out.stdout
            .contains("cluster.cluster.x-k8s.io/cold adopted while frozen"),
        "{}",
        out.stdout
    );
    let waiting = out
        .stdout
        .lines()
        .find(|l| l.starts_with("  after resume:") && l.contains("frozen by kubectl capi pause"))
        .unwrap_or_else(|| panic!("the frozen checks listed: {}", out.stdout));
    let commands: Vec<&str> = waiting.split('`').skip(1).step_by(2).collect();
    let [resume, verify] = commands[..] else {
        panic!("a resume and a verify in {waiting}");
    };
    assert!(
        resume.starts_with("kubectl capi resume cold")
            && verify.starts_with("kubectl capi verify cold")
    );
    let resumed = pair.paste(resume).await;
    assert_eq!(resumed.code, 0, "{resume}: {}", resumed.stderr);
    let verified = pair.paste(verify).await;
    assert_eq!(
        verified.code, 0,
        "{verify}: {}\n{}",
        verified.stdout, verified.stderr
    );
    assert!(
        verified
            .stdout
            .contains("cluster.cluster.x-k8s.io/cold verified"),
        "{}",
        verified.stdout
    );
}
