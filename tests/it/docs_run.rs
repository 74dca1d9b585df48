//! The documentation's commands, run as written: every command line of the README and of
//! `docs/` is claimed here by the test that runs it (through real kubectl's plugin lookup,
//! against the sandbox), or named with the reason it cannot run on this machine.

use std::path::{Path, PathBuf};
use std::time::Duration;

use capi_sandbox::apiserver::write_kubeconfig;
use capi_sandbox::controllers::Delays;
use capi_sandbox::crds::Dialect;
use capi_sandbox::environment::{Environment, Options};
use capi_sandbox::workload::Workload;

/// Who runs a page's command.
enum Runs {
    /// This test of this file runs it as written.
    In(&'static str),
    /// It cannot run here: why, and what checks it instead.
    Not(&'static str),
}

use Runs::{In, Not};

/// Every command line of the pages, with the test that runs it.
const COMMANDS: &[(&str, &str, Runs)] = &[
    (
        "README.md",
        "kubectl krew install capi",
        Not(
            "krew-index is on the network; the_install_commands_run_as_written installs the same manifest with --manifest",
        ),
    ),
    (
        "README.md",
        "curl -LO https://github.com/kubectl-capi/kubectl-capi/releases/download/v0.1.0/kubectl-capi_v0.1.0_x86_64-unknown-linux-musl.tar.gz",
        Not(
            "GitHub is on the network; the_install_commands_run_as_written unpacks an archive of that name built here",
        ),
    ),
    (
        "README.md",
        "tar xzf kubectl-capi_v0.1.0_x86_64-unknown-linux-musl.tar.gz kubectl-capi kubectl_complete-capi",
        In("the_install_commands_run_as_written"),
    ),
    (
        "README.md",
        "install kubectl-capi kubectl_complete-capi ~/.local/bin/",
        In("the_install_commands_run_as_written"),
    ),
    (
        "README.md",
        "cargo install --locked --path .",
        In("the_install_commands_run_as_written"),
    ),
    (
        "README.md",
        "scripts/package.sh --build --target x86_64-unknown-linux-gnu --out dist",
        In("the_install_commands_run_as_written"),
    ),
    (
        "README.md",
        "kubectl krew install --manifest=dist/capi.yaml --archive=dist/kubectl-capi_v0.1.0_x86_64-unknown-linux-gnu.tar.gz",
        In("the_install_commands_run_as_written"),
    ),
    (
        "README.md",
        "mkdir -p ~/.local/bin",
        In("the_completion_commands_run_as_written"),
    ),
    (
        "README.md",
        "kubectl capi completion kubectl > ~/.local/bin/kubectl_complete-capi",
        In("the_completion_commands_run_as_written"),
    ),
    (
        "README.md",
        "chmod +x ~/.local/bin/kubectl_complete-capi",
        In("the_completion_commands_run_as_written"),
    ),
    (
        "README.md",
        "kubectl capi ready -n prod",
        In("the_readme_story_runs_as_written"),
    ),
    (
        "README.md",
        "kubectl capi pause prod-1 -n prod",
        In("the_readme_story_runs_as_written"),
    ),
    (
        "README.md",
        "kubectl capi ready prod-1 -n prod --wait",
        In("the_readme_story_runs_as_written"),
    ),
    (
        "README.md",
        "kubectl capi move prod-1 -n prod --to-context new --dry-run=server",
        In("the_readme_story_runs_as_written"),
    ),
    (
        "README.md",
        "kubectl capi move prod-1 -n prod --to-context new",
        In("the_readme_story_runs_as_written"),
    ),
    (
        "README.md",
        "kubectl capi resume prod-1 -n prod --context new",
        In("the_readme_story_runs_as_written"),
    ),
    (
        "README.md",
        "kubectl capi verify prod-1 -n prod --context new --wait",
        In("the_readme_story_runs_as_written"),
    ),
    (
        "README.md",
        "kubectl capi move prod-1 -n prod --to-context new --freeze --wait-ready --verify",
        In("the_readme_story_runs_as_written"),
    ),
    (
        "README.md",
        "scripts/demo.sh",
        In("the_demo_script_runs_as_written"),
    ),
    (
        "README.md",
        "cargo test --workspace --locked",
        In("the_test_command_is_what_ci_runs"),
    ),
    (
        "docs/development.md",
        "cargo test --workspace --locked",
        In("the_test_command_is_what_ci_runs"),
    ),
    (
        "docs/usage.md",
        "mkdir -p ~/.local/bin",
        In("the_completion_commands_run_as_written"),
    ),
    (
        "docs/usage.md",
        "kubectl capi completion kubectl > ~/.local/bin/kubectl_complete-capi",
        In("the_completion_commands_run_as_written"),
    ),
    (
        "docs/usage.md",
        "chmod +x ~/.local/bin/kubectl_complete-capi",
        In("the_completion_commands_run_as_written"),
    ),
    (
        "docs/usage.md",
        r"kubectl capi completion kubectl > %USERPROFILE%\bin\kubectl_complete-capi.cmd",
        Not("cmd.exe on Windows; kubectl_plugin.rs checks the .cmd completer's text"),
    ),
    (
        "docs/verify.md",
        "kubectl capi move --to-context sandbox-target --verify",
        In("the_verify_page_runs_as_written"),
    ),
    (
        "docs/verify.md",
        "kubectl capi verify --context sandbox-target --from-context sandbox-source",
        In("the_verify_page_runs_as_written"),
    ),
    (
        "docs/benchmark.md",
        "cargo build --release -p kubectl-capi -p capi-sandbox-tools",
        Not(
            "a release build for a benchmark of minutes; move_reliability.rs runs bench-move small",
        ),
    ),
    (
        "docs/benchmark.md",
        "target/release/capi-sandbox bench-move --plugin target/release/kubectl-capi",
        Not("a benchmark of minutes on a quiet machine; move_reliability.rs runs bench-move small"),
    ),
    (
        "docs/sandbox.md",
        "cargo run --release -p capi-sandbox-tools -- bench-apiserver",
        Not("a capacity benchmark of minutes in a release build, not a check"),
    ),
    (
        "docs/sandbox.md",
        "cargo run -p capi-sandbox-tools -- serve --kubeconfig sandbox.kubeconfig",
        In("the_sandbox_page_runs_as_written"),
    ),
    (
        "docs/sandbox.md",
        "kubectl --kubeconfig sandbox.kubeconfig api-resources",
        In("the_sandbox_page_runs_as_written"),
    ),
    (
        "docs/sandbox.md",
        "kubectl --kubeconfig sandbox.kubeconfig get clusters -A",
        In("the_sandbox_page_runs_as_written"),
    ),
    (
        "docs/sandbox.md",
        "cargo run -p capi-sandbox-tools -- up --clusters 2 --control-plane-replicas 1 --workers 2",
        In("the_sandbox_page_runs_as_written"),
    ),
    (
        "docs/sandbox.md",
        "kubectl --kubeconfig sandbox.kubeconfig --context sandbox-source get machines -w",
        In("the_sandbox_page_runs_as_written"),
    ),
    (
        "docs/sandbox.md",
        "cargo run -p capi-sandbox-tools -- scale --cluster workload-1 --control-plane 3",
        In("the_sandbox_page_runs_as_written"),
    ),
    (
        "docs/sandbox.md",
        "cargo run -p capi-sandbox-tools -- node --machine <machine> --unhealthy",
        In("the_sandbox_page_runs_as_written"),
    ),
    (
        "docs/sandbox.md",
        "cargo run -p capi-sandbox-tools -- up --clusters 1 --self-hosted workload-1",
        In("the_sandbox_page_runs_as_written"),
    ),
    (
        "docs/sandbox.md",
        "kubectl capi move workload-1 --to-cluster workload-1 --verify --kubeconfig sandbox.kubeconfig --context sandbox-source",
        In("the_sandbox_page_runs_as_written"),
    ),
];

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The README and every page of `docs/`, relative to the repository.
fn pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Programs a command block starts with; other indented blocks are output or data.
const PROGRAMS: &[&str] = &[
    "kubectl ", "cargo ", "scripts/", "curl ", "tar ", "install ", "mkdir ", "chmod ", "target/",
];

/// The commands of a page: the lines of its indented blocks that start with a program (after a
/// `$ ` prompt, in a block that has one), continued lines joined, trailing `# …` dropped.
fn commands_of(page: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(page)).unwrap();
    // A block: consecutive lines indented by four spaces.
    let mut blocks: Vec<Vec<&str>> = vec![Vec::new()];
    for line in text.lines() {
        match line.strip_prefix("    ") {
            Some(code) => blocks.last_mut().unwrap().push(code),
            None => blocks.push(Vec::new()),
        }
    }
    let mut commands = Vec::new();
    for block in blocks {
        let prompted = block.iter().any(|l| l.starts_with("$ "));
        let mut lines = block.iter().map(|l| l.trim_end());
        while let Some(line) = lines.next() {
            let line = match (prompted, line.strip_prefix("$ ")) {
                (true, Some(command)) => command,
                (true, None) => continue,
                (false, _) => line,
            };
            if !PROGRAMS.iter().any(|p| line.starts_with(p)) {
                continue;
            }
            let mut command = line.to_string();
            while let Some(head) = command.strip_suffix('\\') {
                command = format!("{} {}", head.trim_end(), lines.next().unwrap_or("").trim());
            }
            let command = match command.find(" # ") {
                Some(at) => command[..at].trim_end().to_string(),
                None => command,
            };
            commands.push(command);
        }
    }
    commands
}

/// The commands of `page` that `test` runs, in the page's order.
fn run_by(page: &str, test: &str) -> Vec<String> {
    let claimed: Vec<&str> = COMMANDS
        .iter()
        .filter(|(p, _, runs)| *p == page && matches!(runs, In(t) if *t == test))
        .map(|(_, command, _)| *command)
        .collect();
    let commands: Vec<String> = commands_of(page)
        .into_iter()
        .filter(|c| claimed.contains(&c.as_str()))
        .collect();
    assert!(!commands.is_empty(), "{page} has commands for {test}");
    commands
}

#[test]
fn every_command_of_the_documentation_is_run_or_says_why_not() {
    let mut problems = Vec::new();
    let this = std::fs::read_to_string(Path::new(ROOT).join("tests/it/docs_run.rs")).unwrap();
    for page in pages() {
        for command in commands_of(&page) {
            if !COMMANDS.iter().any(|(p, c, _)| *p == page && *c == command) {
                problems.push(format!("{page}: `{command}` is run by no test here"));
            }
        }
    }
    for (page, command, runs) in COMMANDS {
        if !commands_of(page).iter().any(|c| c == command) {
            problems.push(format!("{page} no longer has `{command}`"));
        }
        match runs {
            In(test) if !this.contains(&format!("fn {test}()")) => {
                problems.push(format!("{page} `{command}`: no test {test}"));
            }
            Not(why) if why.split_whitespace().count() < 5 => {
                problems.push(format!("{page} `{command}`: say why it cannot run"));
            }
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_command_finder_reads_blocks_prompts_and_continuations() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.md");
    std::fs::write(
        &page,
        "Text\n\n    kubectl capi ready -n prod   # why\n    kubectl capi move x \\\n      --to-context y\n\n    {\"kind\": \"data\"}\n\n    $ kubectl capi verify\n    verified\n    kubectl not-a-command-here\n",
    )
    .unwrap();
    // (commands_of reads below the repository; a path outside it is joined as absolute.)
    assert_eq!(
        commands_of(page.to_str().unwrap()),
        [
            "kubectl capi ready -n prod",
            "kubectl capi move x --to-context y",
            "kubectl capi verify"
        ]
    );
}

/// A page's command in a shell, as a user runs it: bash in `cwd`, with `HOME` and `PATH` as
/// given (this build's plugin on it), and the kubeconfig `kubeconfig` as `KUBECONFIG`.
fn shell(command: &str, cwd: &Path, kubeconfig: Option<&Path>) -> tokio::process::Command {
    let mut shell = crate::common::pasted_command(kubeconfig, command);
    shell.current_dir(cwd);
    shell
}

async fn run(command: &str, cwd: &Path, kubeconfig: Option<&Path>) -> crate::common::Output {
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        shell(command, cwd, kubeconfig).output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{command} did not finish in 120s"))
    .unwrap();
    output.into()
}

/// Two management clusters as the README's story has them: the current context is the source,
/// the context `new` the target, and Cluster `prod/prod-1` is provisioned there.
async fn story_world(dir: &Path) -> Environment {
    let kubeconfig = dir.join("kubeconfig");
    let env = Environment::start(
        &Options::new(Dialect::V1beta2, Delays::millis(20)),
        &kubeconfig,
    )
    .await
    .unwrap();
    write_kubeconfig(
        &kubeconfig,
        &[
            env.source.serving.kubeconfig_entry("mgmt-1"),
            env.target.serving.kubeconfig_entry("new"),
        ],
    )
    .unwrap();
    let namespace =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}});
    env.source.server.load(namespace).unwrap();
    env.create_workload(&Workload::new("prod", "prod-1"))
        .await
        .unwrap();
    env.wait_provisioned(&env.source, "prod", "prod-1", Duration::from_secs(30))
        .await
        .unwrap();
    env
}

/// Runs `command` while the held node is released once the command watches Machines.
async fn run_releasing(env: &Environment, command: &str, dir: &Path) -> crate::common::Output {
    let kubeconfig = dir.join("kubeconfig");
    crate::common::releasing_held_nodes(&env.source, run(command, dir, Some(&kubeconfig))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_story_runs_as_written() {
    let commands = run_by("README.md", "the_readme_story_runs_as_written");
    let (story, one_command) = commands.split_at(commands.len() - 1);
    let dir = tempfile::tempdir().unwrap();
    let env = story_world(dir.path()).await;
    crate::common::scale_up_holding_a_node(&env, "prod", "prod-1").await;
    let kubeconfig = dir.path().join("kubeconfig");
    for command in story {
        let out = if command.contains("--wait") && command.starts_with("kubectl capi ready") {
            run_releasing(&env, command, dir.path()).await
        } else {
            run(command, dir.path(), Some(&kubeconfig)).await
        };
        // The first look is the refusal the story starts from: a control plane scaling.
        let expected = if command == "kubectl capi ready -n prod" {
            1
        } else {
            0
        };
        assert_eq!(
            out.code, expected,
            "{command}: {}{}",
            out.stdout, out.stderr
        );
    }
    assert!(crate::common::has_cluster(
        &env.target.server,
        "prod",
        "prod-1"
    ));
    assert!(!crate::common::has_cluster(
        &env.source.server,
        "prod",
        "prod-1"
    ));

    // The one command, in a world of its own at the story's start.
    let dir = tempfile::tempdir().unwrap();
    let env = story_world(dir.path()).await;
    crate::common::scale_up_holding_a_node(&env, "prod", "prod-1").await;
    let out = run_releasing(&env, &one_command[0], dir.path()).await;
    assert_eq!(
        out.code, 0,
        "{}: {}{}",
        one_command[0], out.stdout, out.stderr
    );
    assert!(out.stdout.contains("prod-1 verified"), "{}", out.stdout);
    assert!(crate::common::has_cluster(
        &env.target.server,
        "prod",
        "prod-1"
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verify_page_runs_as_written() {
    let commands = run_by("docs/verify.md", "the_verify_page_runs_as_written");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let env = Environment::start(
        &Options::new(Dialect::V1beta2, Delays::millis(20)),
        &kubeconfig,
    )
    .await
    .unwrap();
    for name in ["workload-1", "workload-2"] {
        let mut workload = Workload::new("default", name);
        workload.workers = 2;
        env.create_workload(&workload).await.unwrap();
        env.wait_provisioned(&env.source, "default", name, Duration::from_secs(30))
            .await
            .unwrap();
    }
    for command in &commands {
        let out = run(command, dir.path(), Some(&kubeconfig)).await;
        assert_eq!(out.code, 0, "{command}: {}{}", out.stdout, out.stderr);
        // The page shows what it prints: one verified line per Cluster.
        for name in ["workload-1", "workload-2"] {
            assert!(
                out.stdout.contains(&format!(
                    "cluster.cluster.x-k8s.io/{name} verified: 1 control-plane + 2 worker Machines adopted, Available"
                )),
                "{command}: {}",
                out.stdout
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_completion_commands_run_as_written() {
    for page in ["README.md", "docs/usage.md"] {
        let home = tempfile::tempdir().unwrap();
        for command in run_by(page, "the_completion_commands_run_as_written") {
            let out: crate::common::Output = shell(&command, home.path(), None)
                .env("HOME", home.path())
                .output()
                .await
                .unwrap()
                .into();
            assert_eq!(out.code, 0, "{page}: {command}: {}", out.stderr);
        }
        // kubectl runs the completer for `kubectl capi <TAB>`: it answers with the commands.
        let completer = home.path().join(".local/bin/kubectl_complete-capi");
        let answer: crate::common::Output =
            shell(&format!("{} ''", completer.display()), home.path(), None)
                .output()
                .await
                .unwrap()
                .into();
        assert_eq!(answer.code, 0, "{}", answer.stderr);
        assert!(answer.stdout.contains("ready"), "{page}: {}", answer.stdout);
    }
}

#[test]
fn the_test_command_is_what_ci_runs() {
    let ci = std::fs::read_to_string(Path::new(ROOT).join(".ci/run")).unwrap();
    for page in ["README.md", "docs/development.md"] {
        for command in run_by(page, "the_test_command_is_what_ci_runs") {
            assert!(
                ci.lines().any(|l| l.trim() == command),
                "{page}: .ci/run runs `{command}` itself"
            );
        }
    }
}

/// A directory on PATH first, holding `cargo`: it checks that the build asked for is the one the
/// suite has made (`cargo build --locked -p kubectl-capi -p capi-sandbox-tools`), and then builds
/// nothing, so the script runs the suite's own binaries.
fn suite_build_as_cargo(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    executable(
        &bin.join("cargo"),
        "#!/bin/sh\n[ \"$*\" = \"build --locked -p kubectl-capi -p capi-sandbox-tools\" ] || { echo \"unexpected: cargo $*\" >&2; exit 3; }\n",
    );
    bin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_script_runs_as_written() {
    let commands = run_by("README.md", "the_demo_script_runs_as_written");
    let dir = tempfile::tempdir().unwrap();
    let bin = suite_build_as_cargo(dir.path());
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    for command in commands {
        let out: crate::common::Output = shell(&command, Path::new(ROOT), None)
            .env("PATH", &path)
            .env("HOME", dir.path())
            .output()
            .await
            .unwrap()
            .into();
        assert_eq!(out.code, 0, "{command}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stdout
                .contains("# Done: demo-2 is ready in sandbox-target"),
            "{}",
            out.stdout
        );
    }
}

/// A stand-in for krew's `install --manifest=M --archive=A` (krew itself is not on this machine):
/// the plugin whose platform matches linux/amd64, the archive's sha256 checked against it, the
/// archive unpacked into `$KREW_ROOT/store/NAME/VERSION`, and its `bin` linked from
/// `$KREW_ROOT/bin/kubectl-NAME`, as krew does. krew's own manifest rules are `krew.rs`'s.
const KREW_STAND_IN: &str = r#"#!/usr/bin/env bash
set -euo pipefail
[ "${1:-}" = install ] || { echo "stand-in krew: only install" >&2; exit 2; }
shift
for arg in "$@"; do
  case "$arg" in
    --manifest=*) manifest=${arg#--manifest=} ;;
    --archive=*) archive=${arg#--archive=} ;;
    *) echo "stand-in krew: unknown $arg" >&2; exit 2 ;;
  esac
done
root=${KREW_ROOT:-$HOME/.krew}
name=$(awk '$1 == "name:" { print $2; exit }' "$manifest")
version=$(awk '$1 == "version:" { print $2; exit }' "$manifest")
# The platform block for linux/amd64: its sha256 and bin.
read -r sum bin < <(awk '
  /- selector:/ { os = ""; arch = "" }
  $1 == "os:" { os = $2 } $1 == "arch:" { arch = $2 }
  $1 == "sha256:" && os == "linux" && arch == "amd64" { gsub(/"/, "", $2); sum = $2 }
  $1 == "bin:" && os == "linux" && arch == "amd64" && sum != "" { print sum, $2; exit }
' "$manifest")
[ "$(sha256sum "$archive" | cut -d' ' -f1)" = "$sum" ] || { echo "sha256 does not match" >&2; exit 1; }
store="$root/store/$name/$version"
mkdir -p "$store" "$root/bin"
tar xzf "$archive" -C "$store"
[ -x "$store/$bin" ] || { echo "$bin is not an executable in the archive" >&2; exit 1; }
ln -s "$store/$bin" "$root/bin/kubectl-$name"
echo "Installed plugin: $name"
"#;

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The repository's tracked files, copied into `dir` (the commands write beside the sources).
fn copy_of_the_sources(dir: &Path) {
    let listed = std::process::Command::new("git")
        .args(["-C", ROOT, "ls-files", "-z"])
        .output()
        .unwrap();
    assert!(listed.status.success(), "git ls-files");
    for file in listed.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let file = std::str::from_utf8(file).unwrap();
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(Path::new(ROOT).join(file), &to).unwrap();
    }
}

/// The release build the install commands make, once for all of them: `cargo install` and
/// `package.sh --build` share it (`CARGO_BUILD_TARGET`), and the release profile is made cheap
/// through cargo's environment so that the suite stays quick.
fn release_build_env(command: &mut tokio::process::Command, dir: &Path) {
    command
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env("CARGO_BUILD_TARGET", "x86_64-unknown-linux-gnu")
        .env("CARGO_INSTALL_ROOT", dir.join("cargo-installed"))
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256")
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "false");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_install_commands_run_as_written() {
    let commands = run_by("README.md", "the_install_commands_run_as_written");
    let dir = tempfile::tempdir().unwrap();
    let sources = dir.path().join("kubectl-capi");
    copy_of_the_sources(&sources);
    let home = dir.path().join("home");
    // The user's own directory on PATH, and krew's stand-in.
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    executable(&tools.join("kubectl-krew"), KREW_STAND_IN);
    let path = format!(
        "{}:{}:{}",
        home.join(".local/bin").display(),
        tools.display(),
        std::env::var("PATH").unwrap()
    );
    // Where the archive lands for the archive install (the download is the network's).
    let downloads = dir.path().join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    let in_order = [
        "scripts/package.sh --build",
        "kubectl krew install",
        "tar xzf",
        "install ",
        "cargo install",
    ];
    for start in in_order {
        let command = commands
            .iter()
            .find(|c| c.starts_with(start))
            .unwrap_or_else(|| panic!("{start}… in the README"));
        if start == "tar xzf" {
            std::fs::copy(
                sources.join("dist/kubectl-capi_v0.1.0_x86_64-unknown-linux-gnu.tar.gz"),
                downloads.join("kubectl-capi_v0.1.0_x86_64-unknown-linux-musl.tar.gz"),
            )
            .unwrap();
        }
        let cwd = if ["tar xzf", "install "].contains(&start) {
            &downloads
        } else {
            &sources
        };
        let mut shell = crate::common::pasted_command(None, command);
        shell
            .current_dir(cwd)
            .env("HOME", &home)
            .env("PATH", &path)
            .env_remove("KREW_ROOT");
        release_build_env(&mut shell, dir.path());
        let out: crate::common::Output =
            tokio::time::timeout(Duration::from_secs(900), shell.output())
                .await
                .unwrap_or_else(|_| panic!("{command} did not finish in 15 minutes"))
                .unwrap()
                .into();
        assert_eq!(out.code, 0, "{command}: {}{}", out.stdout, out.stderr);
        if start == "scripts/package.sh --build" {
            let manifest = sources.join("dist/capi.yaml");
            assert_eq!(
                crate::krew::krew_violations(&manifest),
                Vec::<String>::new()
            );
        }
    }
    // Each way in gives a plugin kubectl finds: krew's link, the archive's and cargo's binaries.
    for plugin in [
        home.join(".krew/bin/kubectl-capi"),
        home.join(".local/bin/kubectl-capi"),
        home.join(".local/bin/kubectl_complete-capi"),
        dir.path().join("cargo-installed/bin/kubectl-capi"),
        dir.path().join("cargo-installed/bin/kubectl_complete-capi"),
    ] {
        assert!(plugin.exists(), "{}", plugin.display());
    }
    for plugin in [
        home.join(".krew/bin/kubectl-capi"),
        home.join(".local/bin/kubectl-capi"),
        dir.path().join("cargo-installed/bin/kubectl-capi"),
    ] {
        let version = std::process::Command::new(&plugin)
            .args(["version", "--client"])
            .output()
            .unwrap();
        assert!(
            version.status.success() && String::from_utf8_lossy(&version.stdout).contains("0.1.0"),
            "{}: {}",
            plugin.display(),
            String::from_utf8_lossy(&version.stdout)
        );
    }
}

/// `cargo run -p capi-sandbox-tools -- ARGS` as the suite's own build of the tool (a nested
/// cargo would rebuild it under the running suite: cargo's test and dev profiles differ).
fn suite_tool_as_cargo(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = Path::new(ROOT).join("target/debug/capi-sandbox");
    executable(
        &bin.join("cargo"),
        &format!(
            "#!/bin/sh\ncase \"$*\" in \"run -p capi-sandbox-tools -- \"*) shift 4; exec {} \"$@\";; esac\necho \"unexpected: cargo $*\" >&2; exit 3\n",
            tool.display()
        ),
    );
    bin
}

/// The sandbox page's commands, in a directory of their own.
struct SandboxPage {
    dir: tempfile::TempDir,
    path: String,
    commands: Vec<String>,
}

impl SandboxPage {
    fn new() -> SandboxPage {
        let dir = tempfile::tempdir().unwrap();
        let bin = suite_tool_as_cargo(dir.path());
        let plugin = crate::common::plugin_binary();
        let path = format!(
            "{}:{}:{}",
            bin.display(),
            plugin.parent().unwrap().display(),
            std::env::var("PATH").unwrap()
        );
        let commands = run_by("docs/sandbox.md", "the_sandbox_page_runs_as_written");
        SandboxPage {
            dir,
            path,
            commands,
        }
    }

    /// The page's command that starts with `start`, with `<machine>` filled in.
    fn command(&self, start: &str, machine: &str) -> String {
        self.commands
            .iter()
            .find(|c| c.starts_with(start))
            .unwrap_or_else(|| panic!("{start}… on the page"))
            .replace("<machine>", machine)
    }

    fn shell(&self, command: &str) -> tokio::process::Command {
        let mut shell = shell(command, self.dir.path(), None);
        shell.env("PATH", &self.path).env("HOME", self.dir.path());
        shell
    }

    async fn run(&self, start: &str, machine: &str) -> crate::common::Output {
        let command = self.command(start, machine);
        let out: crate::common::Output =
            tokio::time::timeout(Duration::from_secs(120), self.shell(&command).output())
                .await
                .unwrap_or_else(|_| panic!("{command} did not finish"))
                .unwrap()
                .into();
        assert_eq!(out.code, 0, "{command}: {}{}", out.stdout, out.stderr);
        out
    }

    /// Waits, as the user does, until workload-1 is provisioned and can move (the test's own
    /// command, not one of the page's).
    async fn until_workload_1_can_move(&self) {
        let ready = self
            .shell("kubectl capi ready workload-1 --wait --kubeconfig sandbox.kubeconfig --context sandbox-source")
            .output()
            .await
            .unwrap();
        assert!(ready.status.success(), "{ready:?}");
    }

    /// Starts a server command of the page and waits until its kubeconfig can be read.
    async fn start(&self, start: &str) -> tokio::process::Child {
        let kubeconfig = self.dir.path().join("sandbox.kubeconfig");
        let _ = std::fs::remove_file(&kubeconfig);
        let child = self
            .shell(&self.command(start, ""))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        crate::common::wait_until("the sandbox's kubeconfig", || {
            kube::config::Kubeconfig::read_from(&kubeconfig).is_ok_and(|k| !k.contexts.is_empty())
        })
        .await;
        child
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_page_runs_as_written() {
    let page = SandboxPage::new();
    // Real kubectl against `serve`.
    let mut serve = page.start("cargo run -p capi-sandbox-tools -- serve").await;
    let resources = page
        .run("kubectl --kubeconfig sandbox.kubeconfig api-resources", "")
        .await;
    assert!(
        resources.stdout.contains("clusters"),
        "{}",
        resources.stdout
    );
    page.run(
        "kubectl --kubeconfig sandbox.kubeconfig get clusters -A",
        "",
    )
    .await;
    serve.kill().await.unwrap();

    // `up`, watched by kubectl, scaled and given an unhealthy node by the tool.
    let mut up = page
        .start("cargo run -p capi-sandbox-tools -- up --clusters 2")
        .await;
    let mut watch = page
        .shell(&page.command(
            "kubectl --kubeconfig sandbox.kubeconfig --context sandbox-source get machines -w",
            "",
        ))
        .spawn()
        .unwrap();
    page.until_workload_1_can_move().await;
    page.run("cargo run -p capi-sandbox-tools -- scale", "")
        .await;
    let machines = page
        .shell(
            "kubectl --kubeconfig sandbox.kubeconfig --context sandbox-source get machines -o name",
        )
        .output()
        .await
        .unwrap();
    let machine = String::from_utf8_lossy(&machines.stdout)
        .lines()
        .next()
        .and_then(|l| l.rsplit('/').next())
        .unwrap_or_else(|| panic!("a Machine: {machines:?}"))
        .to_string();
    page.run("cargo run -p capi-sandbox-tools -- node", &machine)
        .await;
    watch.kill().await.unwrap();
    let watched: crate::common::Output = watch.wait_with_output().await.unwrap().into();
    assert!(watched.stdout.contains("workload-1"), "{}", watched.stdout);
    up.kill().await.unwrap();

    // The self-hosted pivot, once its Cluster can move.
    let mut up = page
        .start("cargo run -p capi-sandbox-tools -- up --clusters 1 --self-hosted")
        .await;
    page.until_workload_1_can_move().await;
    let moved = page
        .run("kubectl capi move workload-1 --to-cluster", "")
        .await;
    assert!(
        moved.stdout.contains("workload-1 verified"),
        "{}",
        moved.stdout
    );
    up.kill().await.unwrap();
}
