//! One writer at a time: every command that writes for a move holds the source's lease, so a
//! second command — a rollback, a resume, another move, a pause — started while a move writes is
//! refused before it writes anything, naming the holder; a holder that was killed is taken over
//! once its lease has expired. Real binaries against sandbox servers.

use std::time::Duration;

use capi_sandbox::{ApiServer, FaultAction, FaultRule};

use crate::common::Writes;
use crate::move_world::{Fixture, MOVE_NS1, World, end_state};

/// Someone else at another terminal: impersonated, so the servers log their writes apart.
const INTRUDER: &str = "intruder";

/// What `user` changed in `server` (a refused lease create is an answer, not a change).
fn changes_by(server: &ApiServer, user: &str) -> Vec<String> {
    server
        .mutations()
        .iter()
        .filter(|r| r.user == user)
        .map(|r| format!("{} {} {:?}", r.verb, r.resource, r.name))
        .collect()
}

/// Holds each real write of `verb` by the plugin for `each` before serving it, so that a move
/// stays in the phase that writes it.
fn slow(server: &ApiServer, verb: &str, each: Duration) {
    server.inject(
        FaultRule::new(FaultAction::Latency(each))
            .verbs(&[verb])
            .dry_run(false)
            .agent(crate::common::PLUGIN_AGENT),
    );
}

/// How many user objects the plugin has written with `verb` to `server` (not namespaces, the
/// journal's copy or its lease).
fn objects_written(server: &ApiServer, verb: &str) -> usize {
    server
        .writes()
        .iter()
        .filter(|r| r.verb == verb && r.agent.starts_with(crate::common::PLUGIN_AGENT))
        .filter(|r| r.resource != "namespaces" && r.resource != "configmaps")
        .count()
}

/// Waits (polling the servers' logs) until `reached`, while `child` still runs.
async fn until(child: &mut tokio::process::Child, reached: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !reached() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the move ended before the point the test waits for"
        );
        assert!(tokio::time::Instant::now() < deadline, "never reached");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A move of ns1 in the background, one write at a time so that it stays a while in each phase.
fn start_move(w: &World, env: &[(&str, &str)]) -> tokio::process::Child {
    let mut args = MOVE_NS1.to_vec();
    args.extend(["--concurrency", "1"]);
    let mut command = w.command(&args);
    for (name, value) in env {
        command.env(name, value);
    }
    command.spawn().unwrap()
}

/// Runs `args` as the intruder, with a state directory of its own (another machine).
async fn intrude(w: &World, args: &[&str]) -> crate::common::Output {
    let mut full: Vec<&str> = args.to_vec();
    full.extend(["--as", INTRUDER]);
    let mut command = w.command(&full);
    command.env("XDG_STATE_HOME", w.dir.path().join("intruder-state"));
    command.output().await.unwrap().into()
}

fn grant_intruder(w: &World) {
    for server in [&w.source, &w.target] {
        server.grant(INTRUDER, "*", "*", "*");
    }
}

/// The end state of a clean move of `fixture`'s ns1, for comparison.
pub async fn clean_end_state(
    fixture: &Fixture,
) -> (
    std::collections::BTreeMap<String, serde_json::Value>,
    std::collections::BTreeMap<String, serde_json::Value>,
) {
    let clean = World::start(fixture).await;
    clean.move_and_check(&["-n", "ns1"]).await;
    (end_state(&clean.source), end_state(&clean.target))
}

fn assert_refused_naming(out: &crate::common::Output, holder_pid: u32, what: &str) {
    assert_eq!(out.code, 1, "{what}: {}", out.stderr);
    for part in [
        "holds the lease kube-system/kubectl-capi",
        &format!("process {holder_pid} on "),
        "`kubectl capi move -n ns1 --context source --to-context target`",
        "wait until it ends",
        "unrenewed for 3s takes it over",
    ] {
        assert!(
            out.stderr.contains(part),
            "{what}: {part:?} in {}",
            out.stderr
        );
    }
}

/// Starts a move of ns1 whose writes of `verb` to `server` are slowed, waits until it wrote two
/// objects so, runs each of `intruders` as another user from another machine — each must be
/// refused naming the move and change nothing — then lets the move end as a clean one would.
async fn intruders_during(verb: &str, in_target: bool, intruders: Vec<(&str, Vec<&str>)>) {
    let fixture = Fixture::workload(&["w1", "w2"]);
    let (clean_source, clean_target) = clean_end_state(&fixture).await;
    let w = World::start(&fixture).await;
    let server = if in_target { &w.target } else { &w.source };
    grant_intruder(&w);
    // Slow enough that every intruder is refused while the move still writes.
    slow(server, verb, Duration::from_millis(300));
    // A short lease: its renewals (a twelfth of it) show the intruders at once that it lives.
    let mut mover = start_move(&w, &[(kubectl_capi::kube::lease_timing::DURATION_ENV, "3")]);
    let pid = mover.id().unwrap();
    until(&mut mover, || objects_written(server, verb) >= 2).await;
    for (what, args) in intruders {
        let out = intrude(&w, &args).await;
        assert_refused_naming(&out, pid, what);
    }
    assert!(
        mover.try_wait().unwrap().is_none(),
        "the move was still writing while the others were refused"
    );
    for server in [&w.source, &w.target] {
        assert_eq!(changes_by(server, INTRUDER), Vec::<String>::new());
    }
    server.clear_faults();
    let out: crate::common::Output = mover.wait_with_output().await.unwrap().into();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(end_state(&w.target), clean_target, "every object once");
    assert_eq!(end_state(&w.source), clean_source);
    assert!(w.source.lease().is_none(), "released at the end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_started_while_a_move_creates_are_refused_and_write_nothing() {
    // The scenario that lost two clusters: a rollback of the live move from another shell.
    intruders_during(
        "create",
        true,
        vec![
            ("rollback", [&MOVE_NS1[..], &["--rollback"]].concat()),
            ("resume", [&MOVE_NS1[..], &["--resume"]].concat()),
            ("a second move", MOVE_NS1.to_vec()),
            (
                "pause of a Cluster being moved",
                vec!["pause", "foo", "-n", "ns1", "--context", "source"],
            ),
            (
                "resume of a Cluster being moved",
                vec!["resume", "foo", "-n", "ns1", "--context", "source"],
            ),
            (
                "pause of the copies in the target",
                vec!["pause", "--all", "-n", "ns1", "--context", "target"],
            ),
            (
                "resume of the copies in the target",
                vec!["resume", "--all", "-n", "ns1", "--context", "target"],
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_started_while_a_move_deletes_are_refused_and_write_nothing() {
    // A second move once took the live move for an interrupted one and finished it in parallel.
    intruders_during(
        "delete",
        false,
        vec![
            ("a second move", MOVE_NS1.to_vec()),
            ("resume", [&MOVE_NS1[..], &["--resume"]].concat()),
            ("rollback", [&MOVE_NS1[..], &["--rollback"]].concat()),
            (
                "pause in the target",
                vec!["pause", "--all", "-n", "ns1", "--context", "target"],
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_identical_moves_started_together_exactly_one_proceeds() {
    let fixture = Fixture::workload(&["w1", "w2"]);
    let (clean_source, clean_target) = clean_end_state(&fixture).await;
    let w = World::start(&fixture).await;
    // Long enough that the two overlap whatever the order they start in.
    slow(&w.target, "create", Duration::from_millis(50));
    let run = || async {
        let mut command = w.command(&MOVE_NS1);
        command.env(kubectl_capi::kube::lease_timing::DURATION_ENV, "3");
        crate::common::Output::from(command.output().await.unwrap())
    };
    let (a, b) = tokio::join!(run(), run());
    let mut codes = [a.code, b.code];
    codes.sort();
    assert_eq!(codes, [0, 1], "{}\n---\n{}", a.stderr, b.stderr);
    let (moved, refused) = if a.code == 0 { (&a, &b) } else { (&b, &a) };
    assert!(
        refused
            .stderr
            .contains("holds the lease kube-system/kubectl-capi"),
        "{}",
        refused.stderr
    );
    assert!(refused.stdout.is_empty(), "{}", refused.stdout);
    assert!(
        moved.stdout.starts_with("moved 1 Cluster(s)"),
        "{}",
        moved.stdout
    );
    assert_eq!(end_state(&w.target), clean_target);
    assert_eq!(end_state(&w.source), clean_source);
}

/// `kill -9`, then the same command again at once: the holder was a process on this machine
/// that no longer exists, so its leases are taken over without watching them go unrenewed for a
/// whole duration — only once the writes it may have sent just before are done (each lasts no
/// longer than its renew deadline, and tells the server so), which it says — and the move
/// converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holders_lease_is_taken_over_once_its_last_writes_are_done() {
    let fixture = Fixture::workload(&["w1", "w2"]);
    let (clean_source, clean_target) = clean_end_state(&fixture).await;
    let w = World::start(&fixture).await;
    slow(&w.target, "create", Duration::from_millis(100));
    // A 3 s lease: its writes last at most its 2 s renew deadline.
    let mut mover = start_move(&w, &[(kubectl_capi::kube::lease_timing::DURATION_ENV, "3")]);
    let pid = mover.id().unwrap();
    until(&mut mover, || objects_written(&w.target, "create") >= 2).await;
    mover.start_kill().unwrap();
    mover.wait().await.unwrap();
    w.target.clear_faults();
    assert!(w.source.lease().is_some() && w.target.lease().is_some());

    let started = std::time::Instant::now();
    let out = w.plugin(&MOVE_NS1).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stderr
            .matches(&format!(
                "held it, but process {pid} has ended on this machine"
            ))
            .count(),
        2,
        "both leases taken over, each said: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("which ended on this machine; waiting")
            && out
                .stderr
                .contains("until the last writes it may have sent are done"),
        "{}",
        out.stderr
    );
    assert!(
        started.elapsed() < kubectl_capi::kube::lease_timing::DEFAULT_DURATION,
        "no waiting for the lease to go unrenewed"
    );
    assert!(
        out.stderr.contains("continuing the interrupted move"),
        "{}",
        out.stderr
    );
    assert_eq!(end_state(&w.target), clean_target);
    assert_eq!(end_state(&w.source), clean_source);
    assert!(w.source.lease().is_none() && w.target.lease().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_and_errors_release_the_lease() {
    let fixture = Fixture::workload(&["w1"]);
    let w = World::start(&fixture).await;
    // Refused by its preflight (a same-name Secret in the target): the lease goes with it.
    w.target
        .load(serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "ns1"}}))
        .ok();
    let taken = w
        .source
        .dump()
        .into_iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["namespace"] == "ns1")
        .unwrap();
    w.target
        .load(serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": taken["metadata"]["name"], "namespace": "ns1"}}))
        .unwrap();
    let out = w.plugin(&MOVE_NS1).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(w.source.lease().is_none(), "released after a refusal");
    assert!(
        w.source.mutations().iter().any(crate::common::is_lease),
        "it was taken"
    );

    // Ctrl-C while creating: the writes in flight finish, the lease is released, exit 130.
    capi_sandbox::api::delete(
        &w.target.client(),
        "v1",
        "Secret",
        "ns1",
        taken["metadata"]["name"].as_str().unwrap(),
    )
    .await
    .unwrap();
    slow(&w.target, "create", Duration::from_millis(150));
    let mut mover = start_move(&w, &[]);
    until(&mut mover, || objects_written(&w.target, "create") >= 2).await;
    let out = crate::common::interrupt(mover).await;
    assert_eq!(out.code, 130, "{}", out.stderr);
    assert!(w.source.lease().is_none(), "released after Ctrl-C");
    w.target.clear_faults();
    let out = w.plugin(&[&MOVE_NS1[..], &["--resume"]].concat()).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_permissions_are_reviewed_and_a_move_without_them_writes_nothing() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    w.source.deny("create", "leases");
    let out = w
        .plugin(&[&MOVE_NS1[..], &["--dry-run=server"]].concat())
        .await;
    out.assert_stderr(1, "missing permission in the source cluster: create leases.coordination.k8s.io in namespace kube-system");
    let out = w.plugin(&MOVE_NS1).await;
    assert_eq!(out.code, 1, "a missing permission refuses: {}", out.stderr);
    assert!(
        out.stderr
            .contains("taking the lease kube-system/kubectl-capi")
            && out
                .stderr
                .contains("leases.coordination.k8s.io in kube-system")
            && out.stderr.contains("403 Forbidden"),
        "{}",
        out.stderr
    );
    for server in [&w.source, &w.target] {
        assert!(
            server
                .writes()
                .iter()
                .all(|r| !r.agent.starts_with(crate::common::PLUGIN_AGENT)),
            "nothing written"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_removed_by_a_command_without_the_lease_keeps_its_original_in_the_source() {
    let w = World::start(&Fixture::workload(&["w1", "w2"])).await;
    slow(&w.source, "delete", Duration::from_millis(150));
    let mut mover = start_move(&w, &[]);
    until(&mut mover, || objects_written(&w.source, "delete") >= 1).await;
    // An older version's rollback takes no lease: it removes the Cluster's copy, which the move
    // deletes last from the source.
    capi_sandbox::api::delete(
        &w.target.client(),
        crate::move_world::CORE,
        "Cluster",
        "ns1",
        "foo",
    )
    .await
    .unwrap();
    w.source.clear_faults();
    let out: crate::common::Output = mover.wait_with_output().await.unwrap().into();
    assert_eq!(out.code, 2, "{}", out.stderr);
    // (The target's garbage collector took what the Cluster owned there with it.)
    assert!(
        out.stderr
            .contains("no longer in the target as this move created")
            && out.stderr.contains("their originals stay in the source"),
        "{}",
        out.stderr
    );
    assert!(
        crate::common::has_cluster(&w.source, "ns1", "foo"),
        "the original stays: the Cluster exists somewhere"
    );
    assert!(w.source.lease().is_none());
}

/// A lease another kubectl-capi command, on another machine, holds on `server`: taken
/// `stamped` from now by that machine's clock (which may be skewed), for `seconds`.
fn lease_from_elsewhere(server: &ApiServer, command: &str, stamped: i64, seconds: u32) {
    let now = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(stamped))
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    let holder = serde_json::json!({"host": "ops-laptop", "pid": 777, "command": command,
        "since": "2026-12-04T10:00:00Z"});
    server
        .load(
            serde_json::json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "kubectl-capi", "namespace": "kube-system",
                "annotations": {"kubectl-capi.dev/holder": holder.to_string()}},
            "spec": {"holderIdentity": "ops-laptop/777/1", "leaseDurationSeconds": seconds,
                "acquireTime": now, "renewTime": now}}),
        )
        .unwrap();
}

/// That other command, alive: it renews its lease on `server` every 100 ms, stamping it by its
/// own clock, `stamped` from now.
fn keep_renewing(server: &ApiServer, stamped: i64) -> tokio::task::JoinHandle<()> {
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(server.client(), "kube-system");
    tokio::spawn(async move {
        loop {
            let now = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(stamped))
                .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string();
            let renewal = serde_json::json!({"spec": {"renewTime": now}});
            let _ = leases
                .patch(
                    "kubectl-capi",
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&renewal),
                )
                .await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}

/// A lease held by a live command elsewhere (renewing it).
fn hold_lease(server: &ApiServer, command: &str) -> tokio::task::JoinHandle<()> {
    lease_from_elsewhere(server, command, 0, 60);
    keep_renewing(server, 0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_restores_and_dry_runs_respect_a_live_lease() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let backup = w.dir.path().join("backup");
    let out = w
        .plugin(&[
            "move",
            "--context",
            "source",
            "-n",
            "ns1",
            "--to-directory",
            backup.to_str().unwrap(),
        ])
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    let before = w.writes_per_server();
    let renewing = hold_lease(&w.source, "kubectl capi move -n ns1 --to-context elsewhere");
    let second = w.dir.path().join("second-backup");
    for args in [
        vec![
            "move",
            "--context",
            "source",
            "-n",
            "ns1",
            "--to-directory",
            second.to_str().unwrap(),
        ],
        [&MOVE_NS1[..], &["--dry-run=server"]].concat(),
    ] {
        let out = w.plugin(&args).await;
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(
                "`kubectl capi move -n ns1 --to-context elsewhere` (process 777 on ops-laptop"
            ),
            "{args:?}: {}",
            out.stderr
        );
    }
    // A restore writes into the target first: it takes the target's lease.
    renewing.abort();
    let _renewing = hold_lease(&w.target, "kubectl capi pause --all -n ns1");
    let out = w
        .plugin(&[
            "move",
            "--context",
            "target",
            "--from-directory",
            backup.to_str().unwrap(),
        ])
        .await;
    out.assert_stderr(1, "`kubectl capi pause --all -n ns1` (process 777");
    assert_eq!(w.writes_per_server(), before, "nothing written");
}

/// Takeover is decided by what the taker watches, never by comparing the holder's `renewTime`
/// with the taker's clock: a lease stamped five minutes in the past but renewed is live; one
/// stamped five minutes in the future but never renewed is taken over after its duration —
/// as a taker whose clock is skewed by ±5 minutes would see them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takers_clock_decides_nothing() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let pause = ["pause", "--all", "-n", "ns1", "--context", "source"];
    let command = "kubectl capi move -n ns1 --to-context elsewhere";
    lease_from_elsewhere(&w.source, command, -300, 2);
    let renewing = keep_renewing(&w.source, -300);
    let out = w.plugin(&pause).await;
    assert_eq!(out.code, 1, "a live lease is never taken: {}", out.stderr);
    assert!(
        out.stderr.contains("(process 777 on ops-laptop"),
        "{}",
        out.stderr
    );
    renewing.abort();
    let _ = renewing.await;

    capi_sandbox::api::delete(
        &w.source.client(),
        "coordination.k8s.io/v1",
        "Lease",
        "kube-system",
        "kubectl-capi",
    )
    .await
    .unwrap();
    lease_from_elsewhere(&w.source, command, 300, 2);
    let started = std::time::Instant::now();
    let out = w.plugin(&pause).await;
    assert_eq!(
        out.code, 0,
        "a gone holder's lease is taken over: {}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("held it, but it stayed unrenewed for 2s while this command watched it"),
        "{}",
        out.stderr
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "not the five minutes its stamp would say"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_loses_its_lease_stops_writing_and_can_be_resumed() {
    let fixture = Fixture::workload(&["w1", "w2"]);
    let (clean_source, clean_target) = clean_end_state(&fixture).await;
    let w = World::start(&fixture).await;
    slow(&w.target, "create", Duration::from_millis(150));
    let mut mover = start_move(&w, &[(kubectl_capi::kube::lease_timing::DURATION_ENV, "2")]);
    until(&mut mover, || objects_written(&w.target, "create") >= 2).await;
    // Another command takes the lease over (as it may once a holder seems gone).
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(w.source.client(), "kube-system");
    leases
        .patch(
            "kubectl-capi",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                &serde_json::json!({"spec": {"holderIdentity": "someone-else"}}),
            ),
        )
        .await
        .unwrap();
    let out: crate::common::Output = mover.wait_with_output().await.unwrap().into();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("lost the lease kube-system/kubectl-capi")
            && out.stderr.contains("stopped writing")
            && out.stderr.contains(
                "run `kubectl capi ready -n ns1 --context source` to see where the move stands"
            ),
        "{}",
        out.stderr
    );
    assert_eq!(
        w.source.lease().unwrap()["spec"]["holderIdentity"],
        "someone-else",
        "a lost lease is not deleted"
    );
    // Pasted, the command that shows where the move stands names the command that continues it.
    let stands = w.paste("kubectl capi ready -n ns1 --context source").await;
    assert_eq!(stands.code, 1, "mid-move: {}", stands.stderr);
    assert!(
        stands
            .stdout
            .contains("kubectl capi move --context source -n ns1 --to-context target --resume"),
        "{}",
        stands.stdout
    );
    // Once that one is gone, the move resumes and ends as a clean one.
    w.target.clear_faults();
    crate::common::expire_lease(&w.source).await;
    let out = w.plugin(&[&MOVE_NS1[..], &["--resume"]].concat()).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(end_state(&w.target), clean_target);
    assert_eq!(end_state(&w.source), clean_source);
}

/// A same-name object created in the target while the move creates (`kubectl create secret …`
/// from another shell) is not the move's copy because a create met 409: it carries no mark of
/// the move. The move stops before deleting anything from the source, names the object, exits
/// 1; the foreign object is never touched, and a rollback removes only the move's own copies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_same_name_object_that_appears_in_the_target_is_never_taken_for_the_moves_copy() {
    a_same_name_object_appears_in_the_target(false).await;
}

/// The same with the move's mark forged on it: the mark is readable by anyone who can read the
/// journal's copy or a copy in flight, so it proves nothing without the content the move sent.
/// It once adopted the forgery, removed its mark and deleted the real CA from the source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_same_name_object_with_a_forged_mark_is_never_taken_for_the_moves_copy() {
    a_same_name_object_appears_in_the_target(true).await;
}

async fn a_same_name_object_appears_in_the_target(forge_the_mark: bool) {
    let fixture = Fixture::workload(&["w1", "w2"]);
    let w = World::start(&fixture).await;
    slow(&w.target, "create", Duration::from_millis(150));
    let mut mover = start_move(&w, &[]);
    until(&mut mover, || objects_written(&w.target, "create") >= 2).await;
    // The mark, as a reader of the target sees it on a copy in flight.
    let mark = w
        .target
        .dump()
        .into_iter()
        .find_map(|o| {
            o["metadata"]["annotations"]["kubectl-capi.dev/moved-by"]
                .as_str()
                .map(str::to_string)
        })
        .expect("a copy in flight carries the mark");
    // The Secrets of ns1 the move has not created yet: the first that can still be created
    // in the target by someone else is.
    let secrets: Vec<String> = w
        .source
        .dump()
        .into_iter()
        .filter(|o| o["kind"] == "Secret" && o["metadata"]["namespace"] == "ns1")
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let mut foreign = None;
    for name in secrets.iter().rev() {
        let mut body = serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": "ns1"},
            "stringData": {"tls.crt": "FOREIGN"}});
        if forge_the_mark {
            body["metadata"]["annotations"] =
                serde_json::json!({"kubectl-capi.dev/moved-by": mark});
        }
        let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
            kube::Api::namespaced(w.target.client(), "ns1");
        let body: k8s_openapi::api::core::v1::Secret = serde_json::from_value(body).unwrap();
        if secrets
            .create(&kube::api::PostParams::default(), &body)
            .await
            .is_ok()
        {
            foreign = Some(name.clone());
            break;
        }
    }
    let foreign = foreign.expect("a Secret the move had not created yet");
    let foreign_before = w.target.object("", "secrets", "ns1", &foreign).unwrap();
    w.target.clear_faults();
    let out: crate::common::Output = mover.wait_with_output().await.unwrap().into();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "Secret ns1/{foreign} appeared in the target while this move ran, and not by this move"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(
        objects_written(&w.source, "delete"),
        0,
        "nothing deleted from the source"
    );
    for name in &secrets {
        assert!(
            w.source.object("", "secrets", "ns1", name).is_some(),
            "the source keeps {name}"
        );
    }
    let still = w.target.object("", "secrets", "ns1", &foreign).unwrap();
    assert_eq!(
        still["metadata"], foreign_before["metadata"],
        "never touched (its mark, forged or not, stays)"
    );

    // Undone: the move's own copies go, the foreign Secret stays.
    let out = w.plugin(&[&MOVE_NS1[..], &["--rollback"]].concat()).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let still = w.target.object("", "secrets", "ns1", &foreign).unwrap();
    assert_eq!(
        still["metadata"], foreign_before["metadata"],
        "a rollback leaves it too"
    );
    assert!(
        !crate::common::has_cluster(&w.target, "ns1", "foo"),
        "the move's copies are gone"
    );
}

/// A holder stopped (SIGSTOP) for longer than its lease is taken over by a rollback; once it
/// runs again (SIGCONT) it sends not one more write — its renew deadline passed while it was
/// stopped, and the write gate checks it before every request — and exits 1 saying it lost
/// the lease, not blaming the other end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_stopped_past_its_lease_writes_nothing_once_it_runs_again() {
    stopped_past_its_lease(false).await;
}

/// The same, rolled back from this machine: the stopped holder, run again, leaves the local
/// journal the rollback wrote as it is (it once put back "creating", and every later move of
/// those Clusters from here was refused until the file was deleted by hand).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_stopped_past_its_lease_leaves_the_local_journal_to_its_successor() {
    let w = stopped_past_its_lease(true).await;
    let journal = crate::move_world::local_journal(&w);
    assert_eq!(journal["stage"], "rolledBack", "{journal}");
    let again = w.plugin(&MOVE_NS1).await;
    assert_eq!(again.code, 0, "a later move goes on: {}", again.stderr);
}

/// A move stopped (SIGSTOP) while it creates, rolled back meanwhile — from another machine, or
/// from this one (`from_here`) — then run again (SIGCONT): it writes nothing and says it lost the
/// lease.
async fn stopped_past_its_lease(from_here: bool) -> World {
    let fixture = Fixture::workload(&["w1", "w2"]);
    let w = World::start(&fixture).await;
    grant_intruder(&w);
    slow(&w.target, "create", Duration::from_millis(150));
    let mut mover = start_move(&w, &[(kubectl_capi::kube::lease_timing::DURATION_ENV, "2")]);
    let pid = mover.id().unwrap().to_string();
    until(&mut mover, || objects_written(&w.target, "create") >= 2).await;
    let signal = |which: &str| {
        let sent = std::process::Command::new("kill")
            .args([which, &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill {which}");
    };
    signal("-STOP");
    w.target.clear_faults();
    // Another machine rolls the move back: it watches the stopped holder's leases go unrenewed
    // for their duration, takes them over, and undoes the move.
    let rollback = [&MOVE_NS1[..], &["--rollback"]].concat();
    let out = match from_here {
        true => w.plugin(&rollback).await,
        false => intrude(&w, &rollback).await,
    };
    out.assert_stderr(0, "stayed unrenewed for 2s while this command watched it");
    let by_the_holder = || {
        [&w.source, &w.target]
            .iter()
            .flat_map(|s| s.mutations())
            .filter(|r| r.user != INTRUDER && r.agent.starts_with(crate::common::PLUGIN_AGENT))
            .count()
    };
    let before = by_the_holder();
    let journal_copies = crate::move_world::journal_copies;
    assert_eq!(
        journal_copies(&w),
        0,
        "the rollback removed the journal's copy"
    );

    signal("-CONT");
    let out: crate::common::Output = mover.wait_with_output().await.unwrap().into();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("lost the lease kube-system/kubectl-capi")
            && out.stderr.contains("to see where the move stands"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("did not answer"), "{}", out.stderr);
    assert_eq!(by_the_holder(), before, "not one write after SIGCONT");
    for server in [&w.source, &w.target] {
        let unfenced = crate::common::unfenced_writes(server);
        assert!(unfenced.is_empty(), "{unfenced:#?}");
    }
    assert_eq!(
        journal_copies(&w),
        0,
        "no phantom journal of an interrupted move"
    );
    w
}

/// Two moves from two management clusters into one target, the same Cluster names, started
/// together: both hold the target's lease for their whole run, so exactly one proceeds; the other
/// is refused naming it and writes nothing in either of its clusters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_moves_from_two_sources_into_one_target_exactly_one_proceeds() {
    use capi_sandbox::crds::{self, Dialect};
    let fixture = Fixture::workload(&["w1", "w2"]);
    let w = World::start(&fixture).await;
    let other = ApiServer::new(capi_sandbox::ServerOptions::default());
    crds::install_with_inventory(&other, Dialect::V1beta2).unwrap();
    fixture.load(&[&other]).unwrap();
    let serving = other.serve(0).await.unwrap();
    let other_kubeconfig = w.dir.path().join("other-source");
    capi_sandbox::apiserver::write_kubeconfig(
        &other_kubeconfig,
        &[serving.kubeconfig_entry("other")],
    )
    .unwrap();
    grant_intruder(&w);
    other.grant(INTRUDER, "*", "*", "*");
    slow(&w.target, "create", Duration::from_millis(50));
    let world_kubeconfig = w.dir.path().join("kubeconfig");
    let run = |args: Vec<String>| {
        let mut command = w.command(&args.iter().map(String::as_str).collect::<Vec<_>>());
        command.env(kubectl_capi::kube::lease_timing::DURATION_ENV, "3");
        async move { crate::common::Output::from(command.output().await.unwrap()) }
    };
    let from_other: Vec<String> = [
        "move",
        "--kubeconfig",
        other_kubeconfig.to_str().unwrap(),
        "--context",
        "other",
        "--to-kubeconfig",
        world_kubeconfig.to_str().unwrap(),
        "--to-context",
        "target",
        "-n",
        "ns1",
        "--as",
        INTRUDER,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (a, b) = tokio::join!(
        run(MOVE_NS1.iter().map(|s| s.to_string()).collect()),
        run(from_other)
    );
    let mut codes = [a.code, b.code];
    codes.sort();
    assert_eq!(codes, [0, 1], "{}\n---\n{}", a.stderr, b.stderr);
    let refused = if a.code == 1 { &a } else { &b };
    assert!(
        refused
            .stderr
            .contains("holds the lease kube-system/kubectl-capi"),
        "{}",
        refused.stderr
    );
    // What the refused one wrote: its objects, in its source and in the target (not leases).
    let objects_by = |server: &ApiServer, intruder: bool| {
        server
            .mutations()
            .iter()
            .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
            .filter(|r| (r.user == INTRUDER) == intruder)
            .filter(|r| r.resource != "leases")
            .count()
    };
    let (its_source, by_intruder) = if b.code == 1 {
        (&other, true)
    } else {
        (&w.source, false)
    };
    assert_eq!(
        objects_by(its_source, by_intruder),
        0,
        "nothing in its source"
    );
    assert_eq!(
        objects_by(&w.target, by_intruder),
        0,
        "nothing in the target"
    );
    assert!(crate::common::has_cluster(its_source, "ns1", "foo"));
}

/// Gives `server` a Lease held by `command` on host ops-9 for 1 s, last renewed long ago: this
/// machine cannot tell whether its holder lives, so a command waits its duration out.
pub async fn held_from_another_host(server: &ApiServer, command: &str) {
    let holder = serde_json::json!({"host": "ops-9", "pid": 4242, "command": command,
        "since": "2026-12-04T10:00:00Z"});
    let lease = serde_json::json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "kubectl-capi", "namespace": "kube-system",
            "annotations": {"kubectl-capi.dev/holder": holder.to_string()}},
        "spec": {"holderIdentity": "ops-9/4242/1", "leaseDurationSeconds": 1,
            "renewTime": "2026-12-04T10:00:00.000000Z"}});
    capi_sandbox::api::create(&server.client(), &lease)
        .await
        .unwrap();
}

/// A Lease held from another host (or forged to say so) is waited out for its duration — never
/// silently: the command says at once who holds it, since when, until when it waits and how to
/// see the Lease (a command that works when pasted); a server-side dry run reports what it found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_held_from_another_host_is_waited_for_out_loud() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    held_from_another_host(&w.source, "kubectl capi move -n ns1 --to-context b").await;
    let out = w.move_with(&["-n", "ns1", "--dry-run=server"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let waiting = out
        .stderr
        .lines()
        .find(|l| l.contains("waiting until"))
        .unwrap_or_else(|| panic!("the wait is said: {}", out.stderr));
    for part in [
        "is held by `kubectl capi move -n ns1 --to-context b` (process 4242 on ops-9, since 2026-12-04T10:00:00Z)",
        "renewed 2026-12-04T10:00:00Z, for 1s",
        "`kubectl get lease kubectl-capi -n kube-system -o yaml --context source`",
    ] {
        assert!(waiting.contains(part), "{part}: {waiting}");
    }
    assert!(
        out.stderr.contains(
            "stayed unrenewed for 1s while this command watched it; a move would take it over"
        ),
        "the dry run reports what it found: {}",
        out.stderr
    );
    let hint = waiting.split('`').nth(3).unwrap();
    let shown = w.paste(hint).await;
    assert_eq!(shown.code, 0, "{hint}: {}", shown.stderr);
    assert!(shown.stdout.contains("ops-9/4242/1"), "{}", shown.stdout);
}

/// A takeover applied whose answer was lost: the retry conflicts with it, and the Lease read
/// back is this command's own — it goes on holding it, instead of saying another command took it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_whose_answer_was_lost_is_read_back_as_this_commands_own() {
    use capi_sandbox::{FaultAction, FaultRule};
    let w = World::start(&Fixture::workload(&["w1"])).await;
    held_from_another_host(&w.source, "kubectl capi pause --all").await;
    w.source.inject(
        FaultRule::new(FaultAction::ApplyThenStall(Duration::from_secs(5)))
            .verbs(&["patch"])
            .resource("leases")
            .agent(crate::common::PLUGIN_AGENT)
            .times(1),
    );
    let out = w
        .plugin(&[
            "pause",
            "--all",
            "-n",
            "ns1",
            "--context",
            "source",
            "--request-timeout",
            "1s",
        ])
        .await;
    out.assert_stderr(0, "took over the lease");
    assert!(!out.stderr.contains("at the same moment"), "{}", out.stderr);
    assert!(w.source.lease().is_none(), "released at the end");
}
