//! Flags resolved into what the commands use: connection, scope and output policy.

use std::path::PathBuf;
use std::time::Duration;

use crate::choices::ColorChoice;
pub use crate::choices::{DryRun, OutputFormat};
use crate::cli::GlobalArgs;
pub use crate::error::End;
use crate::error::{Error, Result};

/// How to reach the management cluster.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// Which end this is, for messages.
    pub end: End,
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    pub as_user: Option<String>,
    pub as_groups: Vec<String>,
    pub insecure_skip_tls_verify: bool,
    pub request_timeout: Option<Duration>,
    /// `-v 6` and above: where one line per request goes (method, URL, status, time; never
    /// bodies).
    pub request_log: Option<crate::output::Log>,
    /// A kubeconfig held in memory only, read from a workload cluster's Secret (`--to-cluster`):
    /// used instead of files, never written, never printed.
    pub inline: Option<InlineKubeconfig>,
    /// `--kubeconfig-from-secret`: the kubeconfig file was read from a cluster (a pasted hint
    /// reads a workload cluster's Secret): only its inline credentials are used
    /// ([`crate::kube::inline_only`]).
    pub kubeconfig_from_secret: bool,
}

/// A kubeconfig that exists only in memory, and how to speak of it.
#[derive(Clone)]
pub struct InlineKubeconfig {
    pub kubeconfig: kube::config::Kubeconfig,
    /// The kubeconfig as its Secret held it (kept by the move for a resume).
    pub raw: Vec<u8>,
    /// How messages name it: `the kubeconfig in Secret default/w1-kubeconfig of the source`.
    pub origin: String,
    /// The `--kubeconfig <(…)` a pasted command reaches the same cluster with (it reads the
    /// Secret again).
    pub reach: String,
    /// The proxy the source's own kubeconfig goes through: the only one this kubeconfig may name.
    pub allowed_proxy: Option<http::Uri>,
}

impl std::fmt::Debug for InlineKubeconfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The kubeconfig holds credentials: only where it came from is ever shown.
        write!(f, "InlineKubeconfig({})", self.origin)
    }
}

/// The `--kubeconfig <(…)` that reads the kubeconfig in Secret `secret_name` of the source again
/// (`flags`: the source's connection), for commands pasted later.
pub fn reach_through_secret(secret_name: &str, namespace: &str, flags: &str) -> String {
    format!(
        " --kubeconfig <(kubectl get secret {} -n {}{flags} -o jsonpath='{{.data.value}}' | base64 -d)",
        shell_word(secret_name),
        shell_word(namespace)
    )
}

impl Connection {
    /// The connection flags the user gave, as kubectl takes them and quoted for a shell
    /// (` --kubeconfig k --context c`): hints repeat them so they work when pasted.
    pub fn as_flags(&self) -> String {
        if let Some(inline) = &self.inline {
            return format!("{} --kubeconfig-from-secret", inline.reach);
        }
        let kubeconfig = self
            .kubeconfig
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned());
        let given = [
            ("--kubeconfig", kubeconfig.as_deref()),
            ("--context", self.context.as_deref()),
            ("--cluster", self.cluster.as_deref()),
            ("--user", self.user.as_deref()),
            ("--as", self.as_user.as_deref()),
        ];
        let mut out = String::new();
        for (flag, value) in given {
            if let Some(value) = value {
                out.push_str(&format!(" {flag} {}", shell_word(value)));
            }
        }
        for group in &self.as_groups {
            out.push_str(&format!(" --as-group {}", shell_word(group)));
        }
        if self.insecure_skip_tls_verify {
            out.push_str(" --insecure-skip-tls-verify");
        }
        out
    }
}

impl Connection {
    /// Another management cluster, reached with these flags but its own kubeconfig (when given)
    /// and context (`--to-context`, `--from-context`); this one's `--cluster`/`--user` do not
    /// apply there.
    pub fn other_end(
        &self,
        end: End,
        kubeconfig: Option<&PathBuf>,
        context: Option<&String>,
    ) -> Connection {
        let mut connection = self.clone();
        connection.end = end;
        if let Some(path) = kubeconfig {
            connection.kubeconfig = Some(path.clone());
            // `--kubeconfig-from-secret` speaks of `--kubeconfig` only.
            connection.kubeconfig_from_secret = false;
        }
        connection.context = context.cloned();
        connection.cluster = None;
        connection.user = None;
        connection
    }
}

/// `word` as a POSIX shell reads it back: as is when it is plain, else single-quoted.
pub fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Which namespaces and Clusters a command looks at.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// `-n`, if given; otherwise the context's namespace is used, else `default`.
    pub namespace: Option<String>,
    pub all_namespaces: bool,
    pub selector: Option<String>,
}

impl Scope {
    /// The scope flags the user gave (` -n ns`, ` -A`, ` -l sel`), quoted for a shell.
    pub fn as_flags(&self) -> String {
        let mut out = String::new();
        if self.all_namespaces {
            out.push_str(" -A");
        } else if let Some(namespace) = &self.namespace {
            out.push_str(&format!(" -n {}", shell_word(namespace)));
        }
        if let Some(selector) = &self.selector {
            out.push_str(&format!(" -l {}", shell_word(selector)));
        }
        out
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub connection: Connection,
    pub scope: Scope,
    pub output: OutputFormat,
    pub color: ColorChoice,
    pub verbosity: u8,
}

impl Settings {
    pub fn from_args(args: &GlobalArgs) -> Result<Settings> {
        let output = args.output;
        // `0` is kubectl's "no limit".
        let request_timeout = args.request_timeout.filter(|d| !d.is_zero());
        if args.all_namespaces && args.namespace.is_some() {
            // kubectl lets -A win; say so rather than guess silently.
            return Err(Error::Usage(
                "--namespace and --all-namespaces exclude each other; pass one of them".into(),
            ));
        }
        if let Some(namespace) = &args.namespace {
            crate::validate::namespace(namespace).map_err(Error::Usage)?;
        }
        if let Some(selector) = &args.selector {
            crate::validate::label_selector(selector).map_err(Error::Usage)?;
        }
        Ok(Settings {
            connection: Connection {
                end: End::default(),
                kubeconfig: args.kubeconfig.clone(),
                context: args.context.clone(),
                cluster: args.cluster.clone(),
                user: args.user.clone(),
                as_user: args.as_user.clone(),
                as_groups: args.as_group.clone(),
                insecure_skip_tls_verify: args.insecure_skip_tls_verify,
                request_timeout,
                request_log: (args.verbosity.unwrap_or(0) >= 6).then(crate::output::Log::stderr),
                inline: None,
                kubeconfig_from_secret: args.kubeconfig_from_secret,
            },
            scope: Scope {
                namespace: args.namespace.clone(),
                all_namespaces: args.all_namespaces,
                selector: args.selector.clone(),
            },
            output,
            color: args.color,
            verbosity: args.verbosity.unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_repeat_the_connection_flags_quoted_for_a_shell() {
        let connection = Connection {
            kubeconfig: Some(PathBuf::from("/tmp/my configs/k")),
            context: Some("prod".into()),
            as_groups: vec!["ops".into()],
            ..Connection::default()
        };
        assert_eq!(
            connection.as_flags(),
            " --kubeconfig '/tmp/my configs/k' --context prod --as-group ops"
        );
        assert_eq!(Connection::default().as_flags(), "");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }
}
