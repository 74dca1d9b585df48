//! Bad input and unreachable or refusing servers: one `error:` line naming problem and fix,
//! exit code 2, and nothing written.

use crate::common::Writes;
use capi_sandbox::ServerOptions;
use capi_sandbox::crds::Dialect;

use crate::common::{Output, Sandbox, run_plugin};

/// Bad input or an unusable server (exit 2) in one `error:` line holding `contains`.
pub(crate) fn assert_one_line_error(output: &Output, contains: &str) {
    assert_one_line(output, 2, contains);
}

/// A refusal (exit 1) in one `error:` line: a missing permission, say.
fn assert_one_line_refusal(output: &Output, contains: &str) {
    assert_one_line(output, 1, contains);
}

fn assert_one_line(output: &Output, code: i32, contains: &str) {
    assert_eq!(output.code, code, "stderr: {}", output.stderr);
    let lines: Vec<&str> = output.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {:?}", output.stderr);
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    assert!(
        lines[0].contains(contains),
        "{:?} should contain {contains:?}",
        lines[0]
    );
    assert!(
        output.stdout.is_empty(),
        "nothing on stdout: {}",
        output.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_reads_as_a_kubectl_plugin() {
    let help = run_plugin(None, &["--help"]).await;
    assert_eq!(help.code, 0);
    assert!(
        help.stdout
            .contains("Usage: kubectl capi [OPTIONS] <COMMAND>"),
        "{}",
        help.stdout
    );
    for flag in [
        "--kubeconfig",
        "--context",
        "--namespace",
        "--all-namespaces",
        "--selector",
        "--output",
        "--request-timeout",
        "--as",
        "--as-group",
        "--insecure-skip-tls-verify",
        "--color",
    ] {
        assert!(help.stdout.contains(flag), "{flag} in help");
    }
    // Every exit code, from their one definition, in the help of every command.
    for command in ["", "ready", "pause", "resume", "move", "verify"] {
        let args: Vec<&str> = [command, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let help = run_plugin(None, &args).await;
        for status in kubectl_capi::output::ExitStatus::ALL {
            assert!(
                help.stdout.contains(&format!("\n  {:<4} ", status.code())),
                "{command}: exit code {} in {}",
                status.code(),
                help.stdout
            );
        }
    }
    // A command's own flags come first, kubectl's after them under their own heading.
    let move_help = run_plugin(None, &["move", "--help"]).await;
    let at = |needle: &str| {
        move_help
            .stdout
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} in {}", move_help.stdout))
    };
    assert!(at("--to-context") < at("--concurrency"));
    assert!(at("--from-directory") < at("kubectl flags:"));
    assert!(at("kubectl flags:") < at("--kubeconfig <PATH>"));
    let version = run_plugin(None, &["version", "--client", "-o", "json"]).await;
    assert_eq!(version.code, 0);
    let report: serde_json::Value = serde_json::from_str(&version.stdout).unwrap();
    assert_eq!(report["plugin"], env!("CARGO_PKG_VERSION"));
    assert!(report.get("managementCluster").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_flags_and_files() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    assert_one_line_error(
        &sandbox.plugin(&["version", "-o", "xml"]).await,
        "invalid value 'xml' for '--output <FORMAT>' ([possible values: table, wide, json, yaml, name]",
    );
    assert_one_line_error(
        &sandbox.plugin(&["version", "--bogus"]).await,
        "unexpected argument '--bogus'",
    );
    assert_one_line_error(
        &sandbox
            .plugin(&["version", "--request-timeout", "soon"])
            .await,
        "invalid value 'soon' for '--request-timeout <DURATION>': \"soon\" is not a duration",
    );
    // --timeout only bounds --wait: alone it is refused, naming what is missing.
    for command in [&["ready"][..], &["pause", "--all"], &["resume", "--all"]] {
        let mut args = command.to_vec();
        args.extend(["--timeout", "5s"]);
        assert_one_line_error(
            &sandbox.plugin(&args).await,
            "error: the following required arguments were not provided: --wait; see 'kubectl capi --help'",
        );
    }
    // A huge --timeout is refused with the longest allowed (it used to panic, exit 101).
    assert_one_line_error(
        &sandbox
            .plugin(&["ready", "--wait", "--timeout", "99999999999999999999h"])
            .await,
        "longer than the longest allowed, 8760h",
    );
    let missing = run_plugin(
        None,
        &["version", "--kubeconfig", "/nonexistent/kubeconfig"],
    )
    .await;
    assert_one_line_error(
        &missing,
        "kubeconfig /nonexistent/kubeconfig not found; pass an existing file with --kubeconfig",
    );
    assert_one_line_error(
        &sandbox.plugin(&["version", "--context", "elsewhere"]).await,
        "context \"elsewhere\" (--context) is not in the kubeconfig",
    );
    assert!(sandbox.server.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_server() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    let closed = sandbox.kubeconfig_with("closed", |e| e.server = "http://127.0.0.1:1".into());
    let output = run_plugin(Some(&closed), &["version"]).await;
    assert_one_line_error(&output, "cannot reach the API server at http://127.0.0.1:1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_failure_and_bad_token() {
    let sandbox = Sandbox::start_with(
        Dialect::V1beta2,
        ServerOptions {
            tls: true,
            token: Some("s3cret".into()),
            ..ServerOptions::default()
        },
    )
    .await;
    let ok = sandbox.plugin(&["version", "-o", "json"]).await;
    assert_eq!(ok.code, 0, "{}", ok.stderr);

    let untrusted = sandbox.kubeconfig_with("untrusted", |e| e.ca_pem = None);
    let output = run_plugin(Some(&untrusted), &["version"]).await;
    assert_one_line_error(
        &output,
        "TLS connection to the API server at https://127.0.0.1:",
    );
    assert!(output.stderr.contains("--insecure-skip-tls-verify"));
    let insecure = run_plugin(Some(&untrusted), &["version", "--insecure-skip-tls-verify"]).await;
    assert_eq!(insecure.code, 0, "{}", insecure.stderr);

    let wrong = sandbox.kubeconfig_with("wrong-token", |e| e.token = Some("wrong".into()));
    assert_one_line_error(
        &run_plugin(Some(&wrong), &["version"]).await,
        "rejected the credentials (401 Unauthorized)",
    );
    assert!(sandbox.server.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_user() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    let output = sandbox.plugin(&["version", "--as", "nobody"]).await;
    assert_one_line_refusal(
        &output,
        "User \"nobody\" cannot list resource \"providers\"",
    );
    assert!(output.stderr.contains("(403 Forbidden)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_api_not_installed() {
    let sandbox = Sandbox::start(Dialect::None).await;
    let output = sandbox.plugin(&["version"]).await;
    assert_one_line_error(
        &output,
        "serves no Cluster API kinds (group cluster.x-k8s.io not found)",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_reports_the_management_cluster() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    sandbox.server.load(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "capi-system"}})).unwrap();
    sandbox
        .server
        .load(crate::common::capi_provider(
            "cluster-api",
            "CoreProvider",
            "v1.11.3",
            "capi-system",
        ))
        .unwrap();
    let output = sandbox.plugin(&["version", "-o", "json"]).await;
    assert_eq!(output.code, 0, "{}", output.stderr);
    let report: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
    let management = &report["managementCluster"];
    assert_eq!(management["clusterApiVersion"], "v1.11.3");
    assert_eq!(management["apiDialect"], "v1beta2");
    assert!(
        management["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k == "KubeadmControlPlane.controlplane.cluster.x-k8s.io")
    );
    let table = sandbox.plugin(&["version"]).await;
    assert!(
        table.stdout.contains("Cluster API version: v1.11.3"),
        "{}",
        table.stdout
    );
    assert!(sandbox.server.writes().is_empty(), "version writes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_needs_a_target_unless_dry_run() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    assert_one_line_error(
        &sandbox.plugin(&["move"]).await,
        "please specify a target cluster using --to-kubeconfig and/or --to-context",
    );
    assert_one_line_error(
        &sandbox.plugin(&["move", "--dry-run=sometimes"]).await,
        "invalid value 'sometimes' for '--dry-run[=<client|server>]' ([possible values: none, client, server])",
    );
    assert!(sandbox.server.writes().is_empty());
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    // The reading end is gone before the plugin writes: its first write fails with EPIPE.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = std::process::Command::new(crate::common::PLUGIN)
        .args(["completion", "bash"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(141),
        "as kubectl ends on SIGPIPE"
    );
    assert!(
        output.stderr.is_empty(),
        "quietly: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A listener that accepts connections and never answers: a hung API server.
async fn hung_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (url, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_fails_after_two_bounded_attempts() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    let (url, _server) = hung_server().await;
    let hung = sandbox.kubeconfig_with("hung", |e| e.server = url.clone());
    let output = run_plugin(Some(&hung), &["ready", "--request-timeout", "1s"]).await;
    assert_one_line_error(
        &output,
        &format!("the API server at {url} did not answer within 1s, 2 times; check that it is up"),
    );
    assert_eq!(
        output.stderr.matches("1s").count(),
        1,
        "the timeout is named once"
    );
    // Each attempt is logged at -v 6: two, then the command gives up.
    let logged = run_plugin(
        Some(&hung),
        &["ready", "--request-timeout", "1s", "-v", "6"],
    )
    .await;
    assert_eq!(logged.code, 2, "{}", logged.stderr);
    let attempts: Vec<&str> = logged
        .stderr
        .lines()
        .filter(|l| l.starts_with("GET "))
        .collect();
    assert_eq!(attempts.len(), 2, "{}", logged.stderr);
}

/// A server that answers every request with the same raw HTTP response.
async fn answering(response: &'static str) -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(n) = socket.read(&mut buffer).await {
                    if n == 0 || socket.write_all(response.as_bytes()).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    (url, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_kubernetes_is_named_as_such() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    for (response, answer) in [
        (
            "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            "it answered 404 Not Found with an empty body while discovering the Cluster API kinds",
        ),
        (
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 27\r\n\r\n<html><body>hi</body></html",
            "it answered 200 OK text/html while discovering the Cluster API kinds",
        ),
    ] {
        let (url, _server) = answering(response).await;
        let other = sandbox.kubeconfig_with("other", |e| e.server = url.clone());
        for command in [&["ready"][..], &["version"], &["move", "--dry-run=client"]] {
            let output = run_plugin(Some(&other), command).await;
            assert_one_line_error(
                &output,
                &format!(
                    "{url} is not a Kubernetes API server ({answer}); check --context/--kubeconfig"
                ),
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_lists_and_yaml_errors_are_read_as_kubectl_reads_them() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    let missing = sandbox.dir.path().join("missing");
    let listed = std::env::join_paths([&sandbox.kubeconfig, &missing]).unwrap();
    // A missing file in KUBECONFIG is skipped, as kubectl skips it.
    let mut command = crate::common::plugin_command(None, &["version", "-o", "json"]);
    let output = command.env("KUBECONFIG", &listed).output().await.unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // None of them exists: one line naming them all.
    let none = std::env::join_paths([&missing, &sandbox.dir.path().join("gone")]).unwrap();
    let mut command = crate::common::plugin_command(None, &["version"]);
    let output = command.env("KUBECONFIG", &none).output().await.unwrap();
    let output = Output {
        code: output.status.code().unwrap(),
        stdout: String::from_utf8_lossy(&output.stdout).into(),
        stderr: String::from_utf8_lossy(&output.stderr).into(),
    };
    assert_one_line_error(
        &output,
        &format!(
            "none of the files KUBECONFIG lists exists ({}, ",
            missing.display()
        ),
    );
    // A YAML error: file, line and column, no code frame.
    let broken = sandbox.dir.path().join("broken");
    std::fs::write(
        &broken,
        "apiVersion: v1\nkind: Config\nclusters:\n  - name: [oops\n",
    )
    .unwrap();
    assert_one_line_error(
        &run_plugin(Some(&broken), &["version"]).await,
        &format!(
            "error: {}:4:11: expected string scalar; fix the kubeconfig or pass another with --kubeconfig",
            broken.display()
        ),
    );
    // The same for a backup file.
    let backup = sandbox.dir.path().join("backup");
    std::fs::create_dir(&backup).unwrap();
    std::fs::write(
        backup.join("Cluster_ns1_foo.yaml"),
        "kind: Cluster\nmetadata: {name: [x\n",
    )
    .unwrap();
    let restore = sandbox
        .plugin(&["move", "--from-directory", backup.to_str().unwrap()])
        .await;
    assert_one_line_error(
        &restore,
        &format!(
            "error: {}:2:18: expected string scalar; a backup file holds one Kubernetes object — fix or remove it",
            backup.join("Cluster_ns1_foo.yaml").display()
        ),
    );
    assert!(sandbox.server.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_missing_read_permission_is_named_at_once() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    let ready = sandbox.plugin(&["ready", "-A", "--as", "nobody"]).await;
    assert_one_line_refusal(
        &ready,
        "error: the API server forbids listing 25 resources this command reads: clusters.cluster.x-k8s.io, clusterclasses.cluster.x-k8s.io, machines.cluster.x-k8s.io,",
    );
    // The move must read the CRDs to know its kinds; it still names every other read it lacks.
    let plan = sandbox
        .plugin(&["move", "--dry-run=client", "-A", "--as", "nobody"])
        .await;
    for resource in [
        "customresourcedefinitions.apiextensions.k8s.io",
        "clusters.cluster.x-k8s.io",
        "dockermachines.infrastructure.cluster.x-k8s.io",
        "secrets",
        "configmaps",
    ] {
        assert_one_line_refusal(&plan, &format!(" {resource}"));
    }
    // Two reads denied to everyone, while the rest are allowed.
    sandbox.server.deny("list", "machinedeployments");
    sandbox.server.deny("list", "machinesets");
    assert_one_line_refusal(
        &sandbox.plugin(&["pause", "--all"]).await,
        "error: the API server forbids listing 2 resources this command reads: machinedeployments.cluster.x-k8s.io, machinesets.cluster.x-k8s.io (403 Forbidden)",
    );
    assert!(sandbox.server.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_without_cluster_api_is_named_by_the_target_flags() {
    let source = Sandbox::start(Dialect::V1beta2).await;
    let bare = Sandbox::start(Dialect::None).await;
    let kubeconfig = source.dir.path().join("both");
    capi_sandbox::apiserver::write_kubeconfig(
        &kubeconfig,
        &[
            source.serving.kubeconfig_entry("source"),
            bare.serving.kubeconfig_entry("bare"),
        ],
    )
    .unwrap();
    let output = run_plugin(Some(&kubeconfig), &["move", "--to-context", "bare"]).await;
    assert_one_line_error(
        &output,
        &format!(
            "the target ({}) serves no Cluster API kinds (group cluster.x-k8s.io not found); is this a Cluster API management cluster? choose one with --to-context/--to-kubeconfig (install Cluster API there first with `clusterctl init --kubeconfig-context bare`)",
            bare.serving.url
        ),
    );
    assert!(source.server.writes().is_empty() && bare.server.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_a_scheme_is_named_not_panicked_on() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    let bare = sandbox.kubeconfig_with("no-scheme", |e| {
        e.server = e.server.trim_start_matches("http://").to_string();
    });
    let address = sandbox
        .serving
        .url
        .trim_start_matches("http://")
        .to_string();
    for args in [&["ready", "-A"][..], &["version"], &["pause", "--all"]] {
        let mut full: Vec<&str> = args.to_vec();
        let path = bare.to_str().unwrap();
        full.extend(["--kubeconfig", path]);
        let out = run_plugin(None, &full).await;
        assert_one_line_error(
            &out,
            &format!("{path}: cluster \"sandbox\" has server \"{address}"),
        );
        assert!(
            out.stderr
                .contains(&format!("write it as \"https://{address}")),
            "{args:?}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
}

/// A kubeconfig holding the source sandbox (context "source") and `other` at `url` (context
/// "other"): a move from the one to the other.
fn two_ends(source: &Sandbox, url: &str) -> std::path::PathBuf {
    let mut other = source.serving.kubeconfig_entry("other");
    other.server = url.to_string();
    let path = source
        .dir
        .path()
        .join(format!("two-{}", url.rsplit(':').next().unwrap()));
    capi_sandbox::apiserver::write_kubeconfig(
        &path,
        &[source.serving.kubeconfig_entry("source"), other],
    )
    .unwrap();
    path
}

/// A move from `source` into a server that answers every request with `response`: that server's
/// URL and what the move printed.
async fn move_into_answering(source: &Sandbox, response: &'static str) -> (String, Output) {
    let (url, _server) = answering(response).await;
    let kubeconfig = two_ends(source, &url);
    let output = run_plugin(
        Some(&kubeconfig),
        &["move", "--context", "source", "--to-context", "other"],
    )
    .await;
    (url, output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_is_not_kubernetes_is_named_by_its_end_url_and_answer() {
    let source = Sandbox::start(Dialect::V1beta2).await;
    for (response, answer) in [
        (
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 44\r\n\r\n<!DOCTYPE HTML><html><body>hi</body></html>",
            "200 OK text/html",
        ),
        (
            "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 19\r\n\r\n404 page not found\n",
            "404 Not Found text/plain",
        ),
    ] {
        let (url, output) = move_into_answering(&source, response).await;
        assert_one_line_error(
            &output,
            &format!(
                "the target ({url}) is not a Kubernetes API server (it answered {answer} while reading namespace kube-system); check --to-context/--to-kubeconfig"
            ),
        );
        for raw in ["<", "internal server error", "page not found"] {
            assert!(
                !output.stderr.contains(raw),
                "never printed raw: {}",
                output.stderr
            );
        }
    }
    // A 500 in a text body is a server (or a proxy) failing, not one that is not Kubernetes.
    let (url, output) = move_into_answering(
        &source,
        "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: 21\r\n\r\ninternal server error",
    )
    .await;
    assert_one_line_error(
        &output,
        &format!(
            "the target ({url}) answered 500 Internal Server Error text/plain while reading namespace kube-system, also when asked again; the server (or a proxy in front of it) is failing: check that it is healthy, or that --to-context/--to-kubeconfig point at the cluster you meant"
        ),
    );
    assert!(
        !output.stderr.contains("not a Kubernetes API server"),
        "{}",
        output.stderr
    );
    assert!(source.server.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_name_the_flag_and_the_file_the_user_gave_and_their_hints_work_when_pasted() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    let path = sandbox.kubeconfig.to_str().unwrap().to_string();
    let with_file = |extra: &[&str]| {
        let mut args = vec!["--kubeconfig", path.as_str()];
        args.extend_from_slice(extra);
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_plugin(None, &args).await
    };
    // An unknown --to-context: that flag, the file it was looked up in, and a listing that runs.
    let unknown = run(with_file(&["move", "--to-context", "nosuch"])).await;
    assert_one_line_error(
        &unknown,
        &format!(
            "context \"nosuch\" (--to-context) is not in the kubeconfig {path}; list contexts with `kubectl config get-contexts --kubeconfig {path}` and pass one with --to-context"
        ),
    );
    let listing = unknown.stderr.split('`').nth(1).unwrap();
    let listed = crate::common::pasted_command(None, listing)
        .output()
        .await
        .unwrap();
    assert!(listed.status.success(), "{listing}");
    assert!(String::from_utf8_lossy(&listed.stdout).contains("sandbox"));
    // The same for verify's source.
    let unknown = run(with_file(&["verify", "--from-context", "nosuch"])).await;
    assert_one_line_error(
        &unknown,
        "context \"nosuch\" (--from-context) is not in the kubeconfig",
    );
    // A missing or empty target kubeconfig: --to-kubeconfig, and the file.
    let missing = sandbox.dir.path().join("missing");
    let output = run(with_file(&[
        "move",
        "--to-kubeconfig",
        missing.to_str().unwrap(),
    ]))
    .await;
    assert_one_line_error(
        &output,
        &format!(
            "kubeconfig {} not found; pass an existing file with --to-kubeconfig",
            missing.display()
        ),
    );
    let empty = sandbox.dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    let output = run(with_file(&[
        "move",
        "--to-kubeconfig",
        empty.to_str().unwrap(),
    ]))
    .await;
    assert_one_line_error(
        &output,
        &format!(
            "the kubeconfig {} holds no contexts (is it empty?); fix the file or pass another with --to-kubeconfig",
            empty.display()
        ),
    );
    // No current context: pass one with --context; the listing it names runs.
    let text = std::fs::read_to_string(&sandbox.kubeconfig).unwrap();
    let no_current = sandbox.dir.path().join("no-current");
    std::fs::write(
        &no_current,
        text.lines()
            .filter(|l| !l.starts_with("current-context"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let output = run_plugin(
        None,
        &["ready", "--kubeconfig", no_current.to_str().unwrap()],
    )
    .await;
    assert_one_line_error(
        &output,
        "sets no current-context; pass one with --context (list them with `kubectl config get-contexts --kubeconfig",
    );
    let listing = output.stderr.split('`').nth(1).unwrap();
    let listed = crate::common::pasted_command(None, listing)
        .output()
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("sandbox"),
        "{listing}"
    );
    assert!(sandbox.server.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_negative_duration_is_refused_without_a_tip_that_fails() {
    for args in [
        &["ready", "--wait", "--timeout", "-5"][..],
        &["move", "--timeout", "-5"],
        &["ready", "--request-timeout", "-1s"],
    ] {
        let output = run_plugin(None, args).await;
        assert_one_line_error(
            &output,
            "is negative: a duration counts forward, e.g. 30s or 10m",
        );
        assert!(!output.stderr.contains("'-- "), "{}", output.stderr);
    }
    let output = run_plugin(None, &["ready", "-5"]).await;
    assert_one_line_error(
        &output,
        "unexpected argument '-5' found; see 'kubectl capi --help'",
    );
}

/// The other way round: `http://` to a server that speaks HTTPS is named as such, with the
/// `https://` to write (and that works), never as hyper's "invalid HTTP version parsed".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_to_an_https_server_says_to_write_https_and_that_fix_works() {
    let sandbox = Sandbox::start_with(
        Dialect::V1beta2,
        capi_sandbox::ServerOptions {
            tls: true,
            ..capi_sandbox::ServerOptions::default()
        },
    )
    .await;
    let https = sandbox.serving.url.clone();
    let http = https.replacen("https://", "http://", 1);
    let wrong = sandbox.kubeconfig_with("http", |e| e.server = http.clone());
    let output = run_plugin(Some(&wrong), &["ready", "-A"]).await;
    assert_one_line_error(
        &output,
        &format!(
            "the API server at {http} did not answer in HTTP (it may speak HTTPS, as API servers do); write the kubeconfig's server as {https}"
        ),
    );
    assert!(!output.stderr.contains("SendRequest"), "{}", output.stderr);
    let fixed = std::fs::read_to_string(&wrong)
        .unwrap()
        .replace(&http, &https);
    std::fs::write(&wrong, fixed).unwrap();
    let output = run_plugin(Some(&wrong), &["ready", "-A"]).await;
    assert_eq!(output.code, 0, "{}", output.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_to_a_plain_http_server_says_to_write_http_and_that_fix_works() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    let http = sandbox.serving.url.clone();
    let https = http.replacen("http://", "https://", 1);
    let wrong = sandbox.kubeconfig_with("https", |e| e.server = https.clone());
    let output = run_plugin(Some(&wrong), &["ready", "-A", "--insecure-skip-tls-verify"]).await;
    assert_one_line_error(
        &output,
        &format!(
            "the API server at {https} speaks plain HTTP, not HTTPS; write the kubeconfig's server as {http}"
        ),
    );
    // As a move's target it is named as the target.
    let kubeconfig = two_ends(&sandbox, &https);
    let output = run_plugin(
        Some(&kubeconfig),
        &["move", "--context", "source", "--to-context", "other"],
    )
    .await;
    assert_one_line_error(&output, &format!("the target ({https}) speaks plain HTTP"));
    // Written as it says, the kubeconfig works.
    let fixed = std::fs::read_to_string(&wrong)
        .unwrap()
        .replace(&https, &http);
    std::fs::write(&wrong, fixed).unwrap();
    let output = run_plugin(Some(&wrong), &["ready", "-A"]).await;
    assert_eq!(output.code, 0, "{}", output.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_are_checked_by_the_rule_they_break_before_any_request() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    sandbox.server.reset_requests();
    for (args, says) in [
        (
            &["ready", "-n", "a b"][..],
            "invalid namespace \"a b\" (-n): a DNS-1123 label is",
        ),
        (
            &["move", "--dry-run", "-n", "Prod"],
            "invalid namespace \"Prod\" (-n)",
        ),
        (
            &["ready", "-l", "env=prod tier=db"],
            "invalid label selector \"env=prod tier=db\" (-l): unexpected \"tier\"",
        ),
        (
            &["pause", "-l", "env in (a"],
            "the list after \"env\" is not closed",
        ),
        (
            &["ready", "Work_1"],
            "invalid Cluster name \"Work_1\": a DNS-1123 subdomain is",
        ),
        (&["verify", "a b"], "invalid Cluster name \"a b\""),
        (
            &["ready", &"w".repeat(64)],
            "a Cluster's name is at most 63 characters, as Cluster API writes it as the value of the label cluster.x-k8s.io/cluster-name",
        ),
        (
            &["move", "--concurrency", "-1", "--dry-run"],
            "invalid value '-1' for '--concurrency <N>': -1 is not in 1..=256",
        ),
    ] {
        assert_one_line_error(&sandbox.plugin(args).await, says);
    }
    assert!(sandbox.server.requests().is_empty(), "no request was sent");
}

#[tokio::test]
async fn a_lease_duration_a_real_server_refuses_is_a_usage_error_before_any_request() {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    sandbox.server.reset_requests();
    // 0 and -1 a real server answers 422, 2^31 and more 400; "abc" and 18446744073709551615 once
    // became 60 s or a panic after the Lease was created.
    for value in [
        "0",
        "-1",
        "abc",
        "",
        "86401",
        "2147483648",
        "18446744073709551615",
    ] {
        let mut command =
            crate::common::plugin_command(Some(&sandbox.kubeconfig), &["pause", "--all"]);
        command.env(kubectl_capi::kube::lease_timing::DURATION_ENV, value);
        let output: Output = command.output().await.unwrap().into();
        assert_one_line_error(
            &output,
            &format!(
                "KUBECTL_CAPI_LEASE_SECONDS={value} is not a whole number of seconds from 1 to 86400"
            ),
        );
    }
    assert!(sandbox.server.requests().is_empty(), "no request was sent");
}

/// A kubeconfig's own oddities never crash the plugin or leak a secret: a token with a line
/// break (it panicked the HTTP layer) is a one-line error naming the user; a password in a
/// server URL is never repeated, whatever fails.
#[tokio::test]
async fn a_token_with_a_line_break_or_a_password_in_a_url_is_named_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, server: &str, token: &str| {
        let path = dir.path().join(name);
        let text = serde_json::json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": {"token": token}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]});
        std::fs::write(&path, text.to_string()).unwrap();
        path
    };
    let newline = write("newline", "https://127.0.0.1:1", "abc\nTOKEN-canary");
    let out = run_plugin(Some(&newline), &["ready", "-A"]).await;
    assert_one_line_error(
        &out,
        "the token of user \"u\" holds a line break or control character",
    );
    assert!(!out.stderr.contains("TOKEN-canary"), "{}", out.stderr);
    let password = write("password", "https://admin:PASSWORD-canary@127.0.0.1:1", "t");
    for args in [
        &["ready", "-A"][..],
        &["version"],
        &["pause", "w1", "-v", "8"],
    ] {
        let out = run_plugin(Some(&password), args).await;
        assert_ne!(out.code, 101, "{}", out.stderr);
        assert_ne!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stderr.contains("127.0.0.1:1"),
            "{args:?}: {}",
            out.stderr
        );
        for text in [&out.stderr, &out.stdout] {
            assert!(!text.contains("PASSWORD"), "{args:?}: {text}");
            assert!(!text.contains("admin:"), "{args:?}: {text}");
        }
    }
}
