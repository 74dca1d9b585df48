//! What the tool reads from a cluster, a kubeconfig or a journal is never trusted to be
//! well-formed: seeded mutations of valid inputs (bytes flipped, inserted, cut, repeated) are
//! read by the same code the commands use, and none may panic.

use kubectl_capi::kube::holder::Holder;
use kubectl_capi::kube::inline_only::{forbidden_fields, unlisted_fields};
use kubectl_capi::mover::journal::Journal;

/// Runs `read` on every mutation of `valid`; says which input panicked.
fn never_panics(valid: &str, read: impl Fn(&str) + std::panic::RefUnwindSafe) {
    for (i, bytes) in crate::common::mutations(valid, 7, 3000)
        .into_iter()
        .enumerate()
    {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let outcome = std::panic::catch_unwind(|| read(&text));
        assert!(outcome.is_ok(), "mutation {i} panicked: {text:?}");
    }
}

const KUBECONFIG: &str = r#"apiVersion: v1
kind: Config
current-context: w1
clusters:
- name: w1
  cluster: {server: "https://10.0.0.1:6443", certificate-authority-data: QUJD}
users:
- name: w1-admin
  user: {client-certificate-data: QUJD, client-key-data: QUJD, token: abc}
contexts:
- name: w1
  context: {cluster: w1, user: w1-admin, namespace: default}
"#;

#[test]
fn a_kubeconfig_from_a_secret_never_panics_the_checks() {
    never_panics(KUBECONFIG, |text| {
        let _ = unlisted_fields(text);
        if let Ok(kubeconfig) = kube::config::Kubeconfig::from_yaml(text) {
            let _ = forbidden_fields(&kubeconfig, None);
        }
    });
}

#[test]
fn a_journal_never_panics_its_reader() {
    let journal = serde_json::json!({
        "apiVersion": "kubectl-capi/v1", "kind": "MoveJournal",
        "source": {"server": "https://a", "identity": "u1"},
        "target": {"server": "https://b", "identity": "u2"},
        "namespace": "ns1", "clusters": [], "stage": "creating", "moveId": "0123456789abcdef",
        "paused": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "namespace": "ns1", "name": "c"}],
        "entries": [{"apiVersion": "v1", "kind": "Secret", "namespace": "ns1", "name": "c-ca",
            "resource": "secrets", "namespaced": true, "uid": "u", "group": 1, "targetUid": "t",
            "created": true, "sent": true, "owners": ["o"]}]});
    let valid = journal.to_string();
    assert!(Journal::parse(&valid).is_ok(), "the sample is a journal");
    never_panics(&valid, |text| {
        if let Ok(mut journal) = Journal::parse(text) {
            let _ = journal.to_json_pieces().count();
            let _ = journal.finished_record();
            let _ = (journal.progress(), journal.moved_clusters().len());
            let _ = journal.entry("u").is_some();
            let _ = journal.created_by_this_move("t");
        }
    });
}

#[test]
fn a_lease_holder_record_never_panics_its_reader() {
    let valid = serde_json::json!({"host": "ops-1", "pid": 42, "command": "kubectl capi move",
        "since": "2026-12-04T10:00:00Z", "bootId": "b", "pidNamespace": "pid:[1]", "startTime": 7})
    .to_string();
    never_panics(&valid, |text| {
        if let Ok(holder) = serde_json::from_str::<Holder>(text) {
            let _ = holder.describe();
            let _ = holder.gone_from_this_machine();
        }
    });
}

#[test]
fn a_lease_duration_from_the_environment_never_panics_and_stays_in_range() {
    use kubectl_capi::kube::lease_timing::{MAX_DURATION_SECONDS, duration_from_text};
    let mut checked = 0;
    for valid in ["60", "1", "86400", "18446744073709551615", "2147483647"] {
        for bytes in crate::common::mutations(valid, 11, 2000) {
            let text = std::ffi::OsString::from(String::from_utf8_lossy(&bytes).into_owned());
            let read = std::panic::catch_unwind(|| duration_from_text(&text));
            let Ok(read) = read else {
                panic!("{text:?} panicked");
            };
            if let Ok(duration) = read {
                assert!(
                    (1..=MAX_DURATION_SECONDS).contains(&duration.as_secs()),
                    "{text:?} gave {duration:?}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 10_000);
}
