//! `move --to-cluster NAME`: a self-hosted pivot into the workload cluster NAME of the source,
//! reached through its kubeconfig Secret, which stays in memory.

use std::path::{Path, PathBuf};

use capi_sandbox::controllers::Delays;
use capi_sandbox::crds::Dialect;
use capi_sandbox::environment::Options;
use serde_json::json;

use crate::common::Writes;
use crate::moving::{Pair, workload};

/// What only the workload cluster's kubeconfig holds: its context's name.
const CANARY: &str = "w1-admin@w1";

async fn self_hosted() -> Pair {
    let mut options = Options::new(Dialect::V1beta2, Delays::millis(20));
    options.self_hosted = Some("w1".into());
    Pair::start_with(options, &[workload("w1", 1, 1)]).await
}

/// Every file under `dir` (recursively) that holds `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if std::fs::read(&path)
            .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(needle))
        {
            found.push(path);
        }
    }
    found
}

/// Writes by the plugin to either management cluster.
fn plugin_writes(pair: &Pair) -> usize {
    [&pair.env.source, &pair.env.target]
        .iter()
        .map(|managed| {
            managed
                .server
                .writes()
                .iter()
                .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
                .count()
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_into_the_workload_cluster_itself_goes_through_its_secret_and_writes_no_kubeconfig()
{
    let pair = self_hosted().await;
    let out = pair
        .plugin(&["move", "w1", "--to-cluster", "w1", "--verify"])
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("moved 1 Cluster(s)"), "{}", out.stdout);
    assert!(
        out.stdout.contains("cluster.cluster.x-k8s.io/w1 verified"),
        "the target adopted it: {}",
        out.stdout
    );
    let target = &pair.env.target.server;
    assert!(
        crate::common::has_cluster(target, "default", "w1"),
        "the Cluster is in the cluster it describes"
    );
    assert!(!crate::common::has_cluster(
        &pair.env.source.server,
        "default",
        "w1"
    ));
    // The kubeconfig was never written: not in the journal, the state or the test's files.
    let temp = std::env::temp_dir();
    for dir in [
        pair.dir.path().to_path_buf(),
        temp.join(format!("kubectl-capi-test-state-{}", std::process::id())),
        temp.join("kubectl-capi-test-home"),
    ] {
        assert_eq!(
            files_holding(&dir, CANARY),
            Vec::<PathBuf>::new(),
            "{}",
            dir.display()
        );
    }
    assert!(!out.stdout.contains(CANARY) && !out.stderr.contains(CANARY));

    // Run again: the Cluster and its Secret are in the target now, reached through the copy
    // the source keeps; the finished move says so.
    let again = pair.plugin(&["move", "w1", "--to-cluster", "w1"]).await;
    again.assert_stderr(0, "nothing left to move");
    // Without that copy, the local record alone says it — for the Cluster it moved only.
    capi_sandbox::api::delete(
        &pair.env.source.server.client(),
        "v1",
        "Secret",
        "default",
        "kubectl-capi-move-kubeconfig-w1",
    )
    .await
    .unwrap();
    let again = pair.plugin(&["move", "w1", "--to-cluster", "w1"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains("moved Cluster default/w1 into itself")
            && again.stderr.contains("nothing left to move"),
        "{}",
        again.stderr
    );
    let other = pair.plugin(&["move", "w9", "--to-cluster", "w1"]).await;
    assert_eq!(other.code, 2, "{}", other.stderr);
    assert!(
        other
            .stderr
            .contains("pass the workload cluster's kubeconfig with --to-kubeconfig instead"),
        "{}",
        other.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_cluster_that_cannot_be_reached_is_refused_before_any_write() {
    let pair = self_hosted().await;
    let source = pair.env.source.server.client();
    let patch_secret = |patch: serde_json::Value| {
        let source = source.clone();
        async move {
            capi_sandbox::api::merge_patch(
                &source,
                "v1",
                "Secret",
                "default",
                "w1-kubeconfig",
                &patch,
            )
            .await
            .unwrap();
        }
    };
    let set_value = |value: &str| patch_secret(json!({"stringData": {"value": value}}));
    let refused = |out: &crate::common::Output, code: i32, says: &str| {
        assert_eq!(out.code, code, "{}\n{}", out.stderr, out.stdout);
        assert!(out.stderr.contains(says), "{says} in {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    };

    let out = pair.plugin(&["move", "nope", "--to-cluster", "nope"]).await;
    refused(&out, 2, "nope");

    set_value("contexts: [this is not, a kubeconfig SECRET-TEXT").await;
    let out = pair.plugin(&["move", "w1", "--to-cluster", "w1"]).await;
    refused(
        &out,
        2,
        "Secret default/w1-kubeconfig of the source does not parse as a kubeconfig",
    );
    assert!(!out.stderr.contains("SECRET-TEXT"), "{}", out.stderr);
    // Pasted, the hint shows the Secret (its data as kubectl shows it, no more).
    let look = out.stderr.split('`').nth(3).unwrap();
    assert_eq!(look, "kubectl get secret w1-kubeconfig -n default");
    let shown = pair.paste(look).await;
    assert_eq!(shown.code, 0, "{look}: {}", shown.stderr);
    assert!(shown.stdout.contains("w1-kubeconfig"), "{}", shown.stdout);

    let dead = "apiVersion: v1\nkind: Config\ncurrent-context: w1\nclusters:\n- name: w1\n  cluster: {server: 'https://127.0.0.1:1'}\nusers:\n- name: w1\n  user: {}\ncontexts:\n- name: w1\n  context: {cluster: w1, user: w1}\n";
    set_value(dead).await;
    let out = pair
        .plugin(&[
            "move",
            "w1",
            "--to-cluster",
            "w1",
            "--request-timeout",
            "2s",
        ])
        .await;
    refused(&out, 2, "127.0.0.1:1");

    // A Secret without its kubeconfig (the controllers would make a deleted one again).
    patch_secret(json!({"data": {"value": null}})).await;
    let out = pair.plugin(&["move", "w1", "--to-cluster", "w1"]).await;
    refused(&out, 1, "Secret default/w1-kubeconfig");

    assert_eq!(plugin_writes(&pair), 0, "nothing written anywhere");
}

/// A pivot killed after its Cluster's kubeconfig Secret left the source: the move kept the
/// kubeconfig beside its journal, so `--resume` reaches the target and converges, and the kept
/// copy goes when the move is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pivot_killed_after_its_secret_left_the_source_resumes_through_the_kubeconfig_it_kept() {
    use capi_sandbox::{FaultAction, FaultRule};

    let pair = self_hosted().await;
    let source = pair.env.source.server.clone();
    source.inject(
        FaultRule::new(FaultAction::Latency(std::time::Duration::from_millis(100)))
            .verbs(&["delete"])
            .dry_run(false)
            .agent(crate::common::PLUGIN_AGENT),
    );
    let mut command = crate::common::plugin_command(
        Some(&pair.kubeconfig),
        &["move", "w1", "--to-cluster", "w1", "--concurrency", "1"],
    );
    // A short lease, so that the killed holder's is taken over soon.
    let mut child = command
        .env(kubectl_capi::kube::lease_timing::DURATION_ENV, "1")
        .spawn()
        .unwrap();
    let secret_gone = || {
        source
            .object("", "secrets", "default", "w1-kubeconfig")
            .is_none()
    };
    crate::common::wait_until("the kubeconfig Secret to leave the source", secret_gone).await;
    child.kill().await.unwrap();
    source.clear_faults();
    let kept = || {
        source
            .object("", "secrets", "default", "kubectl-capi-move-kubeconfig-w1")
            .is_some()
    };
    assert!(kept(), "kept while the move is unfinished");
    // The killed holder's lease expires a second after its last renewal (time is what it waits
    // for).
    let lease = source.lease().expect("a killed holder leaves its lease");
    let renewed: jiff::Timestamp = lease["spec"]["renewTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let left =
        (renewed + jiff::SignedDuration::from_secs(1)).duration_since(jiff::Timestamp::now());
    if left.is_positive() {
        tokio::time::sleep(left.unsigned_abs() + std::time::Duration::from_millis(100)).await;
    }

    let out = pair
        .plugin(&["move", "w1", "--to-cluster", "w1", "--resume"])
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        crate::common::has_cluster(&pair.env.target.server, "default", "w1")
            && !crate::common::has_cluster(&source, "default", "w1"),
        "moved: {}",
        out.stderr
    );
    assert!(
        kept(),
        "w1-kubeconfig went into w1 itself, so the source keeps the only way there"
    );
    let temp = std::env::temp_dir();
    for dir in [
        pair.dir.path().to_path_buf(),
        temp.join(format!("kubectl-capi-test-state-{}", std::process::id())),
    ] {
        assert_eq!(files_holding(&dir, CANARY), Vec::<PathBuf>::new());
    }
}

/// `ready --to-cluster` checks the target a pivot would move into, as the move would reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_checks_the_workload_cluster_a_pivot_would_move_into() {
    let pair = self_hosted().await;
    let out = pair.plugin(&["ready", "w1", "--to-cluster", "w1"]).await;
    out.assert_stderr(0, "runs every provider the source does");
    capi_sandbox::api::delete(
        &pair.env.target.server.client(),
        "clusterctl.cluster.x-k8s.io/v1alpha3",
        "Provider",
        "capd-system",
        "infrastructure-docker",
    )
    .await
    .unwrap();
    let out = pair.plugin(&["ready", "w1", "--to-cluster", "w1"]).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("workload cluster w1 cannot take the move")
            && out.stderr.contains("docker"),
        "{}",
        out.stderr
    );
    assert_eq!(plugin_writes(&pair), 0, "ready only reads");
}

/// A workload cluster still provisioning cannot take a move (nor has it a kubeconfig yet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_cluster_still_provisioning_is_refused() {
    use capi_sandbox::controllers::Step;

    let pair = self_hosted().await;
    let source = &pair.env.source;
    source.controllers.holds.hold(None, Step::Node);
    pair.env
        .create_workload(&workload("w2", 1, 0))
        .await
        .unwrap();
    let holds = source.controllers.holds.clone();
    crate::common::wait_until("w2's first node to be held", || !holds.waiting().is_empty()).await;
    let out = pair.plugin(&["move", "w2", "--to-cluster", "w2"]).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("Cluster default/w2 is not provisioned yet, so it cannot take the move")
            && out
                .stderr
                .contains("`kubectl capi ready w2 -n default --wait`"),
        "{}",
        out.stderr
    );
    assert_eq!(plugin_writes(&pair), 0);
    // Pasted, the hint waits until w2 has its node, then says it can move.
    let waited = crate::common::releasing_held_nodes(
        source,
        pair.paste("kubectl capi ready w2 -n default --wait"),
    )
    .await;
    assert_eq!(waited.code, 0, "{}", waited.stderr);
    assert!(waited.stdout.contains("w2"), "{}", waited.stdout);
}

/// Stores `value` as the kubeconfig in Secret default/w1-kubeconfig of `source`.
async fn store_kubeconfig(source: &capi_sandbox::ApiServer, value: &str) {
    capi_sandbox::api::merge_patch(
        &source.client(),
        "v1",
        "Secret",
        "default",
        "w1-kubeconfig",
        &json!({"stringData": {"value": value}}),
    )
    .await
    .unwrap();
}

/// Stores `clean` with `field` of every cluster or user (`list`) set to `value`.
async fn store_with(
    source: &capi_sandbox::ApiServer,
    clean: &serde_json::Value,
    (list, field, value): (&str, &str, &serde_json::Value),
) {
    let mut kubeconfig = clean.clone();
    let inner = if list == "users" { "user" } else { "cluster" };
    for entry in kubeconfig[list].as_array_mut().unwrap() {
        entry[inner][field] = value.clone();
    }
    store_kubeconfig(source, &kubeconfig.to_string()).await;
}

/// A kubeconfig a cluster stores is data, never a command: a `NAME-kubeconfig` Secret whose
/// kubeconfig would run a program, open a local file, or send the credentials elsewhere is
/// refused before any connection, one line per field naming the Secret and the field (never its
/// value) — and the canary command never ran, the canary file was never opened, the target
/// never heard from the plugin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_kubeconfig_that_would_run_or_read_anything_is_refused_before_any_connection() {
    let pair = self_hosted().await;
    let source = pair.env.source.server.clone();
    let target = pair.env.target.server.clone();
    let secret = source
        .object("", "secrets", "default", "w1-kubeconfig")
        .unwrap();
    let encoded = secret["data"]["value"].as_str().unwrap();
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    let clean: serde_json::Value =
        serde_saphyr::from_str(std::str::from_utf8(&text).unwrap()).unwrap();

    // The canaries: a command that leaves a mark if it runs, and a FIFO whose opening by a
    // reader lets a writer thread through (so an open is seen even if nothing is read).
    let canaries = pair.dir.path().join("canaries");
    std::fs::create_dir_all(&canaries).unwrap();
    let ran = canaries.join("ran");
    let command = canaries.join("canary.sh");
    std::fs::write(&command, format!("#!/bin/sh\ntouch {}\n", ran.display())).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&command, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let fifo = canaries.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let opened = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (fifo, opened) = (fifo.clone(), opened.clone());
        std::thread::spawn(move || {
            // Blocks until someone opens the FIFO to read.
            let _file = std::fs::OpenOptions::new().write(true).open(&fifo);
            opened.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };

    let command_path = command.display().to_string();
    let fifo_path = fifo.display().to_string();
    let cases: Vec<(&str, &str, serde_json::Value)> = vec![
        (
            "users",
            "exec",
            json!({"apiVersion": "client.authentication.k8s.io/v1", "command": command_path}),
        ),
        (
            "users",
            "auth-provider",
            json!({"name": "oidc", "config": {"cmd-path": command_path}}),
        ),
        ("users", "tokenFile", json!(fifo_path)),
        ("users", "client-certificate", json!(fifo_path)),
        ("users", "client-key", json!(fifo_path)),
        ("clusters", "certificate-authority", json!(fifo_path)),
        ("clusters", "proxy-url", json!("http://127.0.0.1:9")),
        ("clusters", "insecure-skip-tls-verify", json!(true)),
    ];
    let plugin_requests_to_target = || {
        target
            .requests()
            .iter()
            .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
            .count()
    };
    for (list, field, value) in cases {
        store_with(&source, &clean, (list, field, &value)).await;
        for args in [
            vec!["move", "w1", "--to-cluster", "w1"],
            vec!["ready", "w1", "--to-cluster", "w1"],
        ] {
            let out = pair.plugin(&args).await;
            assert_eq!(out.code, 1, "{field}: {}", out.stderr);
            assert!(
                out.stderr.contains("Secret default/w1-kubeconfig")
                    && out.stderr.contains(&format!(": {field} (")),
                "{field}: {}",
                out.stderr
            );
            for value in [&command_path, &fifo_path, "127.0.0.1:9"] {
                assert!(
                    !out.stderr.contains(value),
                    "never the value: {}",
                    out.stderr
                );
            }
        }
        assert!(!ran.exists(), "{field}: the canary command ran");
        assert!(
            !opened.load(std::sync::atomic::Ordering::SeqCst),
            "{field}: the canary file was opened"
        );
        assert_eq!(
            plugin_requests_to_target(),
            0,
            "{field}: the target was reached"
        );
    }
    // An allowlist, not a denylist: fields it does not list, a server on http:// (the token
    // would cross in clear text) or with a password in its URL, a token no header can carry
    // (it panicked the HTTP layer) are refused alike, never by their values.
    let server = clean["clusters"][0]["cluster"]["server"]
        .as_str()
        .unwrap()
        .to_string();
    let plain = server.replacen("https://", "http://", 1);
    let with_password = server.replacen("https://", "https://admin:PASSWORD-canary@", 1);
    let unlisted: Vec<(&str, &str, serde_json::Value, &str)> = vec![
        ("users", "as-uid", json!("uid-canary"), "\"as-uid\""),
        (
            "users",
            "as-user-extra",
            json!({"k": ["extra-canary"]}),
            "\"as-user-extra\"",
        ),
        (
            "users",
            "extensions",
            json!([{"name": "ext-canary", "extension": {}}]),
            "\"extensions\"",
        ),
        (
            "users",
            "unknown-key",
            json!("key-canary"),
            "\"unknown-key\"",
        ),
        (
            "users",
            "token",
            json!("token\ncanary"),
            "token holds a line break",
        ),
        (
            "clusters",
            "server",
            json!(plain),
            "is not https:// (its token",
        ),
        (
            "clusters",
            "server",
            json!(with_password),
            "server carries a user or password",
        ),
    ];
    for (list, field, value, named) in unlisted {
        store_with(&source, &clean, (list, field, &value)).await;
        let out = pair.plugin(&["ready", "w1", "--to-cluster", "w1"]).await;
        assert_eq!(out.code, 1, "{named}: {}", out.stderr);
        assert!(
            out.stderr.contains("Secret default/w1-kubeconfig") && out.stderr.contains(named),
            "{named}: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("canary"),
            "never the value: {}",
            out.stderr
        );
        assert_eq!(
            plugin_requests_to_target(),
            0,
            "{named}: the target was reached"
        );
    }
    // A CA that does not prove the target: the Secret's kubeconfig is what to fix, and the flag
    // that stops checking the server (which never applies to it) is not offered.
    let other = capi_sandbox::ApiServer::new(capi_sandbox::ServerOptions {
        tls: true,
        ..capi_sandbox::ServerOptions::default()
    });
    let other_ca = other.serve(0).await.unwrap().ca_pem.clone().unwrap();
    let other_ca = json!(base64::engine::general_purpose::STANDARD.encode(other_ca));
    store_with(
        &source,
        &clean,
        ("clusters", "certificate-authority-data", &other_ca),
    )
    .await;
    let out = pair.plugin(&["ready", "w1", "--to-cluster", "w1"]).await;
    assert!(
        out.stderr
            .contains("kubeconfig in Secret default/w1-kubeconfig")
            && out
                .stderr
                .contains("does not prove this server; fix that kubeconfig")
            && !out.stderr.contains("pass --insecure-skip-tls-verify"),
        "{}",
        out.stderr
    );
    store_kubeconfig(&source, &clean.to_string()).await;
    // --insecure-skip-tls-verify never applies to a kubeconfig read from a Secret.
    let file = canaries.join("clean-from-secret.kubeconfig");
    std::fs::write(&file, clean.to_string()).unwrap();
    let insecure: crate::common::Output = crate::common::plugin_command(
        Some(&file),
        &[
            "ready",
            "-A",
            "--kubeconfig-from-secret",
            "--insecure-skip-tls-verify",
        ],
    )
    .output()
    .await
    .unwrap()
    .into();
    crate::cli::assert_one_line_error(&insecure, "--insecure-skip-tls-verify does not apply");
    // The same holds for a pasted hint that reads the Secret into --kubeconfig: the flag the
    // hints carry makes it data too.
    let mut kubeconfig = clean.clone();
    for entry in kubeconfig["users"].as_array_mut().unwrap() {
        entry["user"]["exec"] =
            json!({"apiVersion": "client.authentication.k8s.io/v1", "command": command_path});
    }
    let file = canaries.join("from-secret.kubeconfig");
    std::fs::write(&file, kubeconfig.to_string()).unwrap();
    let out = crate::common::plugin_command(
        Some(&file),
        &["resume", "--all", "--kubeconfig-from-secret"],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !ran.exists(),
        "the canary command ran from --kubeconfig-from-secret"
    );
    assert_eq!(plugin_writes(&pair), 0, "nothing written anywhere");
    // Let the writer thread go.
    drop(std::fs::File::open(&fifo));
    writer.join().unwrap();
}

/// After a pivot of w1 into itself its kubeconfig Secret is in w1: the source keeps a copy, so a
/// rerun says it is done (exit 0), another Cluster moves into w1 like any other, and the commands
/// printed after the pivot work when pasted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_pivot_another_cluster_moves_into_it_and_the_printed_commands_work() {
    let mut options = Options::new(Dialect::V1beta2, Delays::millis(20));
    options.self_hosted = Some("w1".into());
    let pair = Pair::start_with(options, &[workload("w1", 1, 1), workload("w2", 1, 0)]).await;
    // Frozen, so that the move prints how to release the freeze that travels into w1.
    let paused = pair.plugin(&["pause", "w1"]).await;
    assert_eq!(paused.code, 0, "{}", paused.stderr);
    let pivot = pair.plugin(&["move", "w1", "--to-cluster", "w1"]).await;
    assert_eq!(pivot.code, 0, "{}", pivot.stderr);
    assert!(
        pivot
            .stderr
            .contains("the source keeps a copy as Secret default/kubectl-capi-move-kubeconfig-w1"),
        "{}",
        pivot.stderr
    );
    let release = pivot
        .stderr
        .split("release them with `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("a release hint in {}", pivot.stderr));
    assert!(
        release.contains("kubectl-capi-move-kubeconfig-w1"),
        "the hint reads the kubeconfig where it is after the pivot: {release}"
    );

    let again = pair.plugin(&["move", "w1", "--to-cluster", "w1"]).await;
    again.assert_stderr(0, "nothing left to move");

    let ready = pair.plugin(&["ready", "w2", "--to-cluster", "w1"]).await;
    assert_eq!(ready.code, 0, "{}", ready.stderr);
    assert!(
        ready.stdout.contains("Cluster default/w2: ready to move"),
        "{}",
        ready.stdout
    );
    let w2 = pair.plugin(&["move", "w2", "--to-cluster", "w1"]).await;
    assert_eq!(w2.code, 0, "{}", w2.stderr);
    let target = &pair.env.target.server;
    for name in ["w1", "w2"] {
        assert!(
            crate::common::has_cluster(target, "default", name),
            "{name} is in w1"
        );
    }

    let pasted = pair.paste(release).await;
    assert_eq!(pasted.code, 0, "{release}: {}", pasted.stderr);
    let frozen = target
        .dump()
        .into_iter()
        .filter(|o| o["kind"] == "KubeadmControlPlane")
        .filter(|o| !o["metadata"]["annotations"]["cluster.x-k8s.io/paused"].is_null())
        .count();
    assert_eq!(frozen, 0, "the pasted resume released the freeze in w1");
    assert_eq!(
        files_holding(pair.dir.path(), CANARY),
        Vec::<PathBuf>::new(),
        "no file holds the kubeconfig"
    );
    // Once the source is retired, the note's command removes the copy it kept.
    let remove = pivot
        .stderr
        .split("remove it once the source is retired: `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("a removal hint in {}", pivot.stderr));
    let removed = pair.paste(remove).await;
    assert_eq!(removed.code, 0, "{remove}: {}", removed.stderr);
    let kept =
        pair.env
            .source
            .server
            .object("", "secrets", "default", "kubectl-capi-move-kubeconfig-w1");
    assert!(kept.is_none(), "{remove} removed the kept copy");
}

/// Every error about a kubeconfig read from the workload cluster's Secret names the end it was
/// to reach, the Secret, and the server it names — for `move` and `ready` alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_about_a_secrets_kubeconfig_name_the_end_the_secret_and_the_server() {
    let pair = self_hosted().await;
    let kubeconfig = |cluster: &str, current: bool| {
        format!(
            "apiVersion: v1\nkind: Config\n{}clusters:\n{cluster}users:\n- name: w1\n  user: {{}}\ncontexts:\n- name: w1\n  context: {{cluster: w1, user: w1}}\n",
            if current { "current-context: w1\n" } else { "" }
        )
    };
    let dead = "- name: w1\n  cluster: {server: 'https://127.0.0.1:1'}\n";
    for (value, server) in [
        (kubeconfig(dead, true), "https://127.0.0.1:1"),
        (kubeconfig(dead, false), "https://127.0.0.1:1"),
        (kubeconfig(" []\n", true), "it names no server"),
        ("contexts: [not, a kubeconfig".to_string(), "does not parse"),
    ] {
        store_kubeconfig(&pair.env.source.server, &value).await;
        for verb in ["move", "ready"] {
            let out = pair
                .plugin(&[verb, "w1", "--to-cluster", "w1", "--request-timeout", "2s"])
                .await;
            assert_eq!(out.code, 2, "{verb}: {}", out.stderr);
            assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
            for says in [
                "target",
                "Secret default/w1-kubeconfig of the source",
                server,
            ] {
                assert!(
                    out.stderr.contains(says),
                    "{verb}: {says} in {}",
                    out.stderr
                );
            }
        }
    }
    // A server that is not https:// is refused by the allowlist, named (never with a password).
    let ftp = "- name: w1\n  cluster: {server: 'ftp://u:PASSWORD@x'}\n";
    store_kubeconfig(&pair.env.source.server, &kubeconfig(ftp, true)).await;
    for verb in ["move", "ready"] {
        let out = pair.plugin(&[verb, "w1", "--to-cluster", "w1"]).await;
        assert_eq!(out.code, 1, "{verb}: {}", out.stderr);
        assert!(
            out.stderr
                .contains("Secret default/w1-kubeconfig of the source")
                && out.stderr.contains("server \"ftp://x\" is not https://"),
            "{verb}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("PASSWORD"), "{}", out.stderr);
    }
    assert_eq!(plugin_writes(&pair), 0);
}

/// A workload cluster's kubeconfig Secret that reaches the source itself refuses the move before
/// any write, naming that Secret — its fix — not a `--to-context` that `--to-cluster` has none of.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_kubeconfig_that_reaches_the_source_names_the_secret() {
    let pair = self_hosted().await;
    let source = pair.env.source.server.clone();
    let itself = pair.env.source.serving.kubeconfig_entry("w1");
    assert!(itself.server.starts_with("https://"), "{}", itself.server);
    store_kubeconfig(&source, &capi_sandbox::apiserver::kubeconfig(&[itself])).await;
    let before = plugin_writes(&pair);
    let out = pair
        .plugin(&["move", "w1", "--to-cluster", "w1", "--dry-run=server"])
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("the source and the target are the same cluster")
            && out
                .stderr
                .contains("the kubeconfig in Secret default/w1-kubeconfig")
            && out.stderr.contains("check that Secret")
            && !out.stderr.contains("--to-context"),
        "{}",
        out.stderr
    );
    assert_eq!(plugin_writes(&pair), before, "nothing written");
}
