//! `move --to-directory` and `--from-directory` between two sandbox management clusters:
//! a clusterctl-compatible round trip, the checks before either writes, and status replay.

use crate::common::Writes;
use std::collections::BTreeSet;

use capi_sandbox::crds::Dialect;
use capi_sandbox::environment::TARGET_CONTEXT;
use serde_json::{Value, json};

use super::moving::{Pair, assert_owner_uids_resolve, workload};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_backup_and_restore_round_trip() {
    use std::os::unix::fs::PermissionsExt;
    let pair = Pair::start(Dialect::V1beta2, &[workload("saved", 1, 1)]).await;
    let backup = pair.dir.path().join("backup");
    let out = pair
        .plugin(&["move", "--to-directory", backup.to_str().unwrap()])
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let files: BTreeSet<String> = std::fs::read_dir(&backup)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(files.contains("Cluster_default_saved.yaml"), "{files:?}");
    assert!(
        files.contains("Secret_default_saved-kubeconfig.yaml"),
        "{files:?}"
    );
    assert_eq!(
        std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777,
        0o700
    );
    for file in &files {
        assert_eq!(
            std::fs::metadata(backup.join(file))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600,
            "{file} holds credentials"
        );
    }
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(backup.join("Cluster_default_saved.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        saved["spec"]["paused"], true,
        "captured while paused, as clusterctl does"
    );
    let source_cluster = pair
        .env
        .source
        .server
        .object("cluster.x-k8s.io", "clusters", "default", "saved")
        .unwrap();
    assert!(
        source_cluster["spec"].get("paused").is_none(),
        "the source is unpaused after the backup"
    );

    let restored = pair
        .plugin(&[
            "move",
            "--from-directory",
            backup.to_str().unwrap(),
            "--context",
            TARGET_CONTEXT,
        ])
        .await;
    assert_eq!(restored.code, 0, "{}", restored.stderr);
    assert!(
        restored
            .stdout
            .starts_with(&format!("restored {} objects of 1 Cluster(s)", files.len())),
        "{}",
        restored.stdout
    );
    assert_owner_uids_resolve(&pair, "default");
    let target_cluster = pair
        .env
        .target
        .server
        .object("cluster.x-k8s.io", "clusters", "default", "saved")
        .unwrap();
    assert!(
        target_cluster["spec"].get("paused").is_none(),
        "unpaused on restore"
    );
    // Restoring again finds every object there already: refused, nothing written, unless
    // told to overwrite them.
    let plugin_writes = || {
        pair.env
            .target
            .server
            .writes()
            .iter()
            .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
            .count()
    };
    let writes_before = plugin_writes();
    let restore_args = [
        "move",
        "--from-directory",
        backup.to_str().unwrap(),
        "--context",
        TARGET_CONTEXT,
    ];
    let again = pair.plugin(&restore_args).await;
    again.assert_stderr(1, "Cluster default/saved already exists in the target and was not created by this move; delete it there or pass --overwrite-existing");
    assert_eq!(plugin_writes(), writes_before);
    let mut overwrite = restore_args.to_vec();
    overwrite.push("--overwrite-existing");
    let again = pair.plugin(&overwrite).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_owner_uids_resolve(&pair, "default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_and_restores_check_before_they_write() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("saved", 1, 0)]).await;
    let dir = pair.dir.path();
    let cluster_version = || {
        pair.env
            .source
            .server
            .object("cluster.x-k8s.io", "clusters", "default", "saved")
            .unwrap()["metadata"]["resourceVersion"]
            .clone()
    };
    let version_before = cluster_version();
    let a_file = dir.join("a-file");
    std::fs::write(&a_file, "x").unwrap();
    let not_empty = dir.join("not-empty");
    std::fs::create_dir(&not_empty).unwrap();
    std::fs::write(not_empty.join("notes.txt"), "mine").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&not_empty, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let under_a_file = a_file.join("backup");
    for (path, why) in [
        (&a_file, "is a file, not a directory"),
        (&not_empty, "is not empty (1 entries)"),
        (&under_a_file, "cannot use --to-directory"),
    ] {
        let out = pair
            .plugin(&["move", "--to-directory", path.to_str().unwrap()])
            .await;
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr.starts_with("error: ") && out.stderr.contains(why),
            "{}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
    assert_eq!(cluster_version(), version_before, "nothing paused");
    assert_eq!(std::fs::read_to_string(&a_file).unwrap(), "x");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&not_empty).unwrap().permissions().mode() & 0o777,
            0o755,
            "an existing directory keeps its mode"
        );
    }

    // Restores: an empty directory, one without Cluster API objects, and a Secret too large
    // for any API server.
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let no_capi = dir.join("no-capi");
    std::fs::create_dir(&no_capi).unwrap();
    std::fs::write(
        no_capi.join("ConfigMap_default_x.yaml"),
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}"#,
    )
    .unwrap();
    let pair = &pair;
    let restore = |path: &std::path::Path| {
        let path = path.to_str().unwrap().to_string();
        async move {
            pair.plugin(&[
                "move",
                "--from-directory",
                &path,
                "--context",
                TARGET_CONTEXT,
            ])
            .await
        }
    };
    let writes_before = pair.env.target.server.writes().len();
    for path in [&empty, &no_capi] {
        let out = restore(path).await;
        out.assert_stderr(2, "holds no Cluster API objects");
    }
    let backup = dir.join("backup");
    let out = pair
        .plugin(&["move", "--to-directory", backup.to_str().unwrap()])
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The Cluster's CA Secret grows to 4 MiB.
    let ca_file = backup.join("Secret_default_saved-ca.yaml");
    let mut ca: Value = serde_json::from_str(&std::fs::read_to_string(&ca_file).unwrap()).unwrap();
    ca["data"]["blob"] = serde_json::json!("x".repeat(4 << 20));
    std::fs::write(&ca_file, ca.to_string()).unwrap();
    let out = restore(&backup).await;
    out.assert_stderr(1, "restore refused by its preflight, nothing was written: the target cluster rejects secret/saved-ca: Request entity too large");
    assert_eq!(
        pair.env
            .target
            .server
            .writes()
            .iter()
            .skip(writes_before)
            .filter(
                |r| r.agent.starts_with(crate::common::PLUGIN_AGENT) && r.resource != "namespaces"
            )
            .count(),
        0,
        "nothing written"
    );
    assert!(!crate::common::has_cluster(
        &pair.env.target.server,
        "default",
        "saved"
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_is_replayed_only_with_restore_status() {
    let pair = Pair::start(
        Dialect::V1beta2,
        &[workload("plain", 1, 0), workload("stateful", 1, 0)],
    )
    .await;
    let client = pair.env.source.server.client();
    for name in ["plain", "stateful"] {
        let path = format!(
            "/apis/infrastructure.cluster.x-k8s.io/v1beta2/namespaces/default/dockerclusters/{name}/status"
        );
        let request = http::Request::patch(path)
            .header("content-type", "application/merge-patch+json")
            .body(
                json!({"status": {"providerState": format!("lb-{name}-state")}})
                    .to_string()
                    .into_bytes(),
            )
            .unwrap();
        assert!(
            client
                .send(request.map(kube::client::Body::from))
                .await
                .unwrap()
                .status()
                .is_success()
        );
    }
    assert_eq!(pair.move_(&["plain"]).await.code, 0);
    let out = pair.move_(&["stateful", "--restore-status"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let state = |name: &str| {
        pair.env
            .target
            .server
            .object(
                "infrastructure.cluster.x-k8s.io",
                "dockerclusters",
                "default",
                name,
            )
            .unwrap()["status"]["providerState"]
            .clone()
    };
    assert_eq!(
        state("stateful"),
        json!("lb-stateful-state"),
        "replayed through the status subresource"
    );
    assert_eq!(
        state("plain"),
        Value::Null,
        "not restored by default, as clusterctl"
    );
}
