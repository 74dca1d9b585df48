//! The kubeconfig a connection names: files merged as kubectl merges them, or one read from a
//! cluster's Secret; what it may not hold refused before any connection, what it chooses
//! (context, cluster, user), and what is wrong with it said in one line naming the flag to fix.

use std::path::{Path, PathBuf};

use kube::config::{Kubeconfig, KubeconfigError};

use crate::error::{Error, Result, yaml_problem};
use crate::settings::{Connection, End};

/// How messages name a connection's kubeconfig.
pub(super) struct Named {
    /// `the kubeconfig PATH`, or the Secret it was read from.
    pub files: String,
    /// ` (server https://…)`, for a message that has no URL yet.
    servers: String,
    no_contexts: bool,
}

impl Named {
    /// What `error` (from choosing in the kubeconfig) means for the user, and which flag fixes it.
    pub fn unusable(&self, connection: &Connection, error: KubeconfigError) -> Error {
        let end = connection.end;
        if connection.inline.is_some() {
            return unusable_from_a_cluster(end, &self.files, &self.servers, &error);
        }
        match error {
            KubeconfigError::LoadContext(name) => self.unknown_context(connection, name),
            KubeconfigError::CurrentContextNotSet if self.no_contexts => Error::Kubeconfig {
                problem: format!("{} holds no contexts (is it empty?)", self.files),
                flag: end.kubeconfig_flag,
            },
            KubeconfigError::CurrentContextNotSet => Error::Usage(format!(
                "{} sets no current-context; pass one with {} (list them with `kubectl config get-contexts{}`)",
                self.files,
                end.context_flag,
                kubeconfig_flags(connection)
            )),
            KubeconfigError::LoadClusterOfContext(name) => Error::Kubeconfig {
                problem: format!(
                    "{}: the cluster of context \"{name}\" is not in it",
                    self.files
                ),
                flag: end.kubeconfig_flag,
            },
            other => Error::Kubeconfig {
                problem: format!("{}: {other}", self.files),
                flag: end.kubeconfig_flag,
            },
        }
    }

    fn unknown_context(&self, connection: &Connection, context: String) -> Error {
        Error::UnknownContext {
            context,
            flag: connection.end.context_flag,
            files: self.files.clone(),
            list_flags: kubeconfig_flags(connection),
        }
    }
}

/// The connection's kubeconfig, read and checked: nothing that runs, reads or sends elsewhere
/// (when a cluster held it), no token a header cannot carry, and the `--context` it names.
pub(super) fn load(connection: &Connection) -> Result<(Kubeconfig, Named)> {
    let (kubeconfig, files, raw) = kubeconfig_of(connection)?;
    refuse_what_runs_or_reads(connection, &kubeconfig, raw.as_deref(), &files)?;
    refuse_tokens_no_header_carries(&kubeconfig, &files, connection.end)?;
    let named = Named {
        servers: servers_named(&kubeconfig),
        no_contexts: kubeconfig.contexts.is_empty(),
        files,
    };
    if let Some(context) = &connection.context
        && !kubeconfig.contexts.iter().any(|c| &c.name == context)
    {
        return Err(named.unknown_context(connection, context.clone()));
    }
    Ok((kubeconfig, named))
}

/// What the kubeconfig and the flags choose: the context (`--context`, else the current one),
/// its user, and the cluster (`--cluster`, else the context's).
pub(super) struct Chosen {
    pub context: Option<String>,
    pub user: Option<String>,
    pub cluster: Option<String>,
}

impl Chosen {
    pub fn of(connection: &Connection, kubeconfig: &Kubeconfig) -> Chosen {
        let context = connection
            .context
            .clone()
            .or_else(|| kubeconfig.current_context.clone());
        let named = kubeconfig
            .contexts
            .iter()
            .find(|c| Some(&c.name) == context.as_ref())
            .and_then(|c| c.context.as_ref());
        Chosen {
            user: named.and_then(|c| c.user.clone()),
            cluster: connection
                .cluster
                .clone()
                .or_else(|| named.map(|c| c.cluster.clone())),
            context,
        }
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
        if token.is_some_and(|t| !crate::kube::inline_only::is_header_text(t.expose_secret())) {
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
        .map(crate::kube::url::without_userinfo)
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
    let found = crate::kube::inline_only::refused_fields(
        kubeconfig,
        raw.unwrap_or_default(),
        allowed_proxy,
    );
    if found.is_empty() {
        return Ok(());
    }
    Err(Error::Refused(
        found
            .iter()
            .map(|field| {
                format!(
                    "{origin} sets {field}: a kubeconfig read from a cluster is data, never a command, and may carry only {}; nothing was run, read or sent",
                    crate::kube::inline_only::ALLOWED
                )
            })
            .collect(),
    ))
}
