//! A kubeconfig that a cluster stores (a workload cluster's `NAME-kubeconfig` Secret) is data,
//! never a command: it may carry only inline credentials — a server, CA data, a client
//! certificate and key as data, a token. Whatever would run a program on this machine (`exec`,
//! `auth-provider`), open a local file (`tokenFile`, `client-certificate`, `client-key`,
//! `certificate-authority`), send the credentials elsewhere (`proxy-url`, unless it is the one the
//! user's own kubeconfig uses), or stop checking whom they go to (`insecure-skip-tls-verify`) is
//! refused before any connection.

use kube::config::Kubeconfig;

/// What a kubeconfig from a cluster may hold, for messages.
pub const ALLOWED: &str = "server, certificate-authority-data, tls-server-name, client-certificate-data, client-key-data, token";

/// The fields of `kubeconfig` that a kubeconfig read from a cluster must not set, each named
/// with its cluster or user (`user "w1-admin": exec (runs a program on this machine)`); never
/// a value. `allowed_proxy`: the proxy the user's own connection goes through.
pub fn forbidden_fields(kubeconfig: &Kubeconfig, allowed_proxy: Option<&http::Uri>) -> Vec<String> {
    let mut found = Vec::new();
    for named in &kubeconfig.clusters {
        let Some(cluster) = &named.cluster else {
            continue;
        };
        let mut refuse = |field: &str, why: &str| {
            found.push(format!("cluster {:?}: {field} ({why})", named.name));
        };
        if cluster.certificate_authority.is_some() {
            refuse("certificate-authority", "opens a local file");
        }
        if cluster.insecure_skip_tls_verify == Some(true) {
            refuse(
                "insecure-skip-tls-verify",
                "would send credentials to any server that answers",
            );
        }
        if let Some(proxy) = &cluster.proxy_url
            && (proxy.parse::<http::Uri>().ok().as_ref() != allowed_proxy
                || allowed_proxy.is_none())
        {
            refuse(
                "proxy-url",
                "sends the traffic through a proxy your own kubeconfig does not use",
            );
        }
    }
    for named in &kubeconfig.auth_infos {
        let Some(user) = &named.auth_info else {
            continue;
        };
        let mut refuse = |field: &str, why: &str| {
            found.push(format!("user {:?}: {field} ({why})", named.name));
        };
        if user.exec.is_some() {
            refuse("exec", "runs a program on this machine");
        }
        if user.auth_provider.is_some() {
            refuse("auth-provider", "runs a program on this machine");
        }
        for (set, field) in [
            (user.token_file.is_some(), "tokenFile"),
            (user.client_certificate.is_some(), "client-certificate"),
            (user.client_key.is_some(), "client-key"),
        ] {
            if set {
                refuse(field, "opens a local file");
            }
        }
        if user.username.is_some() || user.password.is_some() {
            refuse(
                "username/password",
                "not an inline credential this tool uses",
            );
        }
        if user.impersonate.is_some() || user.impersonate_groups.is_some() {
            refuse("as/as-groups", "acts as someone else");
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Kubeconfig {
        serde_saphyr::from_str(text).unwrap()
    }

    const CLEAN: &str = r#"
apiVersion: v1
kind: Config
clusters:
- name: w1
  cluster: {server: "https://10.0.0.1:6443", certificate-authority-data: QUJD}
users:
- name: w1-admin
  user: {client-certificate-data: QUJD, client-key-data: QUJD, token: abc}
contexts:
- name: w1
  context: {cluster: w1, user: w1-admin}
current-context: w1
"#;

    #[test]
    fn inline_credentials_pass() {
        assert_eq!(forbidden_fields(&parse(CLEAN), None), Vec::<String>::new());
    }

    #[test]
    fn every_field_that_runs_reads_or_redirects_is_named_without_its_value() {
        let cases = [
            (
                "exec: {command: /tmp/canary, apiVersion: client.authentication.k8s.io/v1}",
                "user \"w1-admin\": exec",
            ),
            (
                "auth-provider: {name: gcp, config: {cmd-path: /tmp/canary}}",
                "auth-provider",
            ),
            ("tokenFile: /tmp/secret-canary", "tokenFile"),
            (
                "client-certificate: /tmp/secret-canary",
                "client-certificate",
            ),
            ("client-key: /tmp/secret-canary", "client-key"),
        ];
        for (field, named) in cases {
            let text = CLEAN.replace("token: abc}", &format!("token: abc, {field}}}"));
            let found = forbidden_fields(&parse(&text), None);
            assert_eq!(found.len(), 1, "{field}: {found:?}");
            assert!(found[0].contains(named), "{found:?}");
            assert!(!found[0].contains("canary"), "never the value: {found:?}");
        }
        let cluster_cases = [
            (
                "certificate-authority: /tmp/secret-canary",
                "certificate-authority",
            ),
            ("insecure-skip-tls-verify: true", "insecure-skip-tls-verify"),
            ("proxy-url: \"http://canary:3128\"", "proxy-url"),
        ];
        for (field, named) in cluster_cases {
            let text = CLEAN.replace("QUJD}\nusers", &format!("QUJD, {field}}}\nusers"));
            let found = forbidden_fields(&parse(&text), None);
            assert_eq!(found.len(), 1, "{field}: {found:?}");
            assert!(found[0].starts_with("cluster \"w1\": ") && found[0].contains(named));
            assert!(!found[0].contains("canary"), "never the value: {found:?}");
        }
    }

    #[test]
    fn the_users_own_proxy_is_allowed() {
        let text = CLEAN.replace("QUJD}\nusers", "QUJD, proxy-url: \"http://p:3128\"}\nusers");
        let ours: http::Uri = "http://p:3128".parse().unwrap();
        let other: http::Uri = "http://q:3128".parse().unwrap();
        assert!(forbidden_fields(&parse(&text), Some(&ours)).is_empty());
        assert_eq!(forbidden_fields(&parse(&text), Some(&other)).len(), 1);
        assert_eq!(forbidden_fields(&parse(&text), None).len(), 1);
    }
}
