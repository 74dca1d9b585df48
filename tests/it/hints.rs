//! Every command the plugin suggests works when pasted. The source's hints are found by reading
//! it (a command to paste is in backticks, or is built from a literal that starts with
//! `kubectl `/`clusterctl `), and each is listed here with the test that provokes it, pastes it
//! from where the user then stands, and asserts that it makes progress or says it has nothing to
//! do. A new hint without such a test fails this suite.

use std::collections::BTreeMap;
use std::path::Path;

/// What a test does with a hint found in the source.
enum Pasted {
    /// This test (or a function of its file it calls) provokes it and pastes it.
    By(&'static str, &'static str),
    /// Not a command for the user to paste: why.
    NotAHint(&'static str),
}

use Pasted::{By, NotAHint};

/// Every hint in the plugin's source: (file under `src/`, the command as written there, how
/// it is checked).
const HINTS: &[(&str, &str, Pasted)] = &[
    (
        "error/message.rs",
        "kubectl config get-contexts{list_flags}",
        By(
            "cli.rs",
            "messages_name_the_flag_and_the_file_the_user_gave_and_their_hints_work_when_pasted",
        ),
    ),
    (
        "error/message.rs",
        "kubectl get {} -A{flags}",
        By("ready.rs", "selection_errors_and_label_selector"),
    ),
    (
        "kube/kubeconfig.rs",
        "kubectl config get-contexts{}",
        By(
            "cli.rs",
            "messages_name_the_flag_and_the_file_the_user_gave_and_their_hints_work_when_pasted",
        ),
    ),
    (
        "kube/lease/found.rs",
        "kubectl get lease {LEASE_NAME} -n {LEASE_NAMESPACE} -o yaml{flags}",
        By(
            "one_writer.rs",
            "a_lease_held_from_another_host_is_waited_for_out_loud",
        ),
    ),
    (
        "commands/freeze.rs",
        "kubectl capi {} {}{}{}",
        NotAHint("what a pause or resume holds itself out as in its Lease, shown to who waits"),
    ),
    (
        "commands/mover.rs",
        "kubectl capi move --freeze",
        NotAHint("what the freeze of a move holds itself out as in its Lease"),
    ),
    (
        "commands/ready.rs",
        "kubectl capi resume {} -n {}{}",
        By(
            "move_checks.rs",
            "a_wait_ends_at_once_when_a_frozen_control_plane_can_never_start",
        ),
    ),
    (
        "mover/steps/planning.rs",
        "kubectl get {clusters}{}{} --show-labels",
        By("ready.rs", "selection_errors_and_label_selector"),
    ),
    (
        "mover/steps/planning.rs",
        "kubectl capi verify {} -n {}{}",
        By(
            "move_checks.rs",
            "a_selector_selects_clusters_for_move_exactly",
        ),
    ),
    (
        "mover/recovery/records.rs",
        "kubectl capi move",
        By(
            "move_safety.rs",
            "ready_points_an_interrupted_move_at_resume_and_rollback_and_both_work_when_pasted",
        ),
    ),
    (
        "mover/report.rs",
        "kubectl capi resume {}{}{scope}",
        By("moving.rs", "the_seed_story_end_to_end"),
    ),
    (
        "mover/request.rs",
        "kubectl capi move",
        By(
            "fault_search.rs",
            "the_guarantees_hold_in_every_searched_schedule",
        ),
    ),
    (
        "mover/request.rs",
        "kubectl capi ready",
        By(
            "one_writer.rs",
            "a_holder_that_loses_its_lease_stops_writing_and_can_be_resumed",
        ),
    ),
    (
        "mover/request.rs",
        "kubectl capi resume {}{}{}",
        By(
            "moving.rs",
            "one_command_freezes_waits_moves_and_releases_the_freeze_in_the_target",
        ),
    ),
    (
        "mover/request.rs",
        "kubectl capi verify",
        By(
            "verify.rs",
            "an_interrupted_verification_says_how_to_verify_later_and_that_works_when_pasted",
        ),
    ),
    (
        "mover/request.rs",
        "clusterctl init",
        NotAHint(
            "clusterctl is not on this machine: move_without_clusters.rs asserts the command \
             with clusterctl's own flags (--kubeconfig, --kubeconfig-context)",
        ),
    ),
    (
        "mover/story.rs",
        "kubectl delete secret {} -n {}{}",
        By(
            "pivot.rs",
            "after_a_pivot_another_cluster_moves_into_it_and_the_printed_commands_work",
        ),
    ),
    (
        "mover/steps/checking.rs",
        "kubectl capi ready {} -n {} --wait{}",
        By(
            "move_checks.rs",
            "a_freeze_that_would_keep_a_control_plane_from_starting_is_refused_before_it_freezes",
        ),
    ),
    (
        "mover/checks/preflight.rs",
        "kubectl get {}{} -o jsonpath='{{.metadata.annotations}}'{flags}",
        By(
            "move_checks.rs",
            "an_object_without_room_for_the_moves_mark_is_refused_before_any_write",
        ),
    ),
    (
        "mover/ends/workload.rs",
        "kubectl capi ready {} -n {}{flags} --wait",
        By(
            "pivot.rs",
            "a_workload_cluster_still_provisioning_is_refused",
        ),
    ),
    (
        "mover/ends/workload.rs",
        "kubectl get secret {} -n {}{flags}",
        By(
            "pivot.rs",
            "a_workload_cluster_that_cannot_be_reached_is_refused_before_any_write",
        ),
    ),
    (
        "mover/write/record.rs",
        "kubectl capi verify --journal {}",
        By(
            "move_safety.rs",
            "a_record_the_target_refused_is_named_with_a_verify_that_works_when_pasted",
        ),
    ),
    (
        "ready/next_steps.rs",
        "kubectl capi {verb} {} -n {}{extra}{}",
        By("hints.rs", "readiness_hints_wait_and_freeze_when_pasted"),
    ),
    (
        "ready/next_steps.rs",
        "kubectl {args} -n {}{}",
        By("hints.rs", "readiness_hints_unpause_when_pasted"),
    ),
    (
        "verify/checks.rs",
        "kubectl capi pause {name} -n {namespace}{flags}",
        By(
            "verify.rs",
            "a_target_that_cannot_adopt_fails_naming_the_new_machines_with_a_hint_that_works",
        ),
    ),
    (
        "verify/checks.rs",
        "kubectl capi resume {cluster} -n {ns}{flags}",
        By(
            "verify.rs",
            "a_frozen_target_is_verified_at_once_as_far_as_it_can_show",
        ),
    ),
    (
        "verify/checks.rs",
        "kubectl capi verify {cluster} -n {ns}{flags} --wait",
        By(
            "verify.rs",
            "a_frozen_target_is_verified_at_once_as_far_as_it_can_show",
        ),
    ),
];

/// Files whose commands are help text or a script, not hints: `tests/it/docs.rs` runs them.
const NOT_HINTS: &[&str] = &["cli/args.rs", "cli/help.rs", "commands/shell_completion.rs"];

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
const TESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it");

/// The commands a string literal offers: its backticked spans that start with `kubectl ` or
/// `clusterctl `, and the literal itself when it starts so (a command being built).
fn commands_in(literal: &str) -> Vec<String> {
    let mut found: Vec<String> = literal
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.starts_with("kubectl ") || span.starts_with("clusterctl "))
        .map(str::to_string)
        .collect();
    if literal.starts_with("kubectl ") || literal.starts_with("clusterctl ") {
        found.push(literal.to_string());
    }
    found
}

/// The contents of the string literals of `code`.
fn literals(code: &str) -> Vec<String> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if let Some(length) = crate::layout::skip_literal(bytes, at) {
            let literal = &code[at..at + length];
            // (A char literal starts with `'`, so it has no `"` to strip.)
            let body = literal
                .trim_start_matches('r')
                .trim_matches('#')
                .strip_prefix('"')
                .and_then(|l| l.strip_suffix('"'));
            if let Some(body) = body {
                found.push(body.to_string());
            }
            at += length;
        } else {
            at += code[at..].chars().next().unwrap().len_utf8();
        }
    }
    found
}

/// Every (file under `src/`, command) the plugin's non-test code can print.
fn hints_in_source() -> Vec<(String, String)> {
    let mut hints = Vec::new();
    for path in crate::layout::modules_under(SRC).into_values() {
        let file = path
            .strip_prefix(SRC)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if NOT_HINTS.contains(&file.as_str()) {
            continue;
        }
        for literal in literals(&crate::layout::code(&path)) {
            for command in commands_in(&literal) {
                hints.push((file.clone(), command));
            }
        }
    }
    hints.dedup();
    hints
}

/// The functions of a test file by name, with their bodies (to the next top-level item).
fn functions(file: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(Path::new(TESTS).join(file)).unwrap();
    let mut functions = BTreeMap::new();
    let starts: Vec<(usize, String)> = text
        .match_indices("fn ")
        .filter(|(i, _)| {
            let line_start = text[..*i].rfind('\n').map_or(0, |n| n + 1);
            let before = &text[line_start..*i];
            [
                "",
                "async ",
                "pub ",
                "pub(crate) ",
                "pub async ",
                "pub(crate) async ",
            ]
            .contains(&before.trim_start())
        })
        .map(|(i, _)| {
            let name: String = text[i + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (i, name)
        })
        .collect();
    for (n, (start, name)) in starts.iter().enumerate() {
        let end = starts.get(n + 1).map_or(text.len(), |(next, _)| *next);
        functions.insert(name.clone(), text[*start..end].to_string());
    }
    functions
}

/// Whether `name` in `file`, or a function of that file it calls, pastes a hint.
fn pastes(file: &str, name: &str) -> Result<(), String> {
    let functions = functions(file);
    if !functions.contains_key(name) {
        return Err(format!("no fn {name} in tests/it/{file}"));
    }
    let mut seen = vec![name.to_string()];
    let mut at = 0;
    while at < seen.len() {
        let body = &functions[&seen[at]];
        // (Spelt in pieces, so that this function does not count as one that pastes.)
        if [".paste", "::paste", "pasted_command"]
            .iter()
            .any(|call| body.contains(&format!("{call}(")))
        {
            return Ok(());
        }
        for callee in functions.keys() {
            if !seen.contains(callee) && body.contains(&format!("{callee}(")) {
                seen.push(callee.clone());
            }
        }
        at += 1;
    }
    Err(format!(
        "tests/it/{file}: {name} pastes no hint (nor does anything it calls there)"
    ))
}

#[test]
fn every_hint_the_source_can_print_is_pasted_by_a_test() {
    let found = hints_in_source();
    let mut problems = Vec::new();
    for (file, command) in &found {
        if !HINTS.iter().any(|(f, c, _)| f == file && c == command) {
            problems.push(format!(
                "src/{file}: `{command}` is in no test's list here: provoke it in a test, paste it, and add it to HINTS"
            ));
        }
    }
    for (file, command, pasted) in HINTS {
        if !found.iter().any(|(f, c)| f == file && c == command) {
            problems.push(format!(
                "src/{file} no longer prints `{command}`: take it out of HINTS"
            ));
        }
        match pasted {
            By(test_file, test) => {
                if let Err(problem) = pastes(test_file, test) {
                    problems.push(format!("src/{file} `{command}`: {problem}"));
                }
            }
            NotAHint(why) if why.split_whitespace().count() < 5 => {
                problems.push(format!("src/{file} `{command}`: say why it is not a hint"));
            }
            NotAHint(_) => {}
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_hint_finder_sees_backticks_builders_and_nothing_else() {
    assert_eq!(
        commands_in("wait for it with `kubectl capi ready {} -n {} --wait`, then `x`"),
        ["kubectl capi ready {} -n {} --wait"]
    );
    assert_eq!(commands_in("kubectl capi move"), ["kubectl capi move"]);
    assert!(commands_in("frozen by kubectl capi pause; `--resume`").is_empty());
    let code = "let a = \"`kubectl get x`\"; let b = r#\"`clusterctl init {}`\"#; let c = 'k';";
    let found: Vec<String> = literals(code).iter().flat_map(|l| commands_in(l)).collect();
    assert_eq!(found, ["kubectl get x", "clusterctl init {}"]);
    // A function found through one it calls.
    assert!(pastes("hints.rs", "readiness_hints_unpause_when_pasted").is_ok());
    assert!(
        pastes(
            "hints.rs",
            "the_hint_finder_sees_backticks_builders_and_nothing_else"
        )
        .is_err()
    );
}

/// The messages of the failing checks of `ready NAME -o json` for the one Cluster.
async fn failing(kubeconfig: &Path, name: &str) -> (i32, Vec<String>) {
    let out = crate::common::run_plugin(Some(kubeconfig), &["ready", name, "-o", "json"]).await;
    assert_ne!(out.code, 2, "{}", out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let messages = report["clusters"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| c["message"].as_str().unwrap().to_string())
        .collect();
    (out.code, messages)
}

/// The command in backticks after `marker` in one of `messages`.
fn command_after(messages: &[String], marker: &str) -> String {
    messages
        .iter()
        .find_map(|m| m.split(marker).nth(1))
        .and_then(|rest| rest.split('`').nth(1))
        .unwrap_or_else(|| panic!("{marker} in {messages:#?}"))
        .to_string()
}

async fn paste(kubeconfig: &Path, command: &str) -> crate::common::Output {
    crate::common::paste(Some(kubeconfig), command).await
}

/// A control plane scaling up: `ready` offers to freeze its scaling and to wait; pasted, the
/// freeze turns the scaling from a blocker into a warning, and the wait returns once the last
/// node comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_hints_wait_and_freeze_when_pasted() {
    let dir = tempfile::tempdir().unwrap();
    let env = crate::ready::scaling_environment(dir.path()).await;
    let kubeconfig = dir.path().join("kubeconfig");
    let (code, messages) = failing(&kubeconfig, "seed").await;
    assert_eq!(code, 1);
    let freeze = command_after(&messages, "freeze its scaling with");
    assert_eq!(freeze, "kubectl capi pause seed -n default");
    let frozen = paste(&kubeconfig, &freeze).await;
    assert_eq!(frozen.code, 0, "{freeze}: {}", frozen.stderr);
    let (code, messages) = failing(&kubeconfig, "seed").await;
    assert_eq!(code, 1, "the node is still held");
    assert!(
        messages.iter().all(|m| !m.contains("is scaling up")),
        "frozen scaling no longer blocks: {messages:#?}"
    );
    let wait = command_after(&messages, "wait for it with");
    assert_eq!(wait, "kubectl capi ready seed -n default --wait");
    let waited = crate::common::releasing_held_nodes(&env.source, paste(&kubeconfig, &wait)).await;
    assert_eq!(waited.code, 0, "{wait}: {}", waited.stderr);
}

/// A Cluster paused by hand (field and annotation) from a ClusterClass paused by hand: `ready`
/// gives the commands that unpause each; pasted, they leave nothing paused to report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_hints_unpause_when_pasted() {
    use capi_sandbox::crds::Dialect;
    use capi_sandbox::environment::{Environment, Options};

    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let env = Environment::start(
        &Options::new(
            Dialect::V1beta2,
            capi_sandbox::controllers::Delays::millis(20),
        ),
        &kubeconfig,
    )
    .await
    .unwrap();
    let mut workload = capi_sandbox::workload::Workload::new("default", "held");
    workload.class = Some("quick-start".into());
    env.create_workload(&workload).await.unwrap();
    env.wait_provisioned(
        &env.source,
        "default",
        "held",
        std::time::Duration::from_secs(30),
    )
    .await
    .unwrap();
    let paused = serde_json::json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": ""}}});
    for (kind, name, patch) in [
        (
            "Cluster",
            "held",
            serde_json::json!({"spec": {"paused": true}}),
        ),
        ("Cluster", "held", paused.clone()),
        ("ClusterClass", "quick-start", paused),
    ] {
        capi_sandbox::api::merge_patch(
            &env.source.server.client(),
            "cluster.x-k8s.io/v1beta2",
            kind,
            "default",
            name,
            &patch,
        )
        .await
        .unwrap();
    }
    let (code, messages) = failing(&kubeconfig, "held").await;
    assert_eq!(code, 1);
    let mut commands = Vec::new();
    for message in messages.iter().filter(|m| m.contains("unpause it with")) {
        commands.extend(message.split('`').skip(1).step_by(2).map(str::to_string));
    }
    assert_eq!(
        commands.len(),
        3,
        "the field, and both annotations: {messages:#?}"
    );
    for command in &commands {
        let done = paste(&kubeconfig, command).await;
        assert_eq!(done.code, 0, "{command}: {}", done.stderr);
    }
    let (code, messages) = failing(&kubeconfig, "held").await;
    assert!(
        messages.iter().all(|m| !m.contains("paused")),
        "nothing paused is left: {messages:#?}"
    );
    assert_eq!(code, 0, "{messages:#?}");
}
