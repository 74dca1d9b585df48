//! What came back instead of an answer (none in time, not Kubernetes', a write kept back for
//! want of the lease), and forbidden reads collected into one refusal.

use super::message::{Error, Result};

/// An attempt that got no answer within the request timeout (the retry layer carries it in a
/// `kube::Error::Service`, so that the user's message can name the timeout).
#[derive(Debug, thiserror::Error)]
#[error("no answer within {} ({attempts} attempt(s))", crate::durations::show_duration(*.timeout))]
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
