//! How Clusters are selected, as docs/usage.md says: names, `-n`, `-A`, `-l`, names with `-l` (the
//! named ones that match), `--all` (no names) — and a rerun after a finished move exits 0 for
//! every way of selecting, while a name of no Cluster stays an error.

use serde_json::json;

use crate::move_world::{Fixture, World};

/// Clusters foo (labelled env=prod) and bar in ns1, a Machine each.
pub(crate) fn two_clusters() -> Fixture {
    let mut f = Fixture::default();
    for name in ["foo", "bar"] {
        f.cluster("ns1", name, false).machine(
            "ns1",
            name,
            &format!("{name}-m1"),
            ("Cluster", name, true),
            false,
        );
    }
    crate::agreement::edit(&mut f, "Cluster", "foo", |c| {
        c["metadata"]["labels"] = json!({"env": "prod"})
    });
    f
}

fn in_target(w: &World, name: &str) -> bool {
    crate::common::has_cluster(&w.target, "ns1", name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_after_a_finished_move_exits_0_however_the_clusters_were_selected() {
    for selection in [
        vec!["foo", "-n", "ns1"],
        vec!["-l", "env=prod", "-n", "ns1"],
        vec!["foo", "-l", "env=prod", "-n", "ns1"],
        vec!["-n", "ns1"],
        vec!["-A"],
    ] {
        let w = World::start(&two_clusters()).await;
        let first = w.move_with(&selection).await;
        assert_eq!(first.code, 0, "{selection:?}: {}", first.stderr);
        assert!(in_target(&w, "foo"), "{selection:?}");
        let again = w.move_with(&selection).await;
        assert_eq!(again.code, 0, "{selection:?}: {}", again.stderr);
        assert!(
            again.stderr.contains("nothing left to move")
                || again.stderr.contains("nothing to move"),
            "{selection:?}: {}",
            again.stderr
        );
        // A name of no Cluster, in either cluster, is still an error.
        let mut unknown = selection.clone();
        unknown.push("nosuch");
        let out = w.move_with(&unknown).await;
        assert_eq!(out.code, 2, "{unknown:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("\"nosuch\" not found"),
            "{}",
            out.stderr
        );
    }
}

/// foo and bar named, of which `-l env=prod` selects only foo.
const NAMED_AND_SELECTED: [&str; 8] = [
    "foo",
    "bar",
    "-l",
    "env=prod",
    "-n",
    "ns1",
    "--context",
    "source",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_a_selector_select_the_named_clusters_that_match() {
    let w = World::start(&two_clusters()).await;
    // ready and pause: bar is named but does not match, so it is left out.
    let ready = w
        .plugin(&[&["ready"], &NAMED_AND_SELECTED[..], &["-o", "json"]].concat())
        .await;
    assert_eq!(ready.code, 0, "{}", ready.stderr);
    let report: serde_json::Value = serde_json::from_str(&ready.stdout).unwrap();
    let names: Vec<&str> = report["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["foo"], "{}", ready.stdout);
    let pause = w
        .plugin(&[&["pause"], &NAMED_AND_SELECTED[..], &["--dry-run=client"]].concat())
        .await;
    assert_eq!(pause.code, 0, "{}", pause.stderr);
    assert!(!pause.stdout.contains("bar"), "{}", pause.stdout);

    // move: bar is named but does not match; only foo moves.
    let out = w
        .move_with(&["foo", "bar", "-l", "env=prod", "-n", "ns1"])
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(in_target(&w, "foo") && !in_target(&w, "bar"));

    // Named Clusters none of which matches: refused, nothing written.
    let none = w.move_with(&["bar", "-l", "env=prod", "-n", "ns1"]).await;
    none.assert_stderr(1, "no Clusters named bar match -l env=prod");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_with_names_is_a_usage_error() {
    let w = World::start(&two_clusters()).await;
    for verb in ["pause", "resume"] {
        let out = w
            .plugin(&[verb, "--all", "foo", "-n", "ns1", "--context", "source"])
            .await;
        assert_eq!(out.code, 2, "{verb}: {}", out.stderr);
        assert!(
            out.stderr.starts_with(
                "error: --all means every Cluster in the namespace, so it takes no Cluster names"
            ),
            "{}",
            out.stderr
        );
    }
    assert!(w.plugin_writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn to_cluster_values_are_checked_like_names_before_any_request() {
    let w = World::start(&two_clusters()).await;
    let before = w.source.requests().len();
    for bad in ["a b", "../x", "Foo"] {
        for verb in ["move", "ready"] {
            let out = w
                .plugin(&[
                    verb,
                    "foo",
                    "-n",
                    "ns1",
                    "--context",
                    "source",
                    "--to-cluster",
                    bad,
                ])
                .await;
            assert_eq!(out.code, 2, "{verb} {bad}: {}", out.stderr);
            assert!(
                out.stderr.starts_with(&format!(
                    "error: invalid Cluster name \"{bad}\" (--to-cluster): a DNS-1123 subdomain"
                )),
                "{}",
                out.stderr
            );
        }
    }
    assert_eq!(
        w.source.requests().len(),
        before,
        "no request reached the source"
    );
}
