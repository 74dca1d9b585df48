//! A move's history is evidence about specific clusters: journals name both clusters by
//! identity, and one written for other clusters at the same addresses (a cluster recreated
//! there) is never acted on. Real binaries against sandbox servers.

use crate::common::Writes;
use crate::move_world::{Fixture, KillPoint, MOVE_NS1, World, end_state, kill_at};
use crate::one_writer::clean_end_state;

/// The one move journal in the world's state directory, and its text.
fn the_journal(w: &World) -> (std::path::PathBuf, String) {
    let dir = w.state_dir().join("kubectl-capi/moves");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            // (A journal save killed halfway leaves its `.json.partial`: not a journal.)
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("move-") && name.ends_with(".json")
        })
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    (files[0].clone(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journals_of_clusters_recreated_at_the_same_addresses_are_never_acted_on() {
    let fixture = Fixture::workload(&["w1", "w2"]);
    let (clean_source, clean_target) = clean_end_state(&fixture).await;
    let mut w = World::start(&fixture).await;
    assert!(kill_at(&w, &MOVE_NS1, KillPoint::Writes(8)).await);
    let (path, interrupted) = the_journal(&w);
    let recorded: serde_json::Value = serde_json::from_str(&interrupted).unwrap();
    assert!(
        recorded["source"]["identity"].is_string() && recorded["target"]["identity"].is_string(),
        "the journal names both clusters: {}",
        recorded["source"]
    );

    w.recreate(&fixture).await;
    for verb in ["--resume", "--rollback"] {
        std::fs::write(&path, &interrupted).unwrap();
        let out = w.move_with(&["-n", "ns1", verb]).await;
        assert_eq!(out.code, 1, "{verb}: {}", out.stderr);
        let refused = format!("{} refused, nothing was written: the journal", &verb[2..]);
        assert!(
            out.stderr.contains(&refused)
                && out
                    .stderr
                    .contains("was written for another cluster at http://127.0.0.1:")
                && out
                    .stderr
                    .contains("the cluster was recreated at that address")
                && out.stderr.contains("set aside as"),
            "{verb}: {}",
            out.stderr
        );
        assert!(!path.exists(), "{verb}: set aside");
        for server in [&w.source, &w.target] {
            assert!(server.writes().is_empty(), "{verb}: nothing written");
        }
    }

    // A plain move says so once and moves everything.
    std::fs::write(&path, &interrupted).unwrap();
    let out = w.plugin(&MOVE_NS1).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("was not acted on").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.starts_with("moved 1 Cluster(s)"),
        "{}",
        out.stdout
    );
    assert_eq!(end_state(&w.target), clean_target);
    assert_eq!(end_state(&w.source), clean_source);

    // The record of that finished move does not make a move between recreated clusters a no-op.
    w.recreate(&fixture).await;
    let out = w.plugin(&MOVE_NS1).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("moved 1 Cluster(s)"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("was not acted on"), "{}", out.stderr);
    assert_eq!(end_state(&w.target), clean_target);
}

/// Two provisioned Clusters in ns1 and a global identity.
fn two_clusters() -> Fixture {
    let mut f = Fixture::default();
    f.provisioned("ns1", "foo", 1)
        .provisioned("ns1", "bar", 1)
        .global_identity(serde_json::json!({}));
    f
}

/// Status travels with the objects (no controllers rebuild it here), so they can move back.
fn forward<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    [&MOVE_NS1[..], &["--restore-status"], extra].concat()
}

/// The move back, with its status too.
fn back<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    [
        &crate::move_world::MOVE_BACK[..],
        &["--restore-status"],
        extra,
    ]
    .concat()
}

fn record_in(server: &capi_sandbox::ApiServer, cluster: &str) -> Option<serde_json::Value> {
    server.object(
        "",
        "configmaps",
        "ns1",
        &format!("kubectl-capi-moved-{cluster}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_finished_move_a_rerun_moves_what_is_new_and_refuses_what_is_not_there() {
    let w = World::start(&two_clusters()).await;
    let out = w.plugin(&forward(&[])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("moved 2 Cluster(s)"),
        "{}",
        out.stdout
    );

    // Nothing left: said so, nothing written.
    let before = (w.source.writes().len(), w.target.writes().len());
    let out = w.plugin(&forward(&[])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("finished at") && out.stderr.contains("nothing left to move"),
        "{}",
        out.stderr
    );
    assert_eq!((w.source.writes().len(), w.target.writes().len()), before);

    // A Cluster name that does not exist, or an empty one: an error, whatever the record says.
    for (name, says) in [
        ("", "invalid Cluster name \"\""),
        ("nosuch", "clusters.cluster.x-k8s.io \"nosuch\" not found"),
    ] {
        let out = w.plugin(&forward(&[name])).await;
        assert_eq!(out.code, 2, "{name:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{name:?}: {}", out.stderr);
        assert!(!out.stderr.contains("nothing left"), "{}", out.stderr);
    }

    // A new global object the target lacks is moved.
    w.source
        .load(serde_json::json!({"apiVersion": crate::move_world::INFRA,
            "kind": "DockerClusterIdentity", "metadata": {"name": "identity2"}}))
        .unwrap();
    let out = w.plugin(&forward(&[])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("nothing left"), "{}", out.stderr);
    assert!(
        w.target
            .object(
                "infrastructure.cluster.x-k8s.io",
                "dockerclusteridentitys",
                "",
                "identity2"
            )
            .is_some(),
        "{}",
        out.stdout
    );

    // foo moved back; the same command moves it again. Its verification record is the tool's
    // own: never planned, written afresh in each target, gone from each source.
    let (groups, _) = {
        let out = w.plugin(&back(&["foo", "--dry-run", "-o", "json"])).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        let plan: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        (plan["groups"].clone(), ())
    };
    assert!(
        !groups.to_string().contains("kubectl-capi-moved-"),
        "records are not planned: {groups}"
    );
    let out = w.plugin(&back(&["foo"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(record_in(&w.source, "foo").is_some(), "a fresh record");
    assert!(record_in(&w.target, "foo").is_none(), "the old one removed");
    assert!(record_in(&w.target, "bar").is_some());
    let out = w.plugin(&forward(&[])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("moved 1 Cluster(s)"),
        "{}",
        out.stdout
    );
    assert!(
        crate::common::has_cluster(&w.target, "ns1", "foo")
            && !crate::common::has_cluster(&w.source, "ns1", "foo")
    );
    assert!(record_in(&w.target, "foo").is_some() && record_in(&w.source, "foo").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_paused_by_an_interrupted_move_are_refused_with_how_to_continue_it() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let named = [&MOVE_NS1[..], &["foo"]].concat();
    assert!(kill_at(&w, &named, KillPoint::Writes(6)).await);
    assert_eq!(
        w.source
            .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
            .unwrap()["spec"]["paused"],
        true,
        "the interrupted move paused it"
    );
    // Another move of the namespace (another journal) finds foo paused by that move.
    let out = w.plugin(&MOVE_NS1).await;
    out.assert_stderr(
        1,
        "a kubectl-capi move paused it and did not finish: continue it with `",
    );
    assert!(!out.stderr.contains("kubectl patch"), "{}", out.stderr);
    let hint = out
        .stderr
        .split("continue it with `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap()
        .to_string();
    assert!(hint.ends_with("--resume"), "{hint}");
    let pasted = w.paste(&hint).await;
    assert_eq!(pasted.code, 0, "{hint}: {}", pasted.stderr);
    assert!(crate::common::has_cluster(&w.target, "ns1", "foo"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_object_this_pair_copied_is_reused_both_ways_and_never_overwritten() {
    let mut f = Fixture::default();
    f.provisioned("ns1", "foo", 1)
        .provisioned("ns1", "bar", 1)
        .add(
            "v1",
            "Secret",
            "ns1",
            "cloud-config",
            &[],
            serde_json::json!({"metadata": {"labels": {crate::move_world::MOVE_LABEL: ""}}}),
        );
    let w = World::start(&f).await;
    let secret = |server: &capi_sandbox::ApiServer| {
        server
            .object("", "secrets", "ns1", "cloud-config")
            .map(|s| {
                (
                    s["metadata"]["uid"].as_str().unwrap().to_string(),
                    s["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                )
            })
    };
    let original = secret(&w.source).unwrap();

    // foo: the labelled Secret is copied and kept in the source.
    let out = w.plugin(&forward(&["foo"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let copy = secret(&w.target).expect("copied");
    // bar: the copy foo's move made is reused, not refused.
    let out = w.plugin(&forward(&["bar"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(secret(&w.target), Some(copy.clone()), "never overwritten");
    // foo back: the original in the source is the other end of that copy.
    let out = w.plugin(&back(&["foo"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(secret(&w.source), Some(original), "never overwritten");
    assert_eq!(
        secret(&w.target),
        Some(copy),
        "kept where bar still uses it"
    );

    // An object of that name the records do not pair with it is still refused.
    let out = w.plugin(&back(&["bar"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    capi_sandbox::api::delete(&w.source.client(), "v1", "Secret", "ns1", "cloud-config")
        .await
        .unwrap();
    w.source
        .load(serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "cloud-config", "namespace": "ns1",
                "labels": {crate::move_world::MOVE_LABEL: ""}}}))
        .unwrap();
    let out = w.plugin(&forward(&["foo"])).await;
    out.assert_stderr(
        1,
        "Secret ns1/cloud-config already exists in the target and was not created by this move",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_journal_with_nothing_left_to_do_is_closed() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    assert!(kill_at(&w, &MOVE_NS1, KillPoint::Writes(6)).await);
    // Someone finished the job by other means: ns1 of the source holds nothing to move.
    for object in w.source.dump() {
        let is_copy = object["metadata"]["labels"]
            .get("kubectl-capi.dev/move-journal")
            .is_some();
        let in_ns1 = object["metadata"]["namespace"] == "ns1";
        if in_ns1 && !is_copy && object["kind"] != "Provider" {
            capi_sandbox::api::delete(
                &w.source.client(),
                object["apiVersion"].as_str().unwrap(),
                object["kind"].as_str().unwrap(),
                "ns1",
                object["metadata"]["name"].as_str().unwrap(),
            )
            .await
            .ok();
        }
    }
    w.source.collect_garbage();
    let out = w.plugin(&[&MOVE_NS1[..], &["--resume"]].concat()).await;
    out.assert_stderr(0, "had nothing left to do; its journal is closed");
    let (_, text) = the_journal(&w);
    let closed: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(closed["stage"], "done");
    assert_eq!(closed["entries"], serde_json::json!([]));
    assert!(
        w.source.dump().iter().all(|o| o["metadata"]["labels"]
            .get("kubectl-capi.dev/move-journal")
            .is_none()),
        "the copy is gone"
    );
}

/// A move's records belong to its two clusters, whatever URLs reach them: a move interrupted
/// through `127.0.0.1` is resumed, and another rolled back, through `localhost`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_interrupted_through_one_url_is_continued_through_another() {
    let fixture = Fixture::workload(&["w1", "w2"]);
    let (clean_source, clean_target) = clean_end_state(&fixture).await;
    let w = World::start(&fixture).await;
    let through_localhost = [
        "move",
        "--context",
        "source-localhost",
        "--to-context",
        "target",
        "-n",
        "ns1",
    ];

    assert!(kill_at(&w, &MOVE_NS1, KillPoint::Writes(8)).await);
    let out = w
        .plugin(&[&through_localhost[..], &["--rollback"]].concat())
        .await;
    assert_eq!(out.code, 0, "rollback through localhost: {}", out.stderr);
    assert!(out.stdout.contains("rolled back"), "{}", out.stdout);
    assert!(w.target.lease().is_none() && w.source.lease().is_none());

    assert!(kill_at(&w, &MOVE_NS1, KillPoint::Writes(8)).await);
    let out = w
        .plugin(&[&through_localhost[..], &["--resume"]].concat())
        .await;
    assert_eq!(out.code, 0, "resume through localhost: {}", out.stderr);
    assert!(
        out.stderr
            .contains("continuing the interrupted move recorded in"),
        "{}",
        out.stderr
    );
    assert_eq!(end_state(&w.source), clean_source);
    assert_eq!(end_state(&w.target), clean_target);
}

/// No hint ever unpauses a Cluster a move holds or was interrupted in: seen from the target of an
/// interrupted move (its copies made paused), `ready` and a move the other way name the move and
/// tell to continue or undo it — never `kubectl patch … '{"spec":{"paused":false}}'`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_hint_unpauses_an_interrupted_moves_copies() {
    let fixture = Fixture::workload(&["w1", "w2"]);
    let w = World::start(&fixture).await;
    assert!(kill_at(&w, &MOVE_NS1, KillPoint::Writes(14)).await);
    let copy = w
        .target
        .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
        .expect("the Cluster's copy was made before the kill");
    assert_eq!(copy["spec"]["paused"], true);
    let back = crate::move_world::MOVE_BACK;
    for args in [
        vec!["ready", "foo", "-n", "ns1", "--context", "target"],
        back.to_vec(),
        [&back[..], &["--dry-run=server"]].concat(),
    ] {
        let out = w.plugin(&args).await;
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        let said = format!("{}{}", out.stdout, out.stderr);
        assert!(!said.contains(r#"paused":false"#), "{args:?}: {said}");
        assert!(
            (said.contains("created paused and has not finished")
                || said.contains("a kubectl-capi move paused it and did not finish"))
                && said.contains("--resume")
                && said.contains("--rollback"),
            "{args:?}: {said}"
        );
        // Neither waiting (a copy that cannot provision) nor freezing (the move's copies) is
        // offered for a Cluster mid-move.
        for misleading in [
            "--wait`",
            "kubectl capi pause",
            "delete it there or pass --overwrite-existing",
        ] {
            assert!(
                !said.contains(misleading),
                "{args:?}: {misleading} in {said}"
            );
        }
        if args[0] == "move" {
            assert!(
                said.contains("finishing or undoing that move settles them — do not delete them"),
                "the originals in the way, folded into one refusal: {said}"
            );
        }
        assert!(
            said.contains("finish or undo the kubectl-capi move that paused its Cluster first")
                || !said.contains("still provisioning"),
            "{args:?}: {said}"
        );
    }
    // A move the other way reaches the journal's copy (in its target): it gives the commands
    // that continue the move and undo it, in this user's flags — and they work when pasted.
    let out = w.plugin(&back).await;
    let resume = out
        .stderr
        .split('`')
        .find(|part| part.starts_with("kubectl capi move") && part.ends_with("--resume"))
        .unwrap_or_else(|| panic!("a pasteable --resume: {}", out.stderr))
        .to_string();
    assert!(
        out.stderr
            .contains("a kubectl-capi move paused it and did not finish"),
        "{}",
        out.stderr
    );
    let out = w.paste(&resume).await;
    assert_eq!(out.code, 0, "{resume}: {}", out.stderr);
    let moved = w
        .target
        .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
        .unwrap();
    assert!(moved["spec"]["paused"].is_null(), "unpaused at the end");
    assert!(
        moved["metadata"]["annotations"]["kubectl-capi.dev/moved-by"].is_null(),
        "and the mark is gone"
    );
}
