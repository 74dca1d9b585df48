//! Errors users see: one line that names the problem and the fix.

use std::path::PathBuf;

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

/// Which management cluster a connection reaches, as messages name it: its role when a command
/// talks to two, and the flags that choose its context and gave its kubeconfig.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct End {
    /// `source` or `target` when a command talks to two management clusters.
    pub role: Option<&'static str>,
    pub context_flag: &'static str,
    pub kubeconfig_flag: &'static str,
}

impl Default for End {
    fn default() -> Self {
        End {
            role: None,
            context_flag: "--context",
            kubeconfig_flag: "--kubeconfig",
        }
    }
}

impl End {
    /// A move's or a verification's target, chosen by `--to-context`/`--to-kubeconfig`.
    /// A workload cluster of the source as the target (`--to-cluster`).
    pub const MOVE_WORKLOAD: End = End {
        role: Some("target"),
        context_flag: "--to-cluster",
        kubeconfig_flag: "--to-cluster",
    };
    pub const MOVE_TARGET: End = End {
        role: Some("target"),
        context_flag: "--to-context",
        kubeconfig_flag: "--to-kubeconfig",
    };
    /// Where `verify` finds what was left behind: `--from-context`/`--from-kubeconfig`.
    pub const VERIFY_SOURCE: End = End {
        role: Some("source"),
        context_flag: "--from-context",
        kubeconfig_flag: "--from-kubeconfig",
    };

    /// The flags a user changes to choose another cluster here: `--context/--kubeconfig`.
    pub fn choose(&self) -> String {
        if self.context_flag == self.kubeconfig_flag {
            return self.context_flag.to_string();
        }
        format!("{}/{}", self.context_flag, self.kubeconfig_flag)
    }

    /// This end in the role `role`, chosen by the same flags.
    pub fn as_role(self, role: &'static str) -> End {
        End {
            role: Some(role),
            ..self
        }
    }
}

/// An API server as messages name it: by its role when the command talks to two management
/// clusters ("the target (https://…)"), and always by its URL.
#[derive(Debug, Clone)]
pub struct Server {
    pub url: String,
    pub end: End,
    /// Where a kubeconfig read from a cluster came from ("the kubeconfig in Secret default/w1-…
    /// of the source"): a message about the server names it, as the place to fix.
    pub via: Option<std::sync::Arc<str>>,
}

impl Server {
    /// The name that starts a sentence about what the server is: "the target (URL)", or the URL.
    pub fn short(&self) -> String {
        match self.end.role {
            Some(role) => format!("the {role} ({}{})", self.url, self.through()),
            None if self.via.is_some() => format!("{} ({})", self.url, self.through()),
            None => self.url.clone(),
        }
    }

    /// `, through the kubeconfig in Secret …` for a kubeconfig read from a cluster.
    fn through(&self) -> String {
        self.via
            .as_ref()
            .map(|via| format!(", through {via}"))
            .unwrap_or_default()
    }
}

impl std::fmt::Display for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.end.role {
            Some(role) => write!(f, "the {role} ({}{})", self.url, self.through()),
            None => write!(f, "the API server at {}{}", self.url, self.through()),
        }
    }
}

/// An attempt that got no answer within the request timeout (the retry layer carries it in a
/// `kube::Error::Service`, so that the user's message can name the timeout).
#[derive(Debug, thiserror::Error)]
#[error("no answer within {} ({attempts} attempt(s))", crate::cli::show_duration(*.timeout))]
pub struct NoAnswer {
    pub timeout: std::time::Duration,
    pub attempts: u32,
}

/// A successful answer that is not Kubernetes's (an HTML page, plain text): what a web server,
/// a proxy's login page or another service answers in place of a Kubernetes API server. The
/// retry layer carries it in a `kube::Error::Service`, as it carries [`NoAnswer`].
#[derive(Debug, thiserror::Error)]
#[error("answered {status} {content_type}")]
pub struct ForeignAnswer {
    /// The status line: `200 OK`.
    pub status: String,
    pub content_type: String,
}

/// A write the write gate kept back ([`crate::kube::gate`]): this process cannot prove it holds
/// the cluster's lease. Never retried.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotHeld(pub String);

/// The marker kube puts on a failure whose body was not a Kubernetes Status.
pub const NOT_A_STATUS: &str = "Failed to parse error data";

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

/// Whose side of a TLS handshake failed, so the message offers the fix that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFault {
    /// The server's certificate is not proved by the kubeconfig's CA.
    ServerCertificate,
    /// The server refused the client certificate the kubeconfig user presented.
    ClientCertificate,
    /// The kubeconfig user's client certificate or key could not be read.
    ClientIdentity,
    /// Anything else in the handshake.
    Other,
}

impl TlsFault {
    fn fix(self, server: &Server) -> String {
        match (self, &server.via) {
            (TlsFault::ServerCertificate, Some(via)) => format!(
                "the certificate-authority-data of the kubeconfig in {via} does not prove this server; fix that kubeconfig (--insecure-skip-tls-verify never applies to one read from a cluster)"
            ),
            (TlsFault::ServerCertificate, None) => "check the kubeconfig's certificate-authority or, for a test cluster, pass --insecure-skip-tls-verify".into(),
            (TlsFault::ClientIdentity, _) => "the kubeconfig user's client-certificate-data and client-key-data are not a usable certificate and private key (PEM, the key PKCS#8, PKCS#1 or SEC1); fix them".into(),
            (TlsFault::ClientCertificate, _) => "the server refused the kubeconfig user's client certificate: check its client-certificate-data and client-key-data (a certificate this cluster's CA issued, with its own key)".into(),
            (TlsFault::Other, _) => "check the kubeconfig's server address and that it serves the Kubernetes API over TLS".into(),
        }
    }
}

/// What went wrong below HTTP, judged by the types in the chain (deepest first), never by
/// message text.
#[derive(Debug, PartialEq, Eq)]
enum Transport {
    /// The TLS handshake got a plain HTTP answer: the server does not speak TLS.
    PlainHttp,
    /// A plain HTTP request got an answer that is not HTTP (a TLS alert, say).
    NotHttp,
    Tls(TlsFault),
    Timeout,
    Unreachable,
}

fn transport(error: &(dyn std::error::Error + 'static)) -> Option<Transport> {
    sources(error).into_iter().rev().find_map(|e| {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(match tls {
                rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => {
                    Transport::PlainHttp
                }
                rustls::Error::InvalidCertificate(_) => Transport::Tls(TlsFault::ServerCertificate),
                // The server's alert about what this client presented.
                rustls::Error::AlertReceived(
                    rustls::AlertDescription::DecryptError
                    | rustls::AlertDescription::BadCertificate
                    | rustls::AlertDescription::UnknownCA
                    | rustls::AlertDescription::CertificateRequired
                    | rustls::AlertDescription::CertificateUnknown
                    | rustls::AlertDescription::UnsupportedCertificate
                    | rustls::AlertDescription::CertificateExpired
                    | rustls::AlertDescription::AccessDenied,
                ) => Transport::Tls(TlsFault::ClientCertificate),
                _ => Transport::Tls(TlsFault::Other),
            });
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
            if hyper.is_parse() {
                return Some(Transport::NotHttp);
            }
            if hyper.is_incomplete_message() || hyper.is_closed() {
                return Some(Transport::Unreachable);
            }
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
    /// Classifies a kube error for the user: what went wrong talking to `server`, doing
    /// `context`.
    pub fn from_kube(error: kube::Error, server: &Server, context: &str) -> Error {
        let not_kubernetes = |answer: String| Error::NotKubernetes {
            server: server.clone(),
            answer: format!("{answer} while {context}"),
        };
        if let kube::Error::Api(status) = &error {
            return match status.code {
                401 => Error::Unauthorized {
                    server: server.clone(),
                },
                403 => Error::Forbidden {
                    message: status.message.clone(),
                },
                // The retry layer put the answer's status and type in place of its body.
                // A failure a retry did not cure, in a body a server's error pages have.
                500.. if status.reason == NOT_A_STATUS => Error::ServerFailing {
                    server: server.clone(),
                    answer: format!("{} while {context}", status.message),
                },
                _ if status.reason == NOT_A_STATUS => not_kubernetes(status.message.clone()),
                _ => Error::Api {
                    context: context.to_string(),
                    message: status.message.clone(),
                },
            };
        }
        if let kube::Error::SerdeError(_) = &error {
            return not_kubernetes("JSON that is not a Kubernetes object".into());
        }
        if let Some(foreign) = sources(&error)
            .into_iter()
            .find_map(|e| e.downcast_ref::<ForeignAnswer>())
        {
            return not_kubernetes(format!("{} {}", foreign.status, foreign.content_type));
        }
        if let Some(NotHeld(why)) = sources(&error).into_iter().find_map(|e| e.downcast_ref()) {
            return Error::LeaseLost(why.clone());
        }
        if let Some(NoAnswer { timeout, attempts }) =
            sources(&error).into_iter().find_map(|e| e.downcast_ref())
        {
            let timeout = crate::cli::show_duration(*timeout);
            return Error::Timeout {
                server: server.clone(),
                after: match attempts {
                    1 => format!("within {timeout}"),
                    n => format!("within {timeout}, {n} times"),
                },
            };
        }
        let messages: Vec<String> = sources(&error).iter().map(|e| e.to_string()).collect();
        let deepest = messages.last().cloned().unwrap_or_default();
        let kind = match &error {
            // Building the client's TLS: what the kubeconfig user presents is not usable.
            kube::Error::RustlsTls(
                kube::client::RustlsTlsError::InvalidIdentityPem(_)
                | kube::client::RustlsTlsError::MissingPrivateKey
                | kube::client::RustlsTlsError::MissingCertificate
                | kube::client::RustlsTlsError::InvalidPrivateKey(_)
                | kube::client::RustlsTlsError::UnknownPrivateKeyFormat,
            ) => Some(Transport::Tls(TlsFault::ClientIdentity)),
            _ => transport(&error).or_else(|| {
                matches!(error, kube::Error::RustlsTls(_))
                    .then_some(Transport::Tls(TlsFault::Other))
            }),
        };
        match kind {
            Some(Transport::PlainHttp) => Error::PlainHttp {
                server: server.clone(),
                http_url: server.url.replacen("https://", "http://", 1),
            },
            Some(Transport::NotHttp) if server.url.starts_with("http://") => Error::NotPlainHttp {
                server: server.clone(),
                https_url: server.url.replacen("http://", "https://", 1),
            },
            Some(Transport::NotHttp) => Error::Unreachable {
                server: server.clone(),
                reason: format!("its answer was not HTTP ({deepest})"),
            },
            Some(Transport::Tls(fault)) => Error::Tls {
                server: server.clone(),
                reason: deepest,
                fault,
            },
            Some(Transport::Timeout) => Error::Timeout {
                server: server.clone(),
                after: "in time (the connection timed out)".to_string(),
            },
            Some(Transport::Unreachable) => Error::Unreachable {
                server: server.clone(),
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
        let server = Server {
            via: None,
            url: "https://k".into(),
            end: End::MOVE_TARGET,
        };
        let classify = |e| Error::from_kube(e, &server, "reading");
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
        // A TLS handshake answered in plain HTTP.
        let plain = std::io::Error::other(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert_eq!(
            classify(service(plain)).to_string(),
            "the target (https://k) speaks plain HTTP, not HTTPS; write the kubeconfig's server as http://k (or choose another cluster with --to-context/--to-kubeconfig)"
        );
    }

    #[test]
    fn answers_that_are_not_kubernetes_are_named_never_printed() {
        let server = Server {
            via: None,
            url: "https://k".into(),
            end: End::default(),
        };
        let page = service(ForeignAnswer {
            status: "200 OK".into(),
            content_type: "text/html".into(),
        });
        assert_eq!(
            Error::from_kube(page, &server, "reading namespace kube-system").to_string(),
            "https://k is not a Kubernetes API server (it answered 200 OK text/html while reading namespace kube-system); check --context/--kubeconfig, or the kubeconfig's server address"
        );
        let failure = kube::Error::Api(
            kube::core::Status::failure("502 Bad Gateway text/html", NOT_A_STATUS)
                .with_code(502)
                .boxed(),
        );
        let said = Error::from_kube(failure, &server, "listing clusters").to_string();
        assert!(
            said.contains("answered 502 Bad Gateway text/html while listing clusters, also when asked again; the server (or a proxy in front of it) is failing"),
            "a failure a retry did not cure: {said}"
        );
        let missing = kube::Error::Api(
            kube::core::Status::failure("404 Not Found text/plain", NOT_A_STATUS)
                .with_code(404)
                .boxed(),
        );
        let said = Error::from_kube(missing, &server, "listing clusters").to_string();
        assert!(
            said.contains("is not a Kubernetes API server (it answered 404 Not Found text/plain while listing clusters)"),
            "{said}"
        );
    }
}
