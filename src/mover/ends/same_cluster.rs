//! Whether a move's source and target are one cluster. A move between them would delete every
//! object it just "copied", so this is checked before anything else touches either cluster.
//!
//! A URL alone cannot tell: two URLs (`127.0.0.1` and `localhost`, a proxy, a load balancer) can
//! reach one API server. Every cluster has a `kube-system` namespace whose UID is fixed for the
//! cluster's life, so that UID is the cluster's identity; equal URLs are the cheap first check.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;

use crate::error::{Error, Result};
use crate::kube::Cluster;
use crate::verify::Between;

/// What identifies a cluster, as far as could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub url: String,
    /// The UID of `kube-system`; `Err` says why it could not be read.
    pub kube_system_uid: std::result::Result<String, String>,
}

/// The URL with what does not change the server it names normalised away (scheme and host case,
/// a trailing slash, the scheme's default port).
fn normalised(url: &str) -> String {
    let url = url.trim().trim_end_matches('/').to_ascii_lowercase();
    url.strip_suffix(":443")
        .filter(|_| url.starts_with("https://"))
        .or_else(|| {
            url.strip_suffix(":80")
                .filter(|_| url.starts_with("http://"))
        })
        .map(str::to_string)
        .unwrap_or(url)
}

/// Reads the cluster's identity; a `kube-system` that cannot be read is recorded, not an error,
/// so the caller can refuse with the reason.
pub async fn identify(cluster: &Cluster) -> Result<Identity> {
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    let kube_system_uid = match namespaces.get_opt("kube-system").await {
        Ok(Some(namespace)) => namespace
            .metadata
            .uid
            .ok_or_else(|| "its kube-system namespace has no UID".to_string()),
        Ok(None) => Err("it has no kube-system namespace".to_string()),
        Err(kube::Error::Api(status)) if status.code == 403 => Err(format!(
            "reading namespace kube-system is forbidden ({}); grant get on namespaces there",
            status.message
        )),
        Err(e) => return Err(cluster.api_error(e, "reading namespace kube-system")),
    };
    Ok(Identity {
        url: cluster.url.clone(),
        kube_system_uid,
    })
}

/// Why `source` and `target` must not be used as a move's two ends, if they must not: they are
/// one cluster, or it cannot be told that they are not. Pure: the contexts name them in the
/// message — or, for a target reached through a kubeconfig read from a cluster (`via`, the
/// Secret it came from), that kubeconfig, whose fix is not a flag.
pub fn refusal(
    source: &Identity,
    target: &Identity,
    source_context: &str,
    (target_context, via): (&str, Option<&str>),
) -> Option<String> {
    let (both, consequence) = match via {
        None => (
            format!("contexts \"{source_context}\" and \"{target_context}\""),
            "a move between them would delete from the cluster every object it copies; pass a --to-context (or --to-kubeconfig) of another management cluster".to_string(),
        ),
        Some(via) => (
            format!("context \"{source_context}\" and the kubeconfig in {via}"),
            "that workload cluster's kubeconfig reaches this management cluster itself (is it self-hosted already?), and a move into it would delete every object it copies; check that Secret, or pass --to-cluster another workload cluster".to_string(),
        ),
    };
    if normalised(&source.url) == normalised(&target.url) {
        return Some(format!(
            "the source and the target are the same cluster: {both} both reach {}; {consequence}",
            source.url
        ));
    }
    match (&source.kube_system_uid, &target.kube_system_uid) {
        (Ok(a), Ok(b)) if a == b => Some(format!(
            "the source and the target are the same cluster: {both} reach {} and {}, which share the kube-system namespace (UID {a}); {consequence}",
            source.url, target.url
        )),
        (Ok(_), Ok(_)) => None,
        (Err(why), _) => Some(format!(
            "cannot tell whether the source ({source_context}, {}) and the target are different clusters: {why}",
            source.url
        )),
        (_, Err(why)) => Some(format!(
            "cannot tell whether the target ({target_context}, {}) and the source are different clusters: {why}",
            target.url
        )),
    }
}

/// Reads both identities and returns them (each one's `kube-system` UID), or the refusal: one
/// cluster as both ends, or an identity that cannot be read.
pub async fn ensure_distinct(source: &Cluster, target: &Cluster) -> Result<Between> {
    let (a, b) = futures::try_join!(identify(source), identify(target))?;
    let via = target.via.as_deref();
    if let Some(reason) = refusal(&a, &b, &source.context, (&target.context, via)) {
        return Err(Error::Refused(vec![reason]));
    }
    match (a.kube_system_uid, b.kube_system_uid) {
        (Ok(source), Ok(target)) => Ok(Between { source, target }),
        // (`refusal` has refused these already, with the context.)
        (Err(why), _) | (_, Err(why)) => Err(Error::Refused(vec![why])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(url: &str, uid: &str) -> Identity {
        Identity {
            url: url.into(),
            kube_system_uid: Ok(uid.into()),
        }
    }

    #[test]
    fn one_server_by_two_urls_is_one_cluster() {
        let refused = refusal(
            &id("http://127.0.0.1:8080", "u1"),
            &id("http://localhost:8080", "u1"),
            "a",
            ("b", None),
        )
        .unwrap();
        assert!(
            refused.contains("same cluster") && refused.contains("\"a\" and \"b\""),
            "{refused}"
        );
        assert!(
            refusal(
                &id("http://x", "u1"),
                &id("http://y", "u2"),
                "a",
                ("b", None)
            )
            .is_none()
        );
    }

    #[test]
    fn equal_urls_are_one_cluster_whatever_the_uids_say() {
        for (a, b) in [
            ("https://k:443", "https://K/"),
            ("http://k:80", "http://k"),
            ("https://k:6443", "https://k:6443"),
        ] {
            assert!(
                refusal(&id(a, "u1"), &id(b, "u2"), "a", ("b", None)).is_some(),
                "{a} {b}"
            );
        }
        assert!(
            refusal(
                &id("https://k:6443", "u1"),
                &id("https://k:6444", "u2"),
                "a",
                ("b", None)
            )
            .is_none()
        );
    }

    #[test]
    fn a_secrets_kubeconfig_that_reaches_the_source_names_the_secret_not_a_flag() {
        let refused = refusal(
            &id("https://m:6443", "u1"),
            &id("https://m.example:6443", "u1"),
            "mgmt",
            ("w1", Some("Secret default/w1-kubeconfig of the source")),
        )
        .unwrap();
        assert!(
            refused.contains("the kubeconfig in Secret default/w1-kubeconfig of the source")
                && refused.contains("check that Secret")
                && !refused.contains("--to-context"),
            "{refused}"
        );
    }

    #[test]
    fn an_unreadable_identity_refuses() {
        let unknown = Identity {
            url: "http://y".into(),
            kube_system_uid: Err("reading namespace kube-system is forbidden".into()),
        };
        let refused = refusal(&id("http://x", "u1"), &unknown, "a", ("b", None)).unwrap();
        assert!(
            refused.contains("cannot tell") && refused.contains("forbidden"),
            "{refused}"
        );
    }
}
