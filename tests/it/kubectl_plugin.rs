//! Invocation through kubectl's plugin lookup: `kubectl capi` finds `kubectl-capi` on PATH.

use std::path::Path;

use crate::common::PLUGIN;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_finds_the_plugin_on_path() {
    let bin_dir = Path::new(PLUGIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new("kubectl")
        .args(["capi", "--help"])
        .env("PATH", &path)
        .env("HOME", home.path())
        .env("KUBECONFIG", home.path().join("none"))
        .output()
        .await
        .expect("kubectl must be on PATH for this test (it never skips)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Usage: kubectl capi"), "{stdout}");

    let list = tokio::process::Command::new("kubectl")
        .args(["plugin", "list"])
        .env("PATH", &path)
        .env("HOME", home.path())
        .output()
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("kubectl-capi"),
        "kubectl plugin list shows it"
    );
}
