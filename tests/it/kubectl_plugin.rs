//! Invocation through kubectl's plugin lookup: `kubectl capi` finds `kubectl-capi` on PATH.

use crate::common::Writes;
use std::path::Path;

use crate::common::PLUGIN;

/// PATH with this build's plugin (and its completer) first.
fn path_with_plugin() -> String {
    let bin_dir = Path::new(PLUGIN).parent().unwrap();
    format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_finds_the_plugin_on_path() {
    let path = path_with_plugin();
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

/// `kubectl __complete capi …` — what kubectl's shell completion scripts call on <TAB>.
async fn complete(kubeconfig: &Path, words: &[&str]) -> (Vec<String>, String) {
    let bin_dir = Path::new(PLUGIN).parent().unwrap();
    assert!(
        bin_dir.join("kubectl_complete-capi").exists(),
        "the completion executable is built beside the plugin"
    );
    let path = path_with_plugin();
    let home = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new("kubectl")
        .args(["__complete", "capi"])
        .args(words)
        .env("PATH", &path)
        .env("HOME", home.path())
        .env("KUBECONFIG", kubeconfig)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    let directive = lines.pop().unwrap_or_default();
    let names = lines
        .into_iter()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    (names, directive)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_completes_subcommands_flags_and_cluster_names() {
    let sandbox = crate::ready::golden_sandbox().await;
    let (subcommands, directive) = complete(&sandbox.kubeconfig, &["re"]).await;
    assert_eq!(subcommands, ["ready", "resume"]);
    assert_eq!(directive, ":4", "no file names");
    let (flags, _) = complete(&sandbox.kubeconfig, &["move", "--to-k"]).await;
    assert_eq!(flags, ["--to-kubeconfig"]);
    let (names, _) = complete(&sandbox.kubeconfig, &["pause", "-n", "golden", ""]).await;
    assert_eq!(names, ["alpha", "beta"], "one LIST of the Clusters there");
    let (names, _) = complete(&sandbox.kubeconfig, &["ready", "-n", "golden", "b"]).await;
    assert_eq!(names, ["beta"]);
    let (contexts, _) = complete(&sandbox.kubeconfig, &["move", "--to-context", ""]).await;
    assert_eq!(contexts, ["sandbox"]);
    // Values after `=`, the contexts of the kubeconfig the target flag names, a shell.
    let (values, _) = complete(&sandbox.kubeconfig, &["move", "--dry-run=s"]).await;
    assert_eq!(values, ["--dry-run=server"]);
    let other = sandbox.kubeconfig_with("other", |e| e.context = "elsewhere".into());
    let to_other = [
        "move",
        "--to-kubeconfig",
        other.to_str().unwrap(),
        "--to-context=",
    ];
    let (contexts, _) = complete(&sandbox.kubeconfig, &to_other).await;
    assert_eq!(contexts, ["--to-context=elsewhere"]);
    let (shells, _) = complete(&sandbox.kubeconfig, &["completion", "z"]).await;
    assert_eq!(shells, ["zsh"]);
    let (colors, _) = complete(&sandbox.kubeconfig, &["ready", "--color", "a"]).await;
    assert_eq!(colors, ["auto", "always"]);
    // A cluster that cannot be reached: nothing offered, no error.
    let dead = sandbox.kubeconfig_with("dead", |e| e.server = "http://127.0.0.1:1".into());
    let (names, directive) = complete(&dead, &["ready", ""]).await;
    assert!(names.is_empty() && directive == ":4");
    assert!(sandbox.server.writes().is_empty());
}

/// Completion under krew, as far as this machine allows: krew's layout (`$KREW_ROOT/store/capi/
/// VERSION/` holding the archive's files, `$KREW_ROOT/bin/kubectl-capi` a link into it), the
/// manifest's caveats run as written, then an upgrade (a new store folder, the old one deleted,
/// the link moved) and an uninstall (both removed). Completion works before and after the
/// upgrade, completes nothing after the uninstall without an error, and nothing of ours is ever
/// in krew's directories (krew refuses to run with entries in `bin/` it did not install).
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_survives_a_krew_upgrade_and_leaves_nothing_on_uninstall() {
    let sandbox = crate::ready::golden_sandbox().await;
    let home = tempfile::tempdir().unwrap();
    let krew = home.path().join(".krew");
    let install = |version: &str| {
        let store = krew.join("store/capi").join(version);
        std::fs::create_dir_all(&store).unwrap();
        let built = Path::new(PLUGIN).parent().unwrap();
        for file in ["kubectl-capi", "kubectl_complete-capi"] {
            std::fs::copy(built.join(file), store.join(file)).unwrap();
        }
        std::fs::create_dir_all(krew.join("bin")).unwrap();
        let link = krew.join("bin/kubectl-capi");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(store.join("kubectl-capi"), &link).unwrap();
    };
    // PATH as a krew user has it: krew's bin, ~/.local/bin, the system's; never this build's dir.
    let built = Path::new(PLUGIN).parent().unwrap().to_path_buf();
    let system: Vec<String> = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| Path::new(d) != built)
        .map(str::to_string)
        .collect();
    let path = format!(
        "{}:{}:{}",
        krew.join("bin").display(),
        home.path().join(".local/bin").display(),
        system.join(":")
    );
    let run = |program: &str, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .env("PATH", &path)
            .env("HOME", home.path())
            .env("KUBECONFIG", &sandbox.kubeconfig)
            .output()
            .unwrap()
    };
    let complete = |words: &[&str]| {
        let args = [&["__complete", "capi"][..], words].concat();
        let out = run("kubectl", &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with(':'))
            .map(|l| l.split('\t').next().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    install("v0.1.0");
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.krew.yaml")).unwrap();
    let caveats: Vec<&str> = manifest
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("mkdir -p ~/")
                || l.starts_with("chmod +x ~/")
                || l.starts_with("kubectl capi completion kubectl > ~/")
        })
        .collect();
    assert_eq!(caveats.len(), 3, "{caveats:?}");
    for line in &caveats {
        let out = run("bash", &["-c", line]);
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(complete(&["re"]), ["ready", "resume"]);
    assert_eq!(complete(&["pause", "-n", "golden", ""]), ["alpha", "beta"]);

    // `kubectl krew upgrade`: the new version's folder, the old one gone, the link moved.
    install("v0.2.0");
    std::fs::remove_dir_all(krew.join("store/capi/v0.1.0")).unwrap();
    assert_eq!(complete(&["re"]), ["ready", "resume"], "after an upgrade");

    // `kubectl krew uninstall capi`.
    std::fs::remove_dir_all(krew.join("store/capi")).unwrap();
    std::fs::remove_file(krew.join("bin/kubectl-capi")).unwrap();
    assert!(complete(&["re"]).is_empty(), "nothing offered, no error");
    let left: Vec<_> = std::fs::read_dir(krew.join("bin")).unwrap().collect();
    assert!(left.is_empty(), "nothing of ours in krew's bin/: {left:?}");
}
