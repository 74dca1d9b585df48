//! The fencing check: every write a kubectl-capi command applies names the lease holder it was
//! sent under (`kubectl-capi-lease-holder`); the server notes, under the same lock that applied
//! the write, who held its Lease `kube-system/kubectl-capi` at that moment. A write whose sender
//! did not hold the lease then is a write a stale or overtaken process should never have made.

use http::HeaderMap;
use serde_json::Value;

use crate::apiserver::store::State;

/// The header a guarded write names its holder in.
pub const HOLDER_HEADER: &str = "kubectl-capi-lease-holder";

/// One applied write, as the fencing check sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FencedWrite {
    pub verb: String,
    /// What it wrote: `plural/namespace/name` (a collection without the name).
    pub path: String,
    /// The client's User-Agent.
    pub agent: String,
    /// The holder the write named, if any.
    pub named: Option<String>,
    /// The Lease's `holderIdentity` when the write was applied (`None`: no Lease).
    pub lease_holder: Option<String>,
}

impl FencedWrite {
    /// Sent under the lease that was held when it was applied.
    pub fn fenced(&self) -> bool {
        self.named.is_some() && self.named == self.lease_holder
    }
}

/// What the check notes of an applied write (`state` still locked by the write, so the Lease
/// read is the one it was applied under). Dry runs and the Lease's own writes are not noted.
pub(in crate::apiserver) fn note(
    state: &State,
    headers: &HeaderMap,
    (verb, group, path): (&str, &str, String),
    dry_run: bool,
) -> Option<FencedWrite> {
    if dry_run || group == "coordination.k8s.io" {
        return None;
    }
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let lease = state.get(
        &("coordination.k8s.io".to_string(), "leases".to_string()),
        &("kube-system".to_string(), "kubectl-capi".to_string()),
    );
    Some(FencedWrite {
        verb: verb.to_string(),
        path,
        agent: text(http::header::USER_AGENT.as_str()).unwrap_or_default(),
        named: text(HOLDER_HEADER),
        lease_holder: lease.and_then(|l| holder_identity(&l)),
    })
}

fn holder_identity(lease: &Value) -> Option<String> {
    lease["spec"]["holderIdentity"].as_str().map(str::to_string)
}
