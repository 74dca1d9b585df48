//! The kubeconfigs that reach a sandbox server, as `capi-sandbox up` and `serve` write them (only
//! their owner may read them: they may hold a token).

use anyhow::Context as _;

#[derive(Clone, Debug)]
pub struct KubeconfigEntry {
    pub context: String,
    pub server: String,
    pub ca_pem: Option<String>,
    /// A client certificate and key (`client-certificate-data`, `client-key-data`).
    pub client: Option<crate::apiserver::tls::ClientIdentity>,
    pub token: Option<String>,
    pub namespace: Option<String>,
}

/// A kubeconfig document with one cluster, user and context per entry; the first is current.
pub fn kubeconfig(entries: &[KubeconfigEntry]) -> String {
    use base64::Engine;
    let mut clusters = Vec::new();
    let mut users = Vec::new();
    let mut contexts = Vec::new();
    for e in entries {
        let mut cluster = serde_json::json!({"server": e.server});
        if let Some(ca) = &e.ca_pem {
            cluster["certificate-authority-data"] =
                serde_json::json!(base64::engine::general_purpose::STANDARD.encode(ca));
        }
        clusters.push(serde_json::json!({"name": e.context, "cluster": cluster}));
        let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
        let mut user = serde_json::json!({});
        if let Some(token) = &e.token {
            user["token"] = serde_json::json!(token);
        }
        if let Some(client) = &e.client {
            user["client-certificate-data"] = serde_json::json!(encode(&client.certificate_pem));
            user["client-key-data"] = serde_json::json!(encode(&client.key_pem));
        }
        users.push(serde_json::json!({"name": e.context, "user": user}));
        let mut context = serde_json::json!({"cluster": e.context, "user": e.context});
        if let Some(ns) = &e.namespace {
            context["namespace"] = serde_json::json!(ns);
        }
        contexts.push(serde_json::json!({"name": e.context, "context": context}));
    }
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": users,
        "contexts": contexts,
        "current-context": entries.first().map(|e| e.context.clone()).unwrap_or_default(),
        "preferences": {},
    });
    serde_saphyr::to_string(&doc).expect("kubeconfig serialises")
}

/// Writes a kubeconfig readable only by its owner (it may hold a token).
pub fn write_kubeconfig(path: &std::path::Path, entries: &[KubeconfigEntry]) -> anyhow::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    // Written whole, then renamed: a reader that sees the file sees all of it.
    let partial = path.with_extension("partial");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options
        .open(&partial)
        .with_context(|| format!("writing {}", partial.display()))?;
    file.write_all(kubeconfig(entries).as_bytes())?;
    std::fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
