//! The README's demo, run as a test with short delays and the real plugin binary.

use std::path::PathBuf;

use capi_sandbox::controllers::Delays;
use capi_sandbox::crds::Dialect;
use capi_sandbox_tools::demo::{DemoOptions, run};

use crate::common::PLUGIN;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_tells_the_story_with_the_real_plugin() {
    let options = DemoOptions {
        plugin: PathBuf::from(PLUGIN),
        delays: Delays::millis(20),
        dialect: Dialect::V1beta2,
        pivot: true,
        plain_http: false,
    };
    let mut out = Vec::new();
    let report = run(&options, &mut out).await.expect("the demo runs");
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("$ kubectl capi version"), "{text}");
    assert!(text.contains("Cluster API version: v1.14.0"), "{text}");
    assert!(
        text.contains("demo-1: 2/3 machines with a node"),
        "the move meets an in-flight Machine: {text}"
    );
    let commands: Vec<&str> = report.steps.iter().map(|s| s.command.as_str()).collect();
    assert_eq!(commands.len(), 9, "{commands:?}");
    assert_eq!(
        (report.steps[0].code, report.steps[0].pending),
        (0, false),
        "version runs for real"
    );
    assert_eq!(report.steps[1].command, "kubectl capi ready demo-1");
    assert_eq!(report.steps[1].code, 1, "ready refuses during the scale-up");
    assert!(
        text.contains(
            "KubeadmControlPlane default/demo-1-control-plane is scaling up (2 of 3 Machines)"
        ),
        "{text}"
    );
    assert!(
        report.steps[2]
            .command
            .starts_with("kubectl capi move demo-1")
    );
    assert_eq!(
        report.steps[2].code, 1,
        "the move is refused by its preflight: {text}"
    );
    assert!(
        text.contains("is still provisioning the node"),
        "with clusterctl's reason: {text}"
    );
    assert_eq!(report.steps[3].command, "kubectl capi pause demo-1");
    assert_eq!(report.steps[3].code, 0);
    assert_eq!(report.steps[4].command, "kubectl capi ready demo-1 --wait");
    assert_eq!(
        report.steps[4].code, 0,
        "ready --wait returns once the in-flight Machine has its node: {text}"
    );
    assert_eq!(report.steps[5].code, 0, "the move goes through: {text}");
    assert_eq!(
        report.steps[6].command,
        "kubectl capi resume demo-1 --context sandbox-target"
    );
    assert_eq!(report.steps[6].code, 0);

    // It ends with the same story as one command, for a second cluster — a ClusterClass
    // cluster, scaled through its topology — scaling meanwhile.
    assert!(
        text.contains("Creating workload cluster demo-2 (1 control-plane Machine, 1 worker; from ClusterClass demo-class)"),
        "{text}"
    );
    assert!(
        text.contains("demo-2: 2/3 machines with a node"),
        "the one command meets an in-flight Machine too: {text}"
    );
    assert!(
        report.steps[7]
            .command
            .starts_with("kubectl capi move demo-2 --freeze --wait-ready --verify"),
        "{commands:?}"
    );
    assert_eq!(report.steps[7].code, 0, "{text}");
    for line in [
        "demo-2-control-plane frozen",
        "moved 1 Cluster(s)",
        "demo-2-control-plane resumed",
        // The scale-up frozen at the move finishes in the target: one new Machine, expected.
        "cluster.cluster.x-k8s.io/demo-2 verified: 2 control-plane + 1 worker Machines adopted, ",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert!(report.pending().is_empty());
    assert!(
        report.moved,
        "every cluster ready in the target, none left in the source: {text}"
    );
    assert!(text.contains("# Done: demo-1 is ready in sandbox-target"));
    assert!(text.contains("# Done: demo-2 is ready in sandbox-target"));

    // It ends with the quick start's self-hosted pivot: demo-3 moved into itself.
    assert_eq!(
        report.steps[8].command,
        "kubectl capi move demo-3 --to-cluster demo-3 --verify"
    );
    assert_eq!(report.steps[8].code, 0, "{text}");
    assert!(
        text.contains(
            "cluster.cluster.x-k8s.io/demo-3 verified: 1 control-plane + 1 worker Machines adopted"
        ),
        "{text}"
    );
}
