//! Errors users see: one line that names the problem and the fix.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("kubeconfig {} not found; pass an existing file with --kubeconfig or set KUBECONFIG", .0.display())]
    KubeconfigMissing(PathBuf),
    #[error(
        "none of the files KUBECONFIG lists exists ({}); set KUBECONFIG to an existing kubeconfig or pass --kubeconfig",
        .0.join(", ")
    )]
    KubeconfigsMissing(Vec<String>),
    #[error(
        "no kubeconfig found (KUBECONFIG is unset and ~/.kube/config does not exist); pass --kubeconfig PATH"
    )]
    NoKubeconfig,
    #[error(
        "context \"{0}\" is not in the kubeconfig; list contexts with `kubectl config get-contexts` and pass one with --context"
    )]
    UnknownContext(String),
    #[error("kubeconfig is not usable: {0}; fix the file or pass another with --kubeconfig")]
    Kubeconfig(String),
    #[error("{0}; fix the kubeconfig or pass another with --kubeconfig")]
    KubeconfigSyntax(String),
    #[error(
        "cannot reach the Kubernetes API server at {url}: {reason}; check --context/--kubeconfig and that the cluster is up"
    )]
    Unreachable { url: String, reason: String },
    #[error(
        "TLS connection to {url} failed: {reason}; check the kubeconfig's certificate-authority or, for a test cluster, pass --insecure-skip-tls-verify"
    )]
    Tls { url: String, reason: String },
    #[error(
        "the API server at {url} rejected the credentials (401 Unauthorized); refresh the token or client certificate of the kubeconfig user"
    )]
    Unauthorized { url: String },
    #[error(
        "{message} (403 Forbidden); ask for RBAC permission or use a kubeconfig user that has it"
    )]
    Forbidden { message: String },
    #[error(
        "{url} does not look like a Kubernetes API server (it answered {answer}); check --context/--kubeconfig, or the kubeconfig's server address"
    )]
    NotKubernetes { url: String, answer: String },
    #[error(
        "{url} serves no Cluster API kinds (group cluster.x-k8s.io not found); is this a Cluster API management cluster? choose one with {choose}"
    )]
    CapiNotInstalled {
        url: String,
        /// The flags that choose this cluster: `--context`, or the move's target flags.
        choose: &'static str,
    },
    #[error(
        "the API server at {url} did not answer {after}; check that it is up and that --context/--kubeconfig point at it, or raise --request-timeout"
    )]
    Timeout { url: String, after: String },
    #[error(
        "lost the API server at {url}: its watches could not be re-established for {after} ({reason}); check that it is up, then run the command again"
    )]
    LostServer {
        url: String,
        after: String,
        reason: String,
    },
    #[error("{context}: {message}")]
    Api { context: String, message: String },
    #[error(
        "clusters.cluster.x-k8s.io {} not found in {scope}; list them with `kubectl get clusters.cluster.x-k8s.io -A{flags}`",
        .names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
    )]
    ClustersNotFound {
        names: Vec<String>,
        scope: String,
        /// The user's connection flags, so the hint works when pasted.
        flags: String,
    },
    /// The answer is no (exit 1): every reason, and nothing was written.
    #[error("{}", .0.join("; "))]
    Refused(Vec<String>),
    /// stdout was closed (`| head`): the command ends quietly.
    #[error("stdout was closed")]
    BrokenPipe,
    #[error("cannot write the output: {0}")]
    Output(String),
    /// Ctrl-C: the command stopped at a safe point.
    #[error("interrupted")]
    Interrupted,
    /// The lease that let this command write was lost (another command took it over, or it
    /// could not be renewed in time): it stopped writing.
    #[error("{0}")]
    LeaseLost(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An attempt that got no answer within the request timeout (the retry layer carries it in a
/// `kube::Error::Service`, so that the user's message can name the timeout).
#[derive(Debug, thiserror::Error)]
#[error("no answer within {} ({attempts} attempt(s))", crate::cli::show_duration(*.timeout))]
pub struct NoAnswer {
    pub timeout: std::time::Duration,
    pub attempts: u32,
}

/// Reads that were forbidden, collected so that one error names every missing read permission
/// (as the move's write-permission preflight names every missing write) instead of the first.
#[derive(Default)]
pub struct Denials {
    /// `(resource.group, the server's message)` of each forbidden read.
    forbidden: Vec<(String, String)>,
}

impl Denials {
    /// The answer of reading `resource` (`plural.group`); a 403 is noted and read as nothing, so
    /// that the next read still runs.
    pub fn note<T: Default>(&mut self, resource: &str, read: Result<T>) -> Result<T> {
        match read {
            Err(Error::Forbidden { message }) => {
                self.forbidden.push((resource.to_string(), message));
                Ok(T::default())
            }
            other => other,
        }
    }

    /// A refusal (exit 1, like every other missing permission) naming every forbidden read, if
    /// there was one: the server's own words for one, the list of resources for several.
    pub fn check(self) -> Result<()> {
        let forbidden = match self.forbidden.as_slice() {
            [] => return Ok(()),
            [(_, message)] => Error::Forbidden {
                message: message.clone(),
            },
            many => Error::Forbidden {
                message: format!(
                    "the API server forbids listing {} resources this command reads: {}",
                    many.len(),
                    many.iter()
                        .map(|(r, _)| r.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
        };
        Err(Error::Refused(vec![forbidden.to_string()]))
    }
}

/// A YAML error as `file:line:column: problem`, without the code frame the parser draws.
pub fn yaml_problem(path: &std::path::Path, error: &serde_saphyr::Error) -> String {
    let message = error.without_snippet().to_string();
    match error.location() {
        Some(at) => {
            let (line, column) = (at.line(), at.column());
            let message = message
                .strip_suffix(&format!(" at line {line}, column {column}"))
                .unwrap_or(&message);
            format!("{}:{line}:{column}: {message}", path.display())
        }
        None => format!("{}: {message}", path.display()),
    }
}

/// The errors of a chain, outermost first — also those an `io::Error` wraps, which its
/// `source()` skips.
fn sources<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Vec<&'a (dyn std::error::Error + 'static)> {
    let mut out = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        out.push(e);
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    out
}

/// What went wrong below HTTP, judged by the types in the chain (deepest first), never by
/// message text.
#[derive(Debug, PartialEq, Eq)]
enum Transport {
    Tls,
    Timeout,
    Unreachable,
}

fn transport(error: &(dyn std::error::Error + 'static)) -> Option<Transport> {
    sources(error).into_iter().rev().find_map(|e| {
        if e.is::<rustls::Error>() {
            return Some(Transport::Tls);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            return match io.kind() {
                TimedOut => Some(Transport::Timeout),
                ConnectionRefused | ConnectionReset | ConnectionAborted | NotConnected
                | AddrNotAvailable | HostUnreachable | NetworkUnreachable | BrokenPipe
                | UnexpectedEof => Some(Transport::Unreachable),
                _ => None,
            };
        }
        if let Some(hyper) = e.downcast_ref::<hyper::Error>() {
            return hyper.is_timeout().then_some(Transport::Timeout);
        }
        if let Some(client) = e.downcast_ref::<hyper_util::client::legacy::Error>() {
            // A connect error whose cause said nothing more specific (a failed DNS lookup).
            return client.is_connect().then_some(Transport::Unreachable);
        }
        None
    })
}

impl Error {
    /// Classifies a kube error for the user: what went wrong talking to `url`, doing `context`.
    pub fn from_kube(error: kube::Error, url: &str, context: &str) -> Error {
        if let kube::Error::Api(status) = &error {
            return match status.code {
                401 => Error::Unauthorized {
                    url: url.to_string(),
                },
                403 => Error::Forbidden {
                    message: status.message.clone(),
                },
                _ => Error::Api {
                    context: context.to_string(),
                    message: status.message.clone(),
                },
            };
        }
        if let Some(NoAnswer { timeout, attempts }) =
            sources(&error).into_iter().find_map(|e| e.downcast_ref())
        {
            let timeout = crate::cli::show_duration(*timeout);
            return Error::Timeout {
                url: url.to_string(),
                after: match attempts {
                    1 => format!("within {timeout}"),
                    n => format!("within {timeout}, {n} times"),
                },
            };
        }
        let messages: Vec<String> = sources(&error).iter().map(|e| e.to_string()).collect();
        let deepest = messages.last().cloned().unwrap_or_default();
        let kind = match &error {
            kube::Error::RustlsTls(_) => Some(Transport::Tls),
            _ => transport(&error),
        };
        match kind {
            Some(Transport::Tls) => Error::Tls {
                url: url.to_string(),
                reason: deepest,
            },
            Some(Transport::Timeout) => Error::Timeout {
                url: url.to_string(),
                after: "in time (the connection timed out)".to_string(),
            },
            Some(Transport::Unreachable) => Error::Unreachable {
                url: url.to_string(),
                reason: deepest,
            },
            None => Error::Api {
                context: context.to_string(),
                message: messages.join(": "),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(error: impl std::error::Error + Send + Sync + 'static) -> kube::Error {
        kube::Error::Service(Box::new(error))
    }

    #[test]
    fn yaml_problems_are_one_line_with_file_line_and_column() {
        let error = serde_saphyr::from_str::<serde_json::Value>("a: 1\nb: [oops\n").unwrap_err();
        assert_eq!(
            yaml_problem(std::path::Path::new("f.yaml"), &error),
            "f.yaml:2:4: unclosed bracket '['"
        );
    }

    #[test]
    fn transport_failures_are_told_apart_by_type() {
        let classify = |e| Error::from_kube(e, "https://k", "reading");
        let io = |kind, message: &str| std::io::Error::new(kind, message.to_string());
        assert!(matches!(
            classify(service(io(std::io::ErrorKind::ConnectionRefused, "nope"))),
            Error::Unreachable { .. }
        ));
        assert!(matches!(
            classify(service(io(std::io::ErrorKind::TimedOut, "slow"))),
            Error::Timeout { .. }
        ));
        // As hyper-rustls reports a bad certificate: io errors within io errors.
        let tls = std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::General("bad certificate".into()),
        ));
        assert!(matches!(classify(service(tls)), Error::Tls { .. }));
        // Words in a message decide nothing: a "connection timed out" that is not a timeout.
        let worded = io(
            std::io::ErrorKind::Other,
            "certificate connection timed out refused",
        );
        assert!(matches!(classify(service(worded)), Error::Api { .. }));
    }
}
