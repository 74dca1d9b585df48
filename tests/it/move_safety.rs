//! What a move, a resume, a rollback or a restore must never do: delete or overwrite what it did
//! not itself move or create. Each test runs the real binary against sandbox servers and reads
//! their request logs.

use crate::move_scenarios::{Fixture, MOVE_NS1, World};

/// The plugin's requests to `server` that tried to write (dry runs included; access reviews,
/// which only ask, are not writes).
fn write_attempts(server: &capi_sandbox::ApiServer) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.agent.starts_with("kubectl-capi/") && r.is_write_attempt())
        .filter(|r| r.resource != "selfsubjectaccessreviews")
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
            .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
            .is_some()
    );
    // The real target is fine.
    let mut args = MOVE_NS1.to_vec();
    args.push("--dry-run=server");
    let out = w.plugin(&args).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
}
