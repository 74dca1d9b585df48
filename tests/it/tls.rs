//! The TLS connections users have, against a sandbox serving HTTPS as a management cluster does:
//! the CA in the kubeconfig, a client certificate (and a request without it), a bearer token, a
//! CA that did not sign the server's certificate, and `--insecure-skip-tls-verify`.

use capi_sandbox::ServerOptions;
use capi_sandbox::crds::Dialect;

use crate::common::{Output, PLUGIN_AGENT, Sandbox, Writes, run_plugin};

/// A management cluster that authenticates clients by certificate (and, with `token`, by it).
async fn management_cluster(token: Option<&str>) -> Sandbox {
    Sandbox::start_with(
        Dialect::V1beta2,
        ServerOptions {
            tls: true,
            client_certificates: true,
            token: token.map(str::to_string),
            ..ServerOptions::default()
        },
    )
    .await
}

/// Exit 2 and one `error:` line holding every one of `words`.
fn assert_one_line_error(output: &Output, words: &[&str]) {
    for word in words {
        crate::cli::assert_one_line_error(output, word);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_authenticates_the_plugin_and_its_absence_is_named() {
    let cluster = management_cluster(None).await;
    let kubeconfig = std::fs::read_to_string(&cluster.kubeconfig).unwrap();
    for field in [
        "certificate-authority-data",
        "client-certificate-data",
        "client-key-data",
    ] {
        assert!(kubeconfig.contains(field), "{field} in {kubeconfig}");
    }
    assert!(!kubeconfig.contains("token"), "{kubeconfig}");

    let ready = cluster.plugin(&["ready", "-A", "-o", "json"]).await;
    assert_eq!(ready.code, 0, "{}", ready.stderr);
    let plugin: Vec<_> = cluster
        .server
        .requests()
        .into_iter()
        .filter(|r| r.agent == PLUGIN_AGENT)
        .collect();
    assert!(!plugin.is_empty(), "the plugin's requests are logged");
    assert!(
        plugin.iter().all(|r| r.user == "sandbox-admin"),
        "each one authenticated by the certificate as its CN"
    );

    let without = cluster.kubeconfig_with("no-certificate", |e| e.client = None);
    assert_one_line_error(
        &run_plugin(Some(&without), &["ready", "-A"]).await,
        &["rejected the credentials (401 Unauthorized)"],
    );
    assert!(cluster.server.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_authenticates_where_the_certificate_is_missing() {
    let cluster = management_cluster(Some("s3cret")).await;
    let by_token = cluster.kubeconfig_with("token-only", |e| e.client = None);
    let version = run_plugin(Some(&by_token), &["version", "-o", "json"]).await;
    assert_eq!(version.code, 0, "{}", version.stderr);
    let wrong = cluster.kubeconfig_with("wrong-token", |e| {
        e.client = None;
        e.token = Some("wrong".into());
    });
    assert_one_line_error(
        &run_plugin(Some(&wrong), &["version"]).await,
        &["rejected the credentials (401 Unauthorized)"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_that_did_not_sign_the_target_names_the_target_and_the_flag_before_any_write() {
    let source = management_cluster(None).await;
    let target = management_cluster(None).await;
    // The target's address and credentials, but the source's CA: what a kubeconfig copied from
    // the wrong cluster holds.
    let wrong_ca = target.kubeconfig_with("wrong-ca", |e| {
        e.ca_pem = source.serving.ca_pem.clone();
    });
    let moved = source
        .plugin(&["move", "-A", "--to-kubeconfig", wrong_ca.to_str().unwrap()])
        .await;
    assert_one_line_error(
        &moved,
        &[
            "the target (https://127.0.0.1:",
            "certificate",
            "--insecure-skip-tls-verify",
        ],
    );
    assert!(source.server.writes().is_empty(), "nothing written");
    assert!(target.server.writes().is_empty(), "nothing written");

    // The flag the error names, pasted: the connection is made (for a test cluster).
    let insecure = run_plugin(
        Some(&wrong_ca),
        &["version", "-o", "json", "--insecure-skip-tls-verify"],
    )
    .await;
    assert_eq!(insecure.code, 0, "{}", insecure.stderr);
}

/// TLS failures name the fix that applies: a client certificate another CA issued, or a client
/// key that is not one, is the kubeconfig user's to fix — `--insecure-skip-tls-verify` (which only
/// stops checking the server) would fail the same way, so it is not offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_the_server_refuses_is_the_users_to_fix_not_the_cas() {
    let one = management_cluster(None).await;
    let other = management_cluster(None).await;
    let foreign = one.kubeconfig_with("foreign-client", |e| {
        e.client = other.serving.kubeconfig_entry("x").client;
    });
    for kubeconfig in [&foreign] {
        let out = run_plugin(Some(kubeconfig), &["ready", "-A"]).await;
        assert_one_line_error(
            &out,
            &[
                "refused the kubeconfig user's client certificate",
                "client-certificate-data",
            ],
        );
        assert!(
            !out.stderr.contains("--insecure-skip-tls-verify"),
            "{}",
            out.stderr
        );
        let insecure = run_plugin(
            Some(kubeconfig),
            &["ready", "-A", "--insecure-skip-tls-verify"],
        )
        .await;
        assert_eq!(
            insecure.code, 2,
            "the flag does not help: {}",
            insecure.stderr
        );
    }
    let garbage = one.kubeconfig_with("garbage-key", |e| {
        if let Some(client) = &mut e.client {
            client.key_pem =
                "-----BEGIN PRIVATE KEY-----\nZ2FyYmFnZQ==\n-----END PRIVATE KEY-----\n".into();
        }
    });
    let out = run_plugin(Some(&garbage), &["ready", "-A"]).await;
    assert_one_line_error(&out, &["client-key-data"]);
    assert!(
        !out.stderr.contains("--insecure-skip-tls-verify"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("certificate-authority"),
        "{}",
        out.stderr
    );
}
