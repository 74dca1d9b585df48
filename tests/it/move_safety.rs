//! What a move, a resume, a rollback or a restore must never do: delete or overwrite what it did
//! not itself move or create. Each test runs the real binary against sandbox servers and reads
//! their request logs.

use crate::common::Writes;
use capi_sandbox::FaultRule;

use std::collections::BTreeSet;

use serde_json::json;

use crate::move_world::{
    CORE, Fixture, INFRA, KillPoint, MOVE_NS1, World, end_state, forge_journal_entry, kill_at,
    local_journal, plugin_deletes,
};

/// The plugin's requests to `server` that tried to write (dry runs included; access reviews,
/// which only ask, are not writes).
fn write_attempts(server: &capi_sandbox::ApiServer) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT) && r.is_write_attempt())
        .filter(|r| r.resource != "selfsubjectaccessreviews" && !crate::common::is_lease(r))
        .map(|r| {
            format!(
                "{} {} {:?} dryRun={}",
                r.verb, r.resource, r.name, r.dry_run
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_cluster_as_source_and_target_is_refused_before_any_write() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let journal = w.dir.path().join("crafted-journal.json");
    // A journal of an interrupted move whose two ends are this one server.
    std::fs::write(
        &journal,
        serde_json::json!({"apiVersion": "kubectl-capi/v1", "kind": "MoveJournal",
            "source": {"server": "http://127.0.0.1:1"}, "target": {"server": "http://127.0.0.1:1"},
            "namespace": "ns1", "clusters": [], "stage": "deleting", "paused": [], "entries": []})
        .to_string(),
    )
    .unwrap();
    let journal = journal.to_str().unwrap();
    for to in ["source", "source-again", "source-localhost"] {
        for extra in [
            &[][..],
            &["--dry-run=server"],
            &["--resume", "--journal", journal],
            &["--rollback", "--journal", journal],
            &["--freeze"],
        ] {
            let mut args = vec![
                "move",
                "--context",
                "source",
                "--to-context",
                to,
                "-n",
                "ns1",
            ];
            args.extend_from_slice(extra);
            let out = w.plugin(&args).await;
            assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
            assert!(
                out.stderr.starts_with("error: the source and the target are the same cluster: contexts \"source\" and \"")
                    && out.stderr.contains(&format!("\"{to}\""))
                    && out.stderr.contains("would delete"),
                "{args:?}: {}",
                out.stderr
            );
            if to == "source-localhost" {
                assert!(
                    out.stderr.contains("kube-system namespace (UID "),
                    "told apart by the namespace UID, not the URL: {}",
                    out.stderr
                );
            }
            assert!(out.stdout.is_empty(), "{}", out.stdout);
        }
    }
    assert_eq!(write_attempts(&w.source), Vec::<String>::new());
    assert!(
        w.source
            .requests()
            .iter()
            .all(|r| !crate::common::is_lease(r)),
        "the lease is taken only once both ends are known to differ"
    );
    assert!(crate::common::has_cluster(&w.source, "ns1", "foo"));
    // The real target is fine, and a server-side dry run leaves it as it was: not even the
    // namespace its dry-run creates needed stays.
    let target_before = end_state(&w.target);
    let out = w.move_with(&["-n", "ns1", "--dry-run=server"]).await;
    out.assert_stderr(0, "preflight passed");
    assert_eq!(end_state(&w.target), target_before);
    assert!(w.target.object("", "namespaces", "", "ns1").is_none());
}

/// Whether the source still holds an object with this UID.
fn in_source(w: &World, uid: &str) -> bool {
    w.source
        .dump()
        .iter()
        .any(|o| o["metadata"]["uid"].as_str() == Some(uid))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_never_removes_an_object_someone_put_in_place_of_the_copy() {
    let f = Fixture::workload(&["w1"]);
    let w = World::start(&f).await;
    let source_before = end_state(&w.source);
    // Killed right after the journal recorded the first group (the Cluster) as created.
    assert!(kill_at(&w, &MOVE_NS1, KillPoint::JournalWrites(3)).await);
    let copy = w
        .target
        .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
        .expect("the Cluster was copied");
    let journal = local_journal(&w);
    let entry = journal["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "Cluster")
        .unwrap();
    assert_eq!(entry["targetUid"], copy["metadata"]["uid"]);
    // Someone deletes the copy and makes their own Cluster of that name.
    capi_sandbox::api::delete(&w.target.client(), CORE, "Cluster", "ns1", "foo")
        .await
        .unwrap();
    let theirs = w
        .target
        .load(serde_json::json!({"apiVersion": CORE, "kind": "Cluster",
            "metadata": {"name": "foo", "namespace": "ns1"}, "spec": {"paused": true}}))
        .unwrap();
    assert_ne!(theirs["metadata"]["uid"], copy["metadata"]["uid"]);

    let out = w.move_with(&["-n", "ns1", "--rollback"]).await;
    out.assert_stderr(
        0,
        "cluster.cluster.x-k8s.io/foo: not deleted: the target holds another object of that name",
    );
    let survivor = w
        .target
        .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
        .expect("their Cluster survives");
    assert_eq!(survivor["metadata"]["uid"], theirs["metadata"]["uid"]);
    let annotations = &survivor["metadata"]["annotations"];
    assert!(
        annotations
            .get("clusterctl.cluster.x-k8s.io/delete-for-move")
            .is_none(),
        "not even marked: {annotations}"
    );
    assert!(
        plugin_deletes(&w.target)
            .iter()
            .all(|r| r.precondition_uid.is_some()),
        "every rollback DELETE names its UID"
    );
    // Everything else the move made is gone again, and the source is as it was.
    let left: Vec<String> = end_state(&w.target)
        .into_keys()
        .filter(|k| !k.starts_with("Namespace "))
        .filter(|k| !k.starts_with("Provider "))
        .collect();
    assert_eq!(left, ["Cluster ns1/foo"]);
    assert_eq!(end_state(&w.source), source_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_finish_records_the_deletes_that_succeeded_and_the_next_one_converges() {
    let f = Fixture::workload(&["w1", "w2", "w3"]);
    let clean = World::start(&f).await;
    clean.move_and_check(&["-n", "ns1"]).await;
    let w = World::start(&f).await;
    let refuse_delete = |resource: &str, name: &str| {
        FaultRule::fail(400)
            .verbs(&["delete"])
            .resource(resource)
            .name(name)
            .agent(crate::common::PLUGIN_AGENT)
            .times(1)
    };
    // The move stops while deleting a Machine; the resume, at the Cluster everything belongs to.
    w.source.inject(refuse_delete("machines", "w2"));
    let out = w.plugin(&MOVE_NS1).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    w.source.inject(refuse_delete("clusters", "foo"));
    let resume = ["-n", "ns1", "--resume"];
    let out = w.move_with(&resume).await;
    out.assert_stderr(2, "cluster.x-k8s.io/foo");

    // Every object gone from the source is recorded as deleted, siblings of the failure too.
    let journal = local_journal(&w);
    let entries = journal["entries"].as_array().unwrap();
    let mut pending = 0;
    for e in entries.iter().filter(|e| e["keptInSource"] != true) {
        let uid = e["uid"].as_str().unwrap();
        let recorded = e["deleted"] == true;
        assert_eq!(recorded, !in_source(&w, uid), "{e}");
        pending += usize::from(!recorded);
    }
    assert!(
        (1..entries.len() / 2).contains(&pending),
        "{pending} of {} left: everything the Cluster owns went",
        entries.len()
    );

    // DELETEs of moved objects (not of the journal's copy).
    let object_deletes = || {
        w.source
            .requests()
            .iter()
            .filter(|r| r.verb == "delete" && r.agent.starts_with(crate::common::PLUGIN_AGENT))
            .filter(|r| !crate::common::is_lease(r))
            .filter(|r| {
                r.resource != "configmaps"
                    || r.name
                        .as_deref()
                        .is_some_and(|n| !n.starts_with("kubectl-capi-move-"))
            })
            .count()
    };
    let before = object_deletes();
    let out = w.move_with(&resume).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        object_deletes() - before,
        pending,
        "only what was left is deleted, once each"
    );
    assert_eq!(end_state(&w.target), end_state(&clean.target));
    assert_eq!(end_state(&w.source), end_state(&clean.source));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_already_in_the_target_refuse_the_move_unless_overwriting_and_globals_are_reused() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false)
        .global_identity(json!({"spec": {"from": "source"}}));
    let w = World::start(&f).await;
    // (capd-system is there already: the provider's namespace.)
    w.target
        .load(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}))
        .unwrap();
    // Someone's own Secret of the same name, and the shared identity, already in the target.
    let theirs = w
        .target
        .load(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "foo-ca", "namespace": "ns1", "labels": {"owner": "someone-else"}},
            "stringData": {"tls.crt": "theirs"}}))
        .unwrap();
    let identity = w
        .target
        .load(json!({"apiVersion": INFRA, "kind": "DockerClusterIdentity",
            "metadata": {"name": "identity1"}, "spec": {"from": "target"}}))
        .unwrap();
    let target_before = end_state(&w.target);
    let source_before = end_state(&w.source);

    for extra in [&[][..], &["--dry-run=server"]] {
        let mut args = MOVE_NS1.to_vec();
        args.extend_from_slice(extra);
        let out = w.plugin(&args).await;
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("  Secret ns1/foo-ca already exists in the target and was not created by this move; delete it there or pass --overwrite-existing"),
            "{}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("DockerClusterIdentity identity1"),
            "a global object already there is expected: {}",
            out.stderr
        );
    }
    assert_eq!(
        write_attempts(&w.source)
            .into_iter()
            .chain(write_attempts(&w.target))
            .filter(|w| w.contains("dryRun=false"))
            .collect::<Vec<_>>(),
        Vec::<String>::new(),
        "nothing written"
    );
    assert_eq!(end_state(&w.target), target_before);
    assert_eq!(end_state(&w.source), source_before);

    // With --overwrite-existing, clusterctl's behaviour: the Secret is updated in place.
    let out = w.move_with(&["-n", "ns1", "--overwrite-existing"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let secret = w.target.object("", "secrets", "ns1", "foo-ca").unwrap();
    assert_eq!(
        secret["metadata"]["uid"], theirs["metadata"]["uid"],
        "updated, not replaced"
    );
    assert_eq!(
        secret["metadata"]["labels"],
        w.loaded["Secret ns1/foo-ca"]["metadata"]["labels"]
    );
    let reused = w
        .target
        .object(
            "infrastructure.cluster.x-k8s.io",
            "dockerclusteridentitys",
            "",
            "identity1",
        )
        .unwrap();
    assert_eq!(reused["metadata"]["uid"], identity["metadata"]["uid"]);
    assert_eq!(
        reused["metadata"]["resourceVersion"], identity["metadata"]["resourceVersion"],
        "not even patched"
    );
    assert_eq!(reused["spec"]["from"], "target");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_run_again_after_it_finished_succeeds_without_a_write() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let named = crate::move_world::move_one("foo");
    let out = w.plugin(&named).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let journal = local_journal(&w);
    assert_eq!(journal["stage"], "done");
    assert!(
        journal["finishedAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{journal}"
    );
    assert_eq!(
        journal["entries"],
        json!([]),
        "a finished move keeps a short record"
    );

    let before = w.writes_per_server();
    // Its Cluster is gone from the source and in the target, as the record says: done, exit 0.
    let out = w.plugin(&named).await;
    out.assert_stderr(0, "nothing left to move");
    // The whole namespace again: nothing left to move, said with the record's time.
    for _ in 0..2 {
        let out = w.plugin(&MOVE_NS1).await;
        out.assert_stderr(0, "nothing to move in namespace ns1");
    }
    // From another machine (no local record): nothing to move, not an error.
    let out = w
        .command(&MOVE_NS1)
        .env("XDG_STATE_HOME", w.dir.path().join("elsewhere"))
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to move in namespace ns1"));
    assert!(
        w.writes_since(before).is_empty(),
        "{:?}",
        w.writes_since(before)
    );
    // A name that never existed is still an error that names the namespace searched.
    let out = w.plugin(&crate::move_world::move_one("nope")).await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("\"nope\" not found in namespace ns1"),
        "{}",
        out.stderr
    );
    // The hint repeats the user's --context, and works when pasted.
    let hint = out
        .stderr
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("a hint in backquotes: {}", out.stderr));
    assert_eq!(
        hint,
        "kubectl get clusters.cluster.x-k8s.io -A --context source"
    );
    let words: Vec<&str> = hint.split(' ').collect();
    let listed = std::process::Command::new(words[0])
        .args(&words[1..])
        .env("KUBECONFIG", w.dir.path().join("kubeconfig"))
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_journal_of_a_move_finished_elsewhere_is_never_acted_on() {
    let f = Fixture::workload(&["w1", "w2"]);
    let clean = World::start(&f).await;
    clean.move_and_check(&["-n", "ns1"]).await;
    let w = World::start(&f).await;
    // Killed while creating (after the first group was recorded).
    assert!(kill_at(&w, &MOVE_NS1, KillPoint::JournalWrites(4)).await);
    assert_eq!(local_journal(&w)["stage"], "creating");
    // The journal's copy is in the source, and it is never part of a plan.
    let plan = w.plan(&["-n", "ns1"]).await;
    assert!(
        !format!("{plan:?}").contains("kubectl-capi-move-"),
        "{plan:?}"
    );
    let out = w
        .move_with(&["-n", "ns1", "--dry-run=server", "-o", "json"])
        .await;
    assert!(!out.stdout.contains("kubectl-capi-move-"), "{}", out.stdout);

    // Finished from another machine, which continues from the copy in the source.
    let elsewhere = w.dir.path().join("elsewhere");
    let out = w
        .command(&MOVE_NS1)
        .env("XDG_STATE_HOME", &elsewhere)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("continuing from the journal's copy in the source cluster"),
        "{stderr}"
    );
    assert_eq!(end_state(&w.target), end_state(&clean.target));

    // Back on the first machine, with its stale journal.
    let before = w.writes_per_server();
    let out = w.move_with(&["-n", "ns1", "--rollback"]).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("rollback refused: the move recorded in")
            && out.stderr.contains("was finished from elsewhere"),
        "{}",
        out.stderr
    );
    let out = w.plugin(&MOVE_NS1).await;
    out.assert_stderr(0, "was finished from elsewhere");
    assert!(
        w.writes_since(before).is_empty(),
        "{:?}",
        w.writes_since(before)
    );
    assert_eq!(
        end_state(&w.target),
        end_state(&clean.target),
        "the target is intact"
    );
    assert_eq!(end_state(&w.source), end_state(&clean.source));
    // The stale journal became the record of a finished move.
    assert_eq!(local_journal(&w)["stage"], "done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_refuses_a_local_journal_behind_the_copy_in_the_source() {
    let f = Fixture::workload(&["w1", "w2"]);
    let w = World::start(&f).await;
    assert!(kill_at(&w, &MOVE_NS1, KillPoint::JournalWrites(3)).await);
    let stale = local_journal(&w);
    // Continued from elsewhere, and killed again further along.
    let elsewhere = w.dir.path().join("elsewhere");
    let mut command = w.command(&MOVE_NS1);
    command.env("XDG_STATE_HOME", &elsewhere);
    let child = command.spawn().unwrap();
    let start = w.writes_per_server();
    let mut child = child;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while w
        .writes_since(start)
        .iter()
        .filter(|r| r.resource != "configmaps")
        .count()
        < 6
    {
        assert!(
            child.try_wait().unwrap().is_none(),
            "killed before it finished"
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "six writes within 60 s"
        );
        tokio::time::sleep(std::time::Duration::from_micros(200)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    crate::common::expire_lease(&w.source).await;
    assert_eq!(
        local_journal(&w),
        stale,
        "the first machine's journal is behind"
    );

    // (The killed holder's lease in the target is taken over and released: not an object.)
    let objects = |server| {
        let mut state = end_state(server);
        state.retain(|key, _| !key.starts_with("Lease "));
        state
    };
    let target_before = objects(&w.target);
    let out = w.move_with(&["-n", "ns1", "--rollback"]).await;
    out.assert_stderr(1, "the move was continued elsewhere");
    assert_eq!(objects(&w.target), target_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preflight_checks_the_journal_copy_permissions_and_leaves_no_namespace_behind() {
    let f = Fixture::workload(&["w1"]);
    for verb in ["create", "patch", "delete"] {
        let w = World::start(&f).await;
        w.source.deny(verb, "configmaps");
        let target_before = end_state(&w.target);
        let out = w.plugin(&MOVE_NS1).await;
        assert_eq!(out.code, 1, "{verb}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!(
                "missing permission in the source cluster: {verb} configmaps in namespace ns1"
            )),
            "{verb}: {}",
            out.stderr
        );
        assert!(
            w.source
                .writes()
                .iter()
                .all(|r| !r.agent.starts_with(crate::common::PLUGIN_AGENT))
        );
        assert!(
            w.target
                .writes()
                .iter()
                .all(|r| !r.agent.starts_with(crate::common::PLUGIN_AGENT))
        );
        assert_eq!(
            end_state(&w.target),
            target_before,
            "{verb}: no namespace left"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_impersonates_in_both_clusters() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    w.source.grant("ops-bot", "*", "*", "*");
    let output = w.move_with(&["--as", "ops-bot"]).await;
    // The target gives ops-bot nothing: the move is refused there, before any write.
    assert_ne!(output.code, 0, "{}", output.stderr);
    let target_users: BTreeSet<String> = w
        .target
        .requests()
        .iter()
        .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT) && !r.resource.is_empty())
        .map(|r| r.user.clone())
        .collect();
    assert_eq!(
        target_users,
        BTreeSet::from(["ops-bot".to_string()]),
        "every resource request to the target ran as ops-bot"
    );
    assert!(w.target.writes().is_empty());
}

/// The first hint in backquotes on a line containing `marker`.
fn hint_after<'a>(text: &'a str, marker: &str) -> &'a str {
    let line = text
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("{marker:?} in {text}"));
    line[line.find(marker).unwrap()..]
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("a hint in backquotes after {marker:?}: {line}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_points_an_interrupted_move_at_resume_and_rollback_and_both_work_when_pasted() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    assert!(kill_at(&w, &MOVE_NS1, KillPoint::JournalWrites(3)).await);
    // Another machine: no local journal, only the copy in the source.
    std::fs::remove_dir_all(w.state_dir()).unwrap();
    let ready = w
        .plugin(&["ready", "--context", "source", "-n", "ns1"])
        .await;
    assert_eq!(ready.code, 1, "{}", ready.stderr);
    assert!(
        ready
            .stdout
            .contains("a kubectl-capi move paused it and did not finish"),
        "{}",
        ready.stdout
    );
    let rollback = hint_after(&ready.stdout, "undo it with");
    assert_eq!(
        rollback,
        "kubectl capi move --context source -n ns1 --to-context target --rollback"
    );
    let resume = hint_after(&ready.stdout, "continue it with");
    assert_eq!(
        resume,
        "kubectl capi move --context source -n ns1 --to-context target --resume"
    );
    let undone = w.paste(rollback).await;
    assert_eq!(undone.code, 0, "{}", undone.stderr);
    let again = w
        .plugin(&["ready", "--context", "source", "-n", "ns1"])
        .await;
    assert_eq!(again.code, 0, "rolled back and unpaused: {}", again.stdout);
    // Interrupted again, the other hint finishes the move.
    assert!(kill_at(&w, &MOVE_NS1, KillPoint::JournalWrites(3)).await);
    let ready = w
        .plugin(&["ready", "--context", "source", "-n", "ns1"])
        .await;
    let finished = w.paste(hint_after(&ready.stdout, "continue it with")).await;
    assert_eq!(finished.code, 0, "{}", finished.stderr);
    assert!(
        finished.stdout.starts_with("moved 1 Cluster(s)"),
        "{}",
        finished.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_s_hint_names_the_kubeconfig_the_move_read_its_target_from() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    // The move read both ends from a file it was given; the user's default holds only the source.
    let both = w.dir.path().join("both-ends");
    std::fs::copy(w.dir.path().join("kubeconfig"), &both).unwrap();
    let source_only = w.dir.path().join("source-only");
    std::fs::copy(&both, &source_only).unwrap();
    let deleted = std::process::Command::new("kubectl")
        .args(["config", "delete-context", "target", "--kubeconfig"])
        .arg(&source_only)
        .output()
        .unwrap();
    assert!(deleted.status.success());
    let mut args = vec!["--kubeconfig", both.to_str().unwrap()];
    args.extend_from_slice(&MOVE_NS1);
    assert!(kill_at(&w, &args, KillPoint::JournalWrites(3)).await);
    let ready = w
        .plugin(&[
            "ready",
            "--kubeconfig",
            source_only.to_str().unwrap(),
            "--context",
            "source",
            "-n",
            "ns1",
        ])
        .await;
    assert_eq!(ready.code, 1, "{}", ready.stderr);
    let resume = hint_after(&ready.stdout, "continue it with");
    let both = std::fs::canonicalize(&both).unwrap();
    assert!(
        resume.contains(&format!("--to-kubeconfig {}", both.display())),
        "{resume}"
    );
    // Pasted where no KUBECONFIG is set, it finishes the move.
    let mut pasted = crate::common::pasted_command(None, resume);
    pasted.env("XDG_STATE_HOME", w.state_dir());
    let finished: crate::common::Output = pasted.output().await.unwrap().into();
    assert_eq!(finished.code, 0, "{resume}: {}", finished.stderr);
    assert!(
        finished.stdout.starts_with("moved 1 Cluster(s)"),
        "{}",
        finished.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwritable_journal_is_refused_before_any_write() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let file = w.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let journal = file.join("journal.json");
    for extra in [&[][..], &["--freeze"]] {
        let mut args = vec!["--journal", journal.to_str().unwrap(), "-n", "ns1"];
        args.extend_from_slice(extra);
        let output = w.move_with(&args).await;
        assert_eq!(output.code, 2, "{}", output.stderr);
        let lines: Vec<&str> = output.stderr.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "one line, no 'stopped partway': {}",
            output.stderr
        );
        assert!(
            lines[0].starts_with(&format!(
                "error: cannot write the move journal in {}: ",
                journal.display()
            )) && lines[0].ends_with("; pass a writable --journal PATH"),
            "{}",
            lines[0]
        );
    }
    assert!(
        w.plugin_writes().is_empty(),
        "nothing written in either cluster"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_finished_record_keeps_what_a_verification_compares_against() {
    let mut f = Fixture::default();
    f.provisioned("ns1", "foo", 2);
    let w = World::start(&f).await;
    let out = w.plugin(&MOVE_NS1).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let journal = local_journal(&w);
    assert_eq!(journal["stage"], "done");
    let moved = &journal["moved"];
    assert_eq!(moved.as_array().map(Vec::len), Some(1), "{journal}");
    assert_eq!(moved[0]["cluster"]["name"], "foo");
    let machines: BTreeSet<&str> = moved[0]["machines"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        machines,
        BTreeSet::from(["foo-cp-0", "foo-md-a-0", "foo-md-a-1"])
    );
    assert_eq!(moved[0]["controlPlaneMachines"], 1);
    // Names and IDs only: no object contents.
    assert!(!journal.to_string().contains("\"spec\""), "{journal}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_the_target_refused_is_named_with_a_verify_that_works_when_pasted() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    // The target takes every object but the verification record (the only ConfigMap it is sent).
    w.target.inject(
        FaultRule::fail(422)
            .verbs(&["create"])
            .resource("configmaps")
            .dry_run(false)
            .agent(crate::common::PLUGIN_AGENT),
    );
    let journal = w.dir.path().join("this-move.json");
    let mut args = MOVE_NS1.to_vec();
    args.extend(["--journal", journal.to_str().unwrap()]);
    let moved = w.plugin(&args).await;
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    let verify = hint_after(&moved.stderr, "this move's journal still verifies it");
    assert!(
        verify.starts_with("kubectl capi verify --journal ") && verify.contains("--context target"),
        "{verify}"
    );
    w.target.clear_faults();
    let verified = w.paste(verify).await;
    assert_ne!(verified.code, 2, "{verify}: {}", verified.stderr);
    assert!(verified.stdout.contains("foo"), "{}", verified.stdout);
}

/// A journal's copy in the source can be written by anyone who can write ConfigMaps there. One
/// entry added to it after a kill — a decoy Secret's UID in the source, an unrelated Secret's
/// UID in the target — once made a rollback from a machine without the local journal delete
/// that target Secret. The entry is found out (the two objects do not carry the same content),
/// named, and the rollback deletes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_journal_entry_never_directs_a_delete() {
    let w = World::start(&Fixture::workload(&["w1", "w2"])).await;
    let victim = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "victim-secret", "namespace": "ns1"},
        "stringData": {"password": "the victim's"}});
    w.target
        .load(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "ns1"}}))
        .ok();
    let victim_uid = capi_sandbox::api::create(&w.target.client(), &victim)
        .await
        .unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(kill_at(&w, &MOVE_NS1, KillPoint::JournalWrites(4)).await);
    crate::common::expire_lease(&w.source).await;
    let mut decoy = victim.clone();
    decoy["stringData"]["password"] = json!("the intruder's");
    let decoy_uid = capi_sandbox::api::create(&w.source.client(), &decoy)
        .await
        .unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();

    // The intruder's entry, in the copy the journal keeps in the source.
    assert!(forge_journal_entry(&w, &decoy_uid, &victim_uid).await);

    let target_before = end_state(&w.target);
    let out = w
        .command(&[&MOVE_NS1[..], &["--rollback"]].concat())
        .env("XDG_STATE_HOME", w.dir.path().join("elsewhere"))
        .output()
        .await
        .unwrap();
    let out: crate::common::Output = out.into();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "the journal pairs Secret ns1/victim-secret (UID {decoy_uid}) in the source with UID {victim_uid} in the target, but that object does not carry the original's content"
        )),
        "{}",
        out.stderr
    );
    let mut target_after = end_state(&w.target);
    target_after.retain(|key, _| !key.starts_with("Lease "));
    let mut target_before = target_before;
    target_before.retain(|key, _| !key.starts_with("Lease "));
    assert_eq!(target_after, target_before, "nothing deleted in the target");
    assert!(
        w.target
            .object("", "secrets", "ns1", "victim-secret")
            .is_some()
    );
}
