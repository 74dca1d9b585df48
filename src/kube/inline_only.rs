//! A kubeconfig that a cluster stores (a workload cluster's `NAME-kubeconfig` Secret) is data,
//! never a command: it may carry only inline credentials — an `https://` server without a user
//! or password in its URL, CA data, a client certificate and key as data, a token that an HTTP
//! header can carry. It is read as an allowlist ([`unlisted_fields`]): any other field is refused
//! before any connection, and above all whatever would run a program on this machine (`exec`,
//! `auth-provider`), open a local file (`tokenFile`, `client-certificate`, `client-key`,
//! `certificate-authority`), send the credentials elsewhere (`proxy-url`, unless it is the one the
//! user's own kubeconfig uses; an `http://` server), or stop checking whom they go to
//! (`insecure-skip-tls-verify`) ([`forbidden_fields`] says why for those).

use kube::config::Kubeconfig;
use serde_json::Value;

/// The fields a kubeconfig from a cluster may hold, by where they stand.
const TOP_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "clusters",
    "users",
    "contexts",
    "current-context",
    "preferences",
];
const CLUSTER_FIELDS: &[&str] = &[
    "server",
    "certificate-authority-data",
    "tls-server-name",
    "proxy-url",
];
const USER_FIELDS: &[&str] = &["client-certificate-data", "client-key-data", "token"];
const CONTEXT_FIELDS: &[&str] = &["cluster", "user", "namespace"];

/// What of `text` (a kubeconfig read from a cluster) is not on the allowlist, or not usable as
/// it stands: each field named with where it stands, never with its value. A text that does not
/// parse is named once.
pub fn unlisted_fields(text: &str) -> Vec<String> {
    unlisted(text, &[])
}

/// Everything a kubeconfig read from a cluster (`kubeconfig`, parsed from `text`) must not hold:
/// what [`forbidden_fields`] names with its reason, then the rest of what the allowlist refuses.
pub fn refused_fields(
    kubeconfig: &Kubeconfig,
    text: &str,
    allowed_proxy: Option<&http::Uri>,
) -> Vec<String> {
    let mut found = forbidden_fields(kubeconfig, allowed_proxy);
    found.extend(unlisted(text, EXPLAINED));
    found
}

/// [`unlisted_fields`], leaving out the cluster and user fields `explained` (named elsewhere).
fn unlisted(text: &str, explained: &[&str]) -> Vec<String> {
    let Ok(root) = serde_saphyr::from_str::<Value>(text) else {
        return vec!["it does not parse as a kubeconfig".into()];
    };
    let mut found = Vec::new();
    let Some(top) = root.as_object() else {
        return vec!["it is not a kubeconfig (no fields at its top)".into()];
    };
    for key in top.keys().filter(|k| !TOP_FIELDS.contains(&k.as_str())) {
        found.push(format!("field {key:?}"));
    }
    if top
        .get("preferences")
        .is_some_and(|p| p.as_object().is_none_or(|m| !m.is_empty()))
    {
        found.push("preferences (only an empty one)".into());
    }
    for (list, inner, allowed) in [
        ("clusters", "cluster", CLUSTER_FIELDS),
        ("users", "user", USER_FIELDS),
        ("contexts", "context", CONTEXT_FIELDS),
    ] {
        for (i, entry) in top
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let name = entry["name"]
                .as_str()
                .map_or_else(|| format!("#{}", i + 1), |n| format!("{n:?}"));
            let Some(fields) = entry.as_object() else {
                found.push(format!("{inner} {name}: not a map"));
                continue;
            };
            for key in fields.keys().filter(|k| *k != "name" && *k != inner) {
                found.push(format!("{inner} {name}: field {key:?}"));
            }
            for key in entry[inner]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
                .filter(|k| !allowed.contains(&k.as_str()) && !explained.contains(&k.as_str()))
            {
                found.push(format!("{inner} {name}: {key:?}"));
            }
            found.extend(unusable_values(inner, &name, &entry[inner]));
        }
    }
    found
}

/// A server that is not `https://` or names a user and password, and a token no HTTP header can
/// carry (a line break or a control character): never their values.
fn unusable_values(inner: &str, name: &str, fields: &Value) -> Vec<String> {
    let mut found = Vec::new();
    if inner == "cluster"
        && let Some(server) = fields["server"].as_str()
    {
        let (scheme, rest) = server.split_once("://").unwrap_or(("", server));
        if !scheme.eq_ignore_ascii_case("https") {
            found.push(format!(
                "cluster {name}: server {:?} is not https:// (its token would cross the network in clear text)",
                super::url::without_userinfo(server)
            ));
        }
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.contains('@') {
            found.push(format!(
                "cluster {name}: server carries a user or password in its URL"
            ));
        }
    }
    if inner == "user"
        && let Some(token) = fields["token"].as_str()
        && !is_header_text(token)
    {
        found.push(format!(
            "user {name}: token holds a line break or control character, which no HTTP header can carry"
        ));
    }
    found
}

/// The fields [`forbidden_fields`] names with its reason (so [`refused_fields`] does not name
/// them twice).
const EXPLAINED: &[&str] = &[
    "exec",
    "auth-provider",
    "tokenFile",
    "client-certificate",
    "client-key",
    "username",
    "password",
    "as",
    "as-groups",
    "certificate-authority",
    "insecure-skip-tls-verify",
];

/// Text an HTTP header value can carry as is: visible ASCII, spaces and tabs.
pub fn is_header_text(text: &str) -> bool {
    text.bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

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
            assert_eq!(
                refused_fields(&parse(&text), &text, None),
                found,
                "named once, with its reason"
            );
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
    fn only_the_listed_fields_pass_and_none_is_named_by_its_value() {
        assert!(
            unlisted_fields(CLEAN).is_empty(),
            "{:?}",
            unlisted_fields(CLEAN)
        );
        let cases = [
            (
                "token: abc}",
                "token: abc, as-uid: canary}",
                "user \"w1-admin\": \"as-uid\"",
            ),
            (
                "token: abc}",
                "token: abc, as-user-extra: {a: [canary]}}",
                "\"as-user-extra\"",
            ),
            (
                "token: abc}",
                "token: abc, extensions: [{name: canary}]}",
                "\"extensions\"",
            ),
            (
                "token: abc}",
                "token: abc, anything: canary}",
                "\"anything\"",
            ),
            (
                "token: abc}",
                "token: \"abc\\ncanary\"}",
                "token holds a line break",
            ),
            (
                "https://10.0.0.1:6443",
                "http://10.0.0.1:6443",
                "is not https:// (its token",
            ),
            (
                "https://10.0.0.1:6443",
                "https://admin:canary@10.0.0.1:6443",
                "server carries a user or password",
            ),
            (
                "current-context: w1",
                "current-context: w1\nwhatever: canary",
                "field \"whatever\"",
            ),
        ];
        for (from, to, named) in cases {
            let text = CLEAN.replace(from, to);
            let found = unlisted_fields(&text);
            assert_eq!(found.len(), 1, "{to}: {found:?}");
            assert!(found[0].contains(named), "{to}: {found:?}");
            assert!(!found[0].contains("canary"), "never the value: {found:?}");
        }
        assert_eq!(
            unlisted_fields("{not yaml"),
            ["it does not parse as a kubeconfig"]
        );
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
