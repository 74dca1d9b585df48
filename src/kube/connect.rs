//! kubeconfig + kubectl flags → a kube client, the way kubectl resolves them.

use kube::config::KubeConfigOptions;

use super::kubeconfig::{Chosen, load};
use super::retry::{DEFAULT_REQUEST_TIMEOUT, RetrySettings, retrying};
use crate::error::{Error, Result, Server};
use crate::settings::{Connection, End};

/// What the plugin's requests say they are (and the field manager servers derive from it).
pub const USER_AGENT: &str = concat!("kubectl-capi/v", env!("CARGO_PKG_VERSION"));

/// A connected management cluster.

#[derive(Clone)]
pub struct Cluster {
    pub client: kube::Client,
    /// The API server URL, for messages.
    pub url: String,
    /// The context's namespace, else `default`.
    pub default_namespace: String,
    /// Who acts: `--as`, else the kubeconfig user's name.
    pub identity: String,
    /// The kubeconfig context used (`--context`, else the current one), for messages.
    pub context: String,
    /// How long one request may wait for an answer; also how long a watch may stay broken.
    pub request_timeout: std::time::Duration,
    /// Which end this is, for messages.
    pub end: End,
    /// The proxy its kubeconfig sends requests through: the only one a kubeconfig read from this
    /// cluster may name.
    pub proxy_url: Option<http::Uri>,
    /// Lets this client's writes out only while this process holds the cluster's lease.
    pub gate: super::gate::WriteGate,
    /// Where its kubeconfig came from when a cluster held it (a Secret), for messages.
    pub via: Option<std::sync::Arc<str>>,
    /// The user's flags that reach it (` --context x`), repeated in the kubectl commands hints
    /// suggest; `None` for a kubeconfig read from a Secret, which no hint hands to kubectl.
    pub flags: Option<String>,
}

impl Cluster {
    /// Wraps an existing client (tests use in-process sandbox clients) behind the same retry
    /// layer as a connected one.
    pub fn from_client(client: kube::Client, url: &str) -> Cluster {
        Cluster {
            default_namespace: client.default_namespace().to_string(),
            client: retrying(client, RetrySettings::default()),
            url: url.to_string(),
            identity: "unknown".into(),
            context: url.to_string(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            end: End::default(),
            proxy_url: None,
            gate: RetrySettings::default().gate,
            via: None,
            flags: Some(String::new()),
        }
    }

    /// This cluster's API server as messages name it.
    pub fn server(&self) -> Server {
        Server {
            url: self.url.clone(),
            end: self.end,
            via: self.via.clone(),
        }
    }

    /// The namespace a command works in: `-n` first, then the context's namespace.
    pub fn namespace(&self, flag: Option<&str>) -> String {
        flag.map(str::to_string)
            .unwrap_or_else(|| self.default_namespace.clone())
    }

    pub fn api_error(&self, error: kube::Error, context: &str) -> Error {
        Error::from_kube(error, &self.server(), context)
    }
}

/// A server without scheme or host would make the HTTP client panic: said here instead.
fn check_server_url(
    config: &kube::Config,
    files: &str,
    cluster_name: Option<&str>,
    end: End,
) -> Result<()> {
    if config.cluster_url.scheme().is_none() || config.cluster_url.host().is_none() {
        let server = super::url::without_userinfo(&config.cluster_url.to_string());
        return Err(Error::Kubeconfig {
            problem: format!(
                "{files}: cluster \"{}\" has server \"{server}\", which is not a URL (it needs a scheme and a host); write it as \"https://{}\" (http:// for a server without TLS)",
                cluster_name.unwrap_or_default(),
                server.trim_start_matches("//")
            ),
            flag: end.kubeconfig_flag,
        });
    }
    Ok(())
}

/// The connection flags and the plugin's own settings applied to a client's config; returns
/// how long one request may wait for an answer.
fn apply_connection_flags(
    config: &mut kube::Config,
    connection: &Connection,
) -> std::time::Duration {
    // Exactly one retry layer, the plugin's own: kube's would retry some statuses itself.
    config.default_retry = false;
    // Servers derive the field manager from the User-Agent: writes show up as kubectl-capi's.
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    if connection.insecure_skip_tls_verify {
        config.accept_invalid_certs = true;
    }
    // Each attempt waits at most the request timeout for an answer (the retry layer bounds it);
    // reads of a body keep kube's own long timeout, so that quiet watches stay open.
    let request_timeout = connection
        .request_timeout
        .unwrap_or(DEFAULT_REQUEST_TIMEOUT);
    config.connect_timeout = Some(request_timeout);
    config.write_timeout = Some(request_timeout);
    if let Some(user) = &connection.as_user {
        config.auth_info.impersonate = Some(user.clone());
    }
    if !connection.as_groups.is_empty() {
        config.auth_info.impersonate_groups = Some(connection.as_groups.clone());
    }
    request_timeout
}

/// Reads the kubeconfig (`--kubeconfig`, else `KUBECONFIG` merged like kubectl, else
/// `~/.kube/config`) and builds a client with the connection flags applied.
pub async fn connect(connection: &Connection) -> Result<Cluster> {
    let (kubeconfig, named) = load(connection)?;
    let chosen = Chosen::of(connection, &kubeconfig);
    let options = KubeConfigOptions {
        context: connection.context.clone(),
        cluster: connection.cluster.clone(),
        user: connection.user.clone(),
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| named.unusable(connection, e))?;
    check_server_url(
        &config,
        &named.files,
        chosen.cluster.as_deref(),
        connection.end,
    )?;
    cluster_of(config, connection, chosen)
}

/// The client of `config` behind the plugin's retry layer and write gate, with what messages
/// and hints say of it.
fn cluster_of(
    mut config: kube::Config,
    connection: &Connection,
    chosen: Chosen,
) -> Result<Cluster> {
    let end = connection.end;
    let request_timeout = apply_connection_flags(&mut config, connection);
    let url = super::url::without_userinfo(config.cluster_url.to_string().trim_end_matches('/'));
    let default_namespace = config.default_namespace.clone();
    let proxy_url = config.proxy_url.clone();
    let identity = connection
        .as_user
        .clone()
        .or(connection.user.clone())
        .or(chosen.user)
        .unwrap_or_else(|| "unknown".to_string());
    let via: Option<std::sync::Arc<str>> = connection
        .inline
        .as_ref()
        .map(|inline| inline.origin.as_str().into());
    let server = Server {
        url: url.clone(),
        end,
        via: via.clone(),
    };
    let gate = super::gate::WriteGate::guarded();
    let client = kube::Client::try_from(config)
        .map_err(|e| Error::from_kube(e, &server, "building the client"))?;
    Ok(Cluster {
        client: retrying(
            client,
            RetrySettings {
                log: connection.request_log.clone(),
                request_timeout,
                base_url: url.as_str().into(),
                gate: gate.clone(),
                ..RetrySettings::default()
            },
        ),
        url,
        default_namespace,
        identity,
        context: chosen.context.unwrap_or_default(),
        request_timeout,
        end,
        proxy_url,
        gate,
        via,
        // For kubectl, and only for a kubeconfig of the user's own: kubectl runs what a
        // kubeconfig read from a Secret names.
        flags: (connection.inline.is_none() && !connection.kubeconfig_from_secret)
            .then(|| connection.as_flags()),
    })
}
