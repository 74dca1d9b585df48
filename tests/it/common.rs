//! A sandbox management cluster on loopback and the plugin binary pointed at it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use capi_sandbox::apiserver::{KubeconfigEntry, write_kubeconfig};
use capi_sandbox::crds::{self, Dialect};
use capi_sandbox::{ApiServer, ServerOptions, Serving};

pub const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-capi");

pub struct Sandbox {
    pub server: ApiServer,
    pub serving: Serving,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Output {
    /// A process killed by a signal has no code: -1.
    fn from(output: std::process::Output) -> Output {
        Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Sandbox {
    pub async fn start(dialect: Dialect) -> Sandbox {
        Self::start_with(dialect, ServerOptions::default()).await
    }

    pub async fn start_with(dialect: Dialect, options: ServerOptions) -> Sandbox {
        let server = ApiServer::new(options);
        crds::install(&server, dialect).unwrap();
        let serving = server.serve(0).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        write_kubeconfig(&kubeconfig, &[serving.kubeconfig_entry("sandbox")]).unwrap();
        Sandbox {
            server,
            serving,
            dir,
            kubeconfig,
        }
    }

    /// Writes another kubeconfig (e.g. with a wrong token or no CA) and returns its path.
    pub fn kubeconfig_with(&self, name: &str, edit: impl FnOnce(&mut KubeconfigEntry)) -> PathBuf {
        let mut entry = self.serving.kubeconfig_entry("sandbox");
        edit(&mut entry);
        let path = self.dir.path().join(name);
        write_kubeconfig(&path, &[entry]).unwrap();
        path
    }

    /// Runs the plugin with this sandbox's kubeconfig.
    pub async fn plugin(&self, args: &[&str]) -> Output {
        run_plugin(Some(&self.kubeconfig), args).await
    }
}

/// The plugin as a child process with a clean environment: only `kubeconfig`, a private HOME and
/// a per-test-run state directory (move journals).
pub fn plugin_command(kubeconfig: Option<&Path>, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(PLUGIN);
    command.args(args);
    isolated(&mut command, kubeconfig);
    command
}

/// A hint the plugin printed, run as a user pastes it into a shell: `kubectl capi …` finds
/// this build of the plugin on PATH, with the same isolation as [`plugin_command`].
pub fn pasted_command(kubeconfig: Option<&Path>, hint: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", hint]);
    isolated(&mut command, kubeconfig);
    let bin_dir = Path::new(PLUGIN).parent().unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    command.env("PATH", format!("{}:{path}", bin_dir.display()));
    command
}

/// No stdin, captured output, only `kubeconfig`, and state apart from the user's.
fn isolated(command: &mut tokio::process::Command, kubeconfig: Option<&Path>) {
    command
        .kill_on_drop(true)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("KUBECONFIG");
    if let Some(path) = kubeconfig {
        command.env("KUBECONFIG", path);
    }
    // Never let a developer's own cluster config leak in.
    command.env("HOME", std::env::temp_dir().join("kubectl-capi-test-home"));
    // Move journals of this test run stay apart from any other run's.
    command.env(
        "XDG_STATE_HOME",
        std::env::temp_dir().join(format!("kubectl-capi-test-state-{}", std::process::id())),
    );
}

pub async fn run_plugin(kubeconfig: Option<&Path>, args: &[&str]) -> Output {
    let mut command = plugin_command(kubeconfig, args);
    let output = match tokio::time::timeout(Duration::from_secs(60), command.output()).await {
        Ok(output) => output.unwrap(),
        Err(_) => {
            panic!("kubectl-capi {args:?} did not finish in 60s");
        }
    };

    output.into()
}

/// Sends Ctrl-C (SIGINT) to a spawned plugin and waits for it to exit, at most 10 s.
pub async fn interrupt(child: tokio::process::Child) -> Output {
    let pid = child.id().expect("the plugin is running").to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("exits promptly")
        .unwrap();
    output.into()
}

pub fn capi_provider(name: &str, type_: &str, version: &str, namespace: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "clusterctl.cluster.x-k8s.io/v1alpha3", "kind": "Provider",
        "metadata": {"name": format!("{}-{}", type_.trim_end_matches("Provider").to_lowercase(), name), "namespace": namespace,
            "labels": {"clusterctl.cluster.x-k8s.io/core": "inventory"}},
        "providerName": name, "type": type_, "version": version,
    })
}
