//! Errors users see: one line that names the problem and the fix.

use std::path::PathBuf;

use super::server::{Server, TlsFault};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error(
        "kubeconfig {} not found; pass an existing file with {flag}{}",
        .path.display(),
        if *.flag == "--kubeconfig" { " or set KUBECONFIG" } else { "" }
    )]
    KubeconfigMissing { path: PathBuf, flag: &'static str },
    #[error(
        "none of the files KUBECONFIG lists exists ({}); set KUBECONFIG to an existing kubeconfig or pass --kubeconfig",
        .0.join(", ")
    )]
    KubeconfigsMissing(Vec<String>),
    #[error(
        "no kubeconfig found (KUBECONFIG is unset and {} does not exist); pass --kubeconfig PATH",
        .0.as_deref().unwrap_or("~/.kube/config (no home directory found)")
    )]
    NoKubeconfig(Option<String>),
    #[error(
        "context \"{context}\" ({flag}) is not in {files}; list contexts with `kubectl config get-contexts{list_flags}` and pass one with {flag}"
    )]
    UnknownContext {
        context: String,
        /// The flag that named it: `--context`, `--to-context`, `--from-context`.
        flag: &'static str,
        /// The kubeconfig files read, as the message names them.
        files: String,
        /// ` --kubeconfig PATH` when a file was given, so that the listing shows the same file.
        list_flags: String,
    },
    #[error("kubeconfig is not usable: {problem}; fix the file or pass another with {flag}")]
    Kubeconfig {
        problem: String,
        /// The flag that chooses the file: `--kubeconfig`, `--to-kubeconfig`, `--from-kubeconfig`.
        flag: &'static str,
    },
    #[error("{problem}; fix the kubeconfig or pass another with {flag}")]
    KubeconfigSyntax { problem: String, flag: &'static str },
    #[error(
        "cannot reach {server}: {reason}; check {} and that the cluster is up",
        .server.end.choose()
    )]
    Unreachable { server: Server, reason: String },
    #[error("TLS connection to {server} failed: {reason}; {}", .fault.fix(.server))]
    Tls {
        server: Server,
        reason: String,
        fault: TlsFault,
    },
    #[error(
        "{server} speaks plain HTTP, not HTTPS; write the kubeconfig's server as {http_url}{}",
        if .server.end.role.is_some() { format!(" (or choose another cluster with {})", .server.end.choose()) } else { String::new() }
    )]
    PlainHttp { server: Server, http_url: String },
    #[error(
        "{server} did not answer in HTTP (it may speak HTTPS, as API servers do); write the kubeconfig's server as {https_url}{}",
        if .server.end.role.is_some() { format!(" (or choose another cluster with {})", .server.end.choose()) } else { String::new() }
    )]
    NotPlainHttp { server: Server, https_url: String },
    #[error(
        "{server} rejected the credentials (401 Unauthorized); refresh the token or client certificate of the kubeconfig user"
    )]
    Unauthorized { server: Server },
    #[error(
        "{message} (403 Forbidden); ask for RBAC permission or use a kubeconfig user that has it"
    )]
    Forbidden { message: String },
    #[error(
        "{} is not a Kubernetes API server (it answered {answer}); check {}, or the kubeconfig's server address",
        .server.short(),
        .server.end.choose()
    )]
    NotKubernetes { server: Server, answer: String },
    #[error(
        "{} answered {answer}, also when asked again; the server (or a proxy in front of it) is failing: check that it is healthy, or that {} point at the cluster you meant, and run the command again",
        .server.short(),
        .server.end.choose()
    )]
    ServerFailing { server: Server, answer: String },
    #[error(
        "{} serves no Cluster API kinds (group {} not found); is this a Cluster API management cluster? choose one with {}{}",
        .server.short(),
        crate::names::CORE_GROUP,
        .server.end.choose(),
        .install.as_ref().map(|how| format!(" (install Cluster API there first {how})")).unwrap_or_default()
    )]
    CapiNotInstalled {
        server: Server,
        /// How to install it there (for the move's target): with which command.
        install: Option<String>,
    },
    #[error(
        "{server} did not answer {after}; check that it is up and that {} point at it, or raise --request-timeout",
        .server.end.choose()
    )]
    Timeout { server: Server, after: String },
    #[error(
        "lost {server}: its watches could not be re-established for {after} ({reason}); check that it is up, then run the command again"
    )]
    LostServer {
        // Boxed: the rarest error need not make every `Result` larger.
        server: Box<Server>,
        after: String,
        reason: String,
    },
    #[error("{context}: {message}")]
    Api { context: String, message: String },
    #[error(
        "{} {} not found in {scope}; list them with `kubectl get {} -A{flags}`",
        crate::names::qualified("clusters", crate::names::CORE_GROUP),
        .names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", "),
        crate::names::qualified("clusters", crate::names::CORE_GROUP),
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
    /// Nothing to do, found before anything else could be (exit 0): what is done already.
    #[error("{0}")]
    AlreadyDone(String),
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
