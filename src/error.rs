//! Errors users see: one line that names the problem and the fix.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("kubeconfig {} not found; pass an existing file with --kubeconfig or set KUBECONFIG", .0.display())]
    KubeconfigMissing(PathBuf),
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
        "{url} serves no Cluster API kinds (group cluster.x-k8s.io not found); is this a Cluster API management cluster? choose one with --context"
    )]
    CapiNotInstalled { url: String },
    #[error(
        "request to the API server timed out after {0}; raise --request-timeout or check the cluster's health"
    )]
    Timeout(String),
    #[error("{context}: {message}")]
    Api { context: String, message: String },
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
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every message of an error chain, outermost first.
fn chain(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut out = vec![error.to_string()];
    let mut source = error.source();
    while let Some(s) = source {
        out.push(s.to_string());
        source = s.source();
    }
    out
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
        let messages = chain(&error);
        let joined = messages.join(": ").to_lowercase();
        let deepest = messages.last().cloned().unwrap_or_default();
        if joined.contains("certificate") || joined.contains("tls") || joined.contains("handshake")
        {
            return Error::Tls {
                url: url.to_string(),
                reason: deepest,
            };
        }
        if joined.contains("timed out") || joined.contains("elapsed") {
            return Error::Timeout(deepest);
        }
        if joined.contains("connect")
            || joined.contains("refused")
            || joined.contains("dns")
            || joined.contains("resolve")
        {
            return Error::Unreachable {
                url: url.to_string(),
                reason: deepest,
            };
        }
        Error::Api {
            context: context.to_string(),
            message: messages.join(": "),
        }
    }
}
