//! What the tool reads from a cluster, a kubeconfig or a journal is never trusted to be
//! well-formed: seeded mutations of valid inputs (bytes flipped, inserted, cut, repeated) are
//! read by the same code the commands use, and none may panic.

use kubectl_capi::kube::holder::Holder;
use kubectl_capi::kube::inline_only::{forbidden_fields, unlisted_fields};
use kubectl_capi::mover::journal::Journal;

/// Mutations of `valid`, the same for the same seed.
fn mutations(valid: &str, seed: u64, count: usize) -> Vec<Vec<u8>> {
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

/// Runs `read` on every mutation of `valid`; says which input panicked.
fn never_panics(valid: &str, read: impl Fn(&str) + std::panic::RefUnwindSafe) {
    for (i, bytes) in mutations(valid, 7, 3000).into_iter().enumerate() {
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
