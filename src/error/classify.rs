//! A kube error classified for the user: an API server's error answer, or what went wrong on
//! the way to it (TLS, plain HTTP, a timeout, no route), judged by the types in its chain.

use super::answers::{ForeignAnswer, NOT_A_STATUS, NoAnswer, NotHeld};
use super::message::Error;
use super::server::{Server, TlsFault};

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
            return Error::from_status(status, server, context);
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
            let timeout = crate::durations::show_duration(*timeout);
            return Error::Timeout {
                server: server.clone(),
                after: match attempts {
                    1 => format!("within {timeout}"),
                    n => format!("within {timeout}, {n} times"),
                },
            };
        }
        Error::from_transport(&error, server, context)
    }

    /// What an API server's error answer (`status`) means, doing `context`.
    fn from_status(status: &kube::core::Status, server: &Server, context: &str) -> Error {
        match status.code {
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
            _ if status.reason == NOT_A_STATUS => Error::NotKubernetes {
                server: server.clone(),
                answer: format!("{} while {context}", status.message),
            },
            _ => Error::Api {
                context: context.to_string(),
                message: status.message.clone(),
            },
        }
    }

    /// What went wrong on the way to `server` (TLS, plain HTTP, a timeout, no route), named by
    /// the deepest cause; anything else is an error doing `context`.
    fn from_transport(error: &kube::Error, server: &Server, context: &str) -> Error {
        let messages: Vec<String> = sources(error).iter().map(|e| e.to_string()).collect();
        let deepest = messages.last().cloned().unwrap_or_default();
        let kind = match error {
            // Building the client's TLS: what the kubeconfig user presents is not usable.
            kube::Error::RustlsTls(
                kube::client::RustlsTlsError::InvalidIdentityPem(_)
                | kube::client::RustlsTlsError::MissingPrivateKey
                | kube::client::RustlsTlsError::MissingCertificate
                | kube::client::RustlsTlsError::InvalidPrivateKey(_)
                | kube::client::RustlsTlsError::UnknownPrivateKeyFormat,
            ) => Some(Transport::Tls(TlsFault::ClientIdentity)),
            _ => transport(error).or_else(|| {
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
    use crate::error::{End, yaml_problem};

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
