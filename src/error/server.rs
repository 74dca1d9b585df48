//! Which cluster a message is about: its role, the flags that reach it and its address, and
//! whose side of a TLS handshake failed.

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
    pub(super) fn fix(self, server: &Server) -> String {
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
