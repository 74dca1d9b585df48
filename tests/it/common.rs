//! A sandbox management cluster on loopback and the plugin binary pointed at it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The user agent of every request the plugin sends, from the plugin itself: counting "the
/// plugin's requests" by it cannot pass vacuously if the plugin's agent changes.
pub const PLUGIN_AGENT: &str = kubectl_capi::kube::connect::USER_AGENT;

use capi_sandbox::apiserver::{KubeconfigEntry, write_kubeconfig};
use capi_sandbox::crds::{self, Dialect};
use capi_sandbox::{ApiServer, ServerOptions, Serving};

pub const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-capi");

/// The plugin the commands run: this build, or the one `KUBECTL_CAPI_TEST_BUILD` names (to search
/// an older build for what the fault search finds, say).
pub fn plugin_binary() -> PathBuf {
    std::env::var_os("KUBECTL_CAPI_TEST_BUILD").map_or_else(|| PathBuf::from(PLUGIN), PathBuf::from)
}

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

impl Output {
    /// Asserts that the command exited with `code` and said `text` on stderr (showing stderr
    /// when it did not).
    #[track_caller]
    pub fn assert_stderr(&self, code: i32, text: &str) {
        assert_eq!(self.code, code, "{}", self.stderr);
        assert!(self.stderr.contains(text), "{}", self.stderr);
    }
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
    let mut command = tokio::process::Command::new(plugin_binary());
    command.args(args);
    isolated(&mut command, kubeconfig);
    command
}

/// A hint the plugin printed, run as a user pastes it into a shell: `kubectl capi …` finds
/// this build of the plugin on PATH, with the same isolation as [`plugin_command`].
pub fn pasted_command(kubeconfig: Option<&Path>, hint: &str) -> tokio::process::Command {
    // bash, as users paste into (and zsh reads the same): hints that reach a workload cluster
    // read its kubeconfig with `<(…)`, which a POSIX sh lacks.
    let mut command = tokio::process::Command::new("bash");
    command.args(["-c", hint]);
    isolated(&mut command, kubeconfig);
    let binary = plugin_binary();
    let bin_dir = binary.parent().unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    command.env("PATH", format!("{}:{path}", bin_dir.display()));
    command
}

/// A hint pasted into a shell (as [`pasted_command`]), run to its end.
pub async fn paste(kubeconfig: Option<&Path>, hint: &str) -> Output {
    pasted_command(kubeconfig, hint)
        .output()
        .await
        .unwrap()
        .into()
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

/// The plugin's own lease (`kube-system/kubectl-capi`), which every writing command takes and
/// releases around its writes.
pub fn is_lease(r: &capi_sandbox::RequestRecord) -> bool {
    r.resource == "leases" && r.namespace.as_deref() == Some("kube-system")
}

/// What a server's request log says was written.
pub trait Writes {
    /// Writes that changed state, other than the plugin's lease: what "nothing was written"
    /// is about.
    fn writes(&self) -> Vec<capi_sandbox::RequestRecord>;
    /// Whether the plugin's lease is there (held, or left by a killed process).
    fn lease(&self) -> Option<serde_json::Value>;
}

/// Ages the lease of `server` past its duration, as if its holder had been gone that long (after
/// a SIGKILL: a test does not wait a minute for it).
pub async fn expire_lease(server: &capi_sandbox::ApiServer) {
    if server.lease().is_none() {
        return;
    }
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(server.client(), "kube-system");
    // Its renewal stamp on the boot clock too: at boot, longer ago than any renew deadline.
    let long_ago = serde_json::json!({
        "metadata": {"annotations": {"kubectl-capi.dev/renewed-since-boot": "0"}},
        "spec": {"renewTime": "2000-01-01T00:00:00.000000Z",
            "acquireTime": "2000-01-01T00:00:00.000000Z"}});
    leases
        .patch(
            "kubectl-capi",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&long_ago),
        )
        .await
        .unwrap();
}

impl Writes for capi_sandbox::ApiServer {
    fn writes(&self) -> Vec<capi_sandbox::RequestRecord> {
        self.mutations()
            .into_iter()
            .filter(|r| !is_lease(r))
            .collect()
    }

    fn lease(&self) -> Option<serde_json::Value> {
        self.object(
            "coordination.k8s.io",
            "leases",
            "kube-system",
            "kubectl-capi",
        )
    }
}

/// The plugin's writes that `server` applied while their sender did not hold its lease (named
/// none, or another holder than the Lease named then): the sandbox's fencing check.
pub fn unfenced_writes(server: &capi_sandbox::ApiServer) -> Vec<capi_sandbox::FencedWrite> {
    server
        .fenced_writes()
        .into_iter()
        .filter(|w| w.agent.starts_with(PLUGIN_AGENT) && !w.fenced())
        .collect()
}

pub use capi_sandbox::wait_until;

/// Whether `server` holds the Cluster `namespace/name`.
/// The control plane of Cluster `namespace/name` scaling from 1 to 3, the new Machine's node
/// held (by the source's controllers) until the test releases it.
pub async fn scale_up_holding_a_node(
    env: &capi_sandbox::environment::Environment,
    namespace: &str,
    name: &str,
) {
    env.source
        .controllers
        .holds
        .hold(None, capi_sandbox::controllers::Step::Node);
    capi_sandbox::api::merge_patch(
        &env.source.server.client(),
        "controlplane.cluster.x-k8s.io/v1beta2",
        "KubeadmControlPlane",
        namespace,
        &format!("{name}-control-plane"),
        &serde_json::json!({"spec": {"replicas": 3}}),
    )
    .await
    .unwrap();
    let holds = env.source.controllers.holds.clone();
    wait_until("the new Machine's node to be held", || {
        !holds.waiting().is_empty()
    })
    .await;
}

/// Runs `command` and, once the plugin watches the source's Machines (its wait has begun),
/// releases the nodes the source's controllers hold.
pub async fn releasing_held_nodes<T>(
    source: &capi_sandbox::environment::Managed,
    command: impl std::future::Future<Output = T>,
) -> T {
    let (out, ()) = tokio::join!(command, async {
        wait_until("the plugin to watch the Machines", || {
            plugin_watched(&source.server, "machines")
        })
        .await;
        source.controllers.holds.release_all();
    });
    out
}

/// Whether the plugin has watched `resource` on `server` (a wait has begun).
pub fn plugin_watched(server: &ApiServer, resource: &str) -> bool {
    server
        .requests()
        .iter()
        .any(|r| r.verb == "watch" && r.resource == resource && r.agent.starts_with(PLUGIN_AGENT))
}

pub fn has_cluster(server: &ApiServer, namespace: &str, name: &str) -> bool {
    server
        .object("cluster.x-k8s.io", "clusters", namespace, name)
        .is_some()
}

/// Seeded mutations of `valid` (bytes flipped, inserted, cut, repeated; special bytes and
/// numbers put in): the same for the same seed.
pub fn mutations(valid: &str, seed: u64, count: usize) -> Vec<Vec<u8>> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let specials: &[&[u8]] = &[
        b"\n",
        b"\0",
        b"\"",
        b"{",
        b"}",
        b"[",
        b"]",
        b":",
        b"-1",
        b"18446744073709551616",
        b"\xff\xfe",
        b"\\u0000",
        b"null",
        b"true",
        b"1e999",
        b"&a",
        b"*a",
        b"!!binary",
    ];
    (0..count)
        .map(|_| {
            let mut bytes = valid.as_bytes().to_vec();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % (bytes.len() + 1);
                match next() % 5 {
                    0 => bytes.truncate(at),
                    1 => bytes
                        .splice(
                            at..at,
                            specials[(next() as usize) % specials.len()].iter().copied(),
                        )
                        .for_each(drop),
                    2 if at < bytes.len() => bytes[at] ^= 1 << (next() % 8),
                    3 if at < bytes.len() => {
                        let end = (at + (next() as usize) % 16).min(bytes.len());
                        bytes.drain(at..end);
                    }
                    _ => {
                        let end = (at + (next() as usize) % 32).min(bytes.len());
                        let piece = bytes[at..end].to_vec();
                        bytes.splice(at..at, piece).for_each(drop);
                    }
                }
            }
            bytes
        })
        .collect()
}
