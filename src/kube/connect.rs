//! kubeconfig + kubectl flags → a kube client, the way kubectl resolves them.

use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

use super::retry::{DEFAULT_REQUEST_TIMEOUT, RetrySettings, retrying};
use crate::error::{Error, Result, Server, yaml_problem};
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

/// `path`'s kubeconfig error, one line; `end` names the flag that chooses another file.
fn kubeconfig_error(path: &Path, end: End) -> impl Fn(KubeconfigError) -> Error + '_ {
    let flag = end.kubeconfig_flag;
    move |error| match error {
        KubeconfigError::FindPath => Error::NoKubeconfig(None),
        KubeconfigError::ReadConfig(io, path) if io.kind() == std::io::ErrorKind::NotFound => {
            Error::KubeconfigMissing { path, flag }
        }
        KubeconfigError::Parse(yaml) => Error::KubeconfigSyntax {
            problem: yaml_problem(path, &yaml),
            flag,
        },
        other => Error::Kubeconfig {
            problem: format!("{}: {other}", path.display()),
            flag,
        },
    }
}

/// The kubeconfig files to read, as kubectl chooses them: `--kubeconfig`; else those `KUBECONFIG`
/// lists that exist (empty entries and missing files are skipped; an error only when none
/// exists); else `~/.kube/config` (the platform's home: `%USERPROFILE%` on Windows).
fn kubeconfig_paths(flag: Option<&Path>, end: End) -> Result<Vec<PathBuf>> {
    if let Some(path) = flag {
        return match path.exists() {
            true => Ok(vec![path.to_path_buf()]),
            false => Err(Error::KubeconfigMissing {
                path: path.to_path_buf(),
                flag: end.kubeconfig_flag,
            }),
        };
    }
    let listed: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|value| std::env::split_paths(&value).collect())
        .unwrap_or_default();
    let listed: Vec<PathBuf> = listed
        .into_iter()
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    if listed.is_empty() {
        return match crate::platform::default_kubeconfig() {
            Some(default) if default.exists() => Ok(vec![default]),
            default => Err(Error::NoKubeconfig(
                default.map(|p| p.display().to_string()),
            )),
        };
    }
    let existing: Vec<PathBuf> = listed.iter().filter(|p| p.exists()).cloned().collect();
    if existing.is_empty() {
        return Err(Error::KubeconfigsMissing(
            listed.iter().map(|p| p.display().to_string()).collect(),
        ));
    }
    Ok(existing)
}

/// The kubeconfig files, merged as kubectl merges them (the first to set a value wins).
pub fn read_kubeconfig(flag: Option<&Path>) -> Result<Kubeconfig> {
    Ok(read_kubeconfig_files(flag, End::default())?.0)
}

/// The kubeconfig files of `end` merged, and how messages name them.
fn read_kubeconfig_files(flag: Option<&Path>, end: End) -> Result<(Kubeconfig, String)> {
    let mut merged = Kubeconfig::default();
    let paths = kubeconfig_paths(flag, end)?;
    for path in &paths {
        let next = Kubeconfig::read_from(path).map_err(kubeconfig_error(path, end))?;
        merged = merged.merge(next).map_err(kubeconfig_error(path, end))?;
    }
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let files = match shown.as_slice() {
        [one] => format!("the kubeconfig {one}"),
        many => format!("the kubeconfigs {}", many.join(", ")),
    };
    Ok((merged, files))
}

/// ` --kubeconfig PATH` when the connection names a file: kubectl commands in hints read the same.
fn kubeconfig_flags(connection: &Connection) -> String {
    connection
        .kubeconfig
        .as_ref()
        .map(|p| {
            format!(
                " --kubeconfig {}",
                crate::settings::shell_word(&p.to_string_lossy())
            )
        })
        .unwrap_or_default()
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
    let end = connection.end;
    let (kubeconfig, files, raw) = kubeconfig_of(connection)?;
    let unknown_context = |context: String| Error::UnknownContext {
        context,
        flag: end.context_flag,
        files: files.clone(),
        list_flags: kubeconfig_flags(connection),
    };
    refuse_what_runs_or_reads(connection, &kubeconfig, raw.as_deref(), &files)?;
    refuse_tokens_no_header_carries(&kubeconfig, &files, end)?;
    let no_contexts = kubeconfig.contexts.is_empty();
    if let Some(context) = &connection.context
        && !kubeconfig.contexts.iter().any(|c| &c.name == context)
    {
        return Err(unknown_context(context.clone()));
    }
    let context_name = connection
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone());
    let kubeconfig_user = kubeconfig
        .contexts
        .iter()
        .find(|c| Some(&c.name) == context_name.as_ref())
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.clone());
    let cluster_name = connection.cluster.clone().or_else(|| {
        kubeconfig
            .contexts
            .iter()
            .find(|c| Some(&c.name) == context_name.as_ref())
            .and_then(|c| c.context.as_ref())
            .map(|c| c.cluster.clone())
    });
    let options = KubeConfigOptions {
        context: connection.context.clone(),
        cluster: connection.cluster.clone(),
        user: connection.user.clone(),
    };
    let unusable_file = |e: KubeconfigError| match e {
        KubeconfigError::LoadContext(name) => unknown_context(name),
        KubeconfigError::CurrentContextNotSet if no_contexts => Error::Kubeconfig {
            problem: format!("{files} holds no contexts (is it empty?)"),
            flag: end.kubeconfig_flag,
        },
        KubeconfigError::CurrentContextNotSet => Error::Usage(format!(
            "{files} sets no current-context; pass one with {} (list them with `kubectl config get-contexts{}`)",
            end.context_flag,
            kubeconfig_flags(connection)
        )),
        KubeconfigError::LoadClusterOfContext(name) => Error::Kubeconfig {
            problem: format!("{files}: the cluster of context \"{name}\" is not in it"),
            flag: end.kubeconfig_flag,
        },
        other => Error::Kubeconfig {
            problem: format!("{files}: {other}"),
            flag: end.kubeconfig_flag,
        },
    };
    let servers = servers_named(&kubeconfig);
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| match (&connection.inline, e) {
            (Some(_), e) => unusable_from_a_cluster(end, &files, &servers, &e),
            (None, e) => unusable_file(e),
        })?;
    check_server_url(&config, &files, cluster_name.as_deref(), end)?;

    let request_timeout = apply_connection_flags(&mut config, connection);
    let url = super::url::without_userinfo(config.cluster_url.to_string().trim_end_matches('/'));
    let default_namespace = config.default_namespace.clone();
    let proxy_url = config.proxy_url.clone();
    let identity = connection
        .as_user
        .clone()
        .or(connection.user.clone())
        .or(kubeconfig_user)
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
        context: context_name.unwrap_or_default(),
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

/// The connection's kubeconfig, how messages name it, and its text when a cluster held it
/// (for the allowlist).
fn kubeconfig_of(connection: &Connection) -> Result<(Kubeconfig, String, Option<String>)> {
    Ok(match &connection.inline {
        Some(inline) => (
            inline.kubeconfig.clone(),
            inline.origin.clone(),
            Some(String::from_utf8_lossy(&inline.raw).into_owned()),
        ),
        None if connection.kubeconfig_from_secret => {
            if connection.insecure_skip_tls_verify {
                return Err(Error::Usage(
                    "--insecure-skip-tls-verify does not apply to a kubeconfig read from a cluster's Secret (--kubeconfig-from-secret): its certificate-authority-data is what proves the server; drop the flag".into(),
                ));
            }
            let (kubeconfig, files, raw) = read_from_a_secret(connection)?;
            (kubeconfig, files, Some(raw))
        }
        None => {
            let (kubeconfig, files) =
                read_kubeconfig_files(connection.kubeconfig.as_deref(), connection.end)?;
            (kubeconfig, files, None)
        }
    })
}

/// `--kubeconfig-from-secret`'s kubeconfig, read once (it is often `<(kubectl get secret …)`, a
/// pipe): parsed, and as text for the allowlist.
fn read_from_a_secret(connection: &Connection) -> Result<(Kubeconfig, String, String)> {
    let end = connection.end;
    let paths = kubeconfig_paths(connection.kubeconfig.as_deref(), end)?;
    let [path] = paths.as_slice() else {
        return Err(Error::Usage(
            "--kubeconfig-from-secret reads one kubeconfig: pass the Secret's with --kubeconfig"
                .into(),
        ));
    };
    let raw = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::KubeconfigMissing {
            path: path.clone(),
            flag: end.kubeconfig_flag,
        },
        _ => Error::Kubeconfig {
            problem: format!("{}: {e}", path.display()),
            flag: end.kubeconfig_flag,
        },
    })?;
    let kubeconfig = Kubeconfig::from_yaml(&raw).map_err(kubeconfig_error(path, end))?;
    Ok((
        kubeconfig,
        format!("the kubeconfig {}", path.display()),
        raw,
    ))
}

/// A token with a line break or a control character would make the HTTP client panic when it
/// builds the header: said here instead, naming the user (never the token).
fn refuse_tokens_no_header_carries(kubeconfig: &Kubeconfig, files: &str, end: End) -> Result<()> {
    use secrecy::ExposeSecret;
    for named in &kubeconfig.auth_infos {
        let token = named.auth_info.as_ref().and_then(|a| a.token.as_ref());
        if token.is_some_and(|t| !super::inline_only::is_header_text(t.expose_secret())) {
            return Err(Error::Kubeconfig {
                problem: format!(
                    "{files}: the token of user \"{}\" holds a line break or control character, which no HTTP header can carry; write it on one line",
                    named.name
                ),
                flag: end.kubeconfig_flag,
            });
        }
    }
    Ok(())
}

/// ` (server https://…)`: the servers a kubeconfig names, for a message that has no URL yet.
fn servers_named(kubeconfig: &Kubeconfig) -> String {
    let servers: Vec<String> = kubeconfig
        .clusters
        .iter()
        .filter_map(|c| c.cluster.as_ref()?.server.as_deref())
        .map(super::url::without_userinfo)
        .collect();
    match servers.as_slice() {
        [] => " (it names no server)".into(),
        servers => format!(" (server {})", servers.join(", ")),
    }
}

/// A kubeconfig read from a cluster that cannot be used: which end, which Secret, which server,
/// and that the Secret (not a local file or a flag) is what to fix.
fn unusable_from_a_cluster(
    end: End,
    origin: &str,
    servers: &str,
    error: &KubeconfigError,
) -> Error {
    let problem = match error {
        KubeconfigError::CurrentContextNotSet => "sets no current-context".to_string(),
        KubeconfigError::LoadContext(name) => {
            format!("names context \"{name}\", which it does not hold")
        }
        KubeconfigError::LoadClusterOfContext(name) => {
            format!("lacks the cluster of its context \"{name}\"")
        }
        other => format!("cannot be used: {other}"),
    };
    let (unreached, instead) = match end.role {
        Some(role) => (
            format!(", so the {role} cannot be reached"),
            "--to-kubeconfig",
        ),
        None => (String::new(), "--kubeconfig"),
    };
    Error::Usage(format!(
        "{origin}{servers} {problem}{unreached}; fix that Secret, or pass a kubeconfig for that cluster with {instead} instead"
    ))
}

/// A kubeconfig read from a cluster (`--to-cluster`'s Secret, or `--kubeconfig-from-secret`)
/// may carry only inline credentials: anything that would run a program, open a local file or
/// send the credentials elsewhere is refused before any connection, each field in a line of its
/// own (never its value).
fn refuse_what_runs_or_reads(
    connection: &Connection,
    kubeconfig: &Kubeconfig,
    raw: Option<&str>,
    files: &str,
) -> Result<()> {
    let (origin, allowed_proxy) = match &connection.inline {
        Some(inline) => (inline.origin.as_str(), inline.allowed_proxy.as_ref()),
        None if connection.kubeconfig_from_secret => (files, None),
        None => return Ok(()),
    };
    let found =
        super::inline_only::refused_fields(kubeconfig, raw.unwrap_or_default(), allowed_proxy);
    if found.is_empty() {
        return Ok(());
    }
    Err(Error::Refused(
        found
            .iter()
            .map(|field| {
                format!(
                    "{origin} sets {field}: a kubeconfig read from a cluster is data, never a command, and may carry only {}; nothing was run, read or sent",
                    super::inline_only::ALLOWED
                )
            })
            .collect(),
    ))
}
