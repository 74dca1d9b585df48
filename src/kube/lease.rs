//! One writer at a time: a `coordination.k8s.io/v1` Lease (`kube-system/kubectl-capi`) that every
//! command writing for a move takes in the cluster it writes to first, before its first write.
//!
//! Taking it is a `create` (a 409 means someone holds it). The holder renews it well within its
//! duration while the command runs and deletes it (by UID and resourceVersion) on every way out.
//! A Lease whose holder stopped renewing longer than its duration ago is abandoned (the process
//! was killed) and may be taken over — a patch conditional on the resourceVersion read, so two
//! commands cannot both take it over. A holder that cannot renew in time, or finds the Lease
//! taken, asks its writes to stop ([`Stop::lose`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Cluster, Stop};
use crate::error::{Error, Result};
use crate::names::{LEASE_HOLDER_ANNOTATION, LEASE_NAME, LEASE_NAMESPACE};

/// How long a holder may go without renewing before others may take the Lease over.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// Overrides [`DEFAULT_DURATION`] (whole seconds): tests that kill a holder wait out a short one.
pub const DURATION_ENV: &str = "KUBECTL_CAPI_LEASE_SECONDS";

/// Who holds the Lease, as people read it (the annotation [`LEASE_HOLDER_ANNOTATION`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub host: String,
    pub pid: u32,
    /// What it runs (`kubectl capi move -n ns1 --rollback`).
    pub command: String,
    /// When it took the Lease (RFC 3339).
    pub since: String,
}

impl Holder {
    /// This process, running `command`.
    pub fn this_process(command: &str) -> Holder {
        Holder {
            host: hostname::get()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "an unknown host".into()),
            pid: std::process::id(),
            command: command.to_string(),
            since: jiff::Timestamp::now()
                .round(jiff::Unit::Second)
                .map(|t| t.to_string())
                .unwrap_or_default(),
        }
    }

    fn describe(&self) -> String {
        format!(
            "`{}` (process {} on {}, since {})",
            self.command, self.pid, self.host, self.since
        )
    }
}

/// What a Lease found in the cluster says at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Its holder renewed it within its duration: it is writing.
    Live {
        holder: Option<Holder>,
        expires: jiff::Timestamp,
    },
    /// Its holder stopped renewing longer than its duration ago, or released it without deleting.
    Abandoned {
        holder: Option<Holder>,
        renewed: Option<jiff::Timestamp>,
    },
}

/// Judges a Lease at `now` (pure).
pub fn judge(lease: &Lease, now: jiff::Timestamp) -> Found {
    let holder = lease
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(LEASE_HOLDER_ANNOTATION))
        .and_then(|text| serde_json::from_str::<Holder>(text).ok());
    let spec = lease.spec.clone().unwrap_or_default();
    let renewed = spec.renew_time.or(spec.acquire_time).map(|MicroTime(t)| t);
    let held = spec.holder_identity.is_some_and(|h| !h.is_empty());
    let duration =
        jiff::SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(0).max(0)));
    match renewed.map(|r| r + duration) {
        Some(expires) if held && expires > now => Found::Live { holder, expires },
        _ => Found::Abandoned { holder, renewed },
    }
}

/// The refusal for a command that finds the Lease held by a live holder.
pub fn refusal(url: &str, holder: Option<&Holder>, expires: jiff::Timestamp) -> String {
    let who = holder.map_or_else(
        || "another command (its holder annotation is missing)".to_string(),
        |h| format!("another kubectl-capi command, {}", h.describe()),
    );
    format!(
        "{who} holds the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {url}: only one command at a time may write for a move there; wait until it ends and run this command again (if that process is gone, its lease expires at {} and may be taken over then)",
        expires.round(jiff::Unit::Second).unwrap_or(expires)
    )
}

/// A Lease this process holds; renewed in the background until [`Held::release`].
pub struct Held {
    cluster: Cluster,
    uid: String,
    identity: String,
    /// The resourceVersion of the last write of the Lease by this process.
    version: Arc<Mutex<String>>,
    renewer: tokio::task::JoinHandle<()>,
    stop: Stop,
    /// Set when the Lease was taken over from an abandoned holder: what to tell the user.
    pub took_over: Option<String>,
}

/// How long leases last for this process.
pub fn duration() -> Duration {
    std::env::var(DURATION_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map_or(DEFAULT_DURATION, Duration::from_secs)
}

fn leases(cluster: &Cluster) -> Api<Lease> {
    Api::namespaced(cluster.client.clone(), LEASE_NAMESPACE)
}

fn micro_now() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

/// An error about the lease that says what it is for and which permissions it needs.
fn forbidden_hint(cluster: &Cluster, e: kube::Error, doing: &str) -> Error {
    let context = format!(
        "{doing} the lease {LEASE_NAMESPACE}/{LEASE_NAME} (one command at a time writes for a move; it needs get, create, patch and delete on leases.coordination.k8s.io in {LEASE_NAMESPACE})"
    );
    match e {
        kube::Error::Api(status) if status.code == 403 => Error::Forbidden {
            message: format!("{context}: {}", status.message),
        },
        other => cluster.api_error(other, &context),
    }
}

/// Reads the Lease without taking it: `Err(Refused)` when a live holder has it. For commands
/// that only check (a server-side dry run).
pub async fn ensure_free(cluster: &Cluster) -> Result<()> {
    let found = leases(cluster)
        .get_opt(LEASE_NAME)
        .await
        .map_err(|e| forbidden_hint(cluster, e, "reading"))?;
    match found.map(|l| judge(&l, jiff::Timestamp::now())) {
        Some(Found::Live { holder, expires }) => Err(Error::Refused(vec![refusal(
            &cluster.url,
            holder.as_ref(),
            expires,
        )])),
        _ => Ok(()),
    }
}

/// Takes the Lease of `cluster` for `command`, before this command's first write there; `stop`
/// hears of its loss. A live holder refuses it (`Err(Refused)`, naming the holder).
pub async fn take(cluster: &Cluster, command: &str, stop: &Stop) -> Result<Held> {
    let duration = duration();
    let holder = Holder::this_process(command);
    let identity = format!(
        "{}/{}/{:x}",
        holder.host,
        holder.pid,
        jiff::Timestamp::now().as_nanosecond()
    );
    let holder_text = serde_json::to_string(&holder).expect("a holder serialises");
    let seconds = i32::try_from(duration.as_secs()).unwrap_or(i32::MAX);
    let api = leases(cluster);
    let fresh = Lease {
        metadata: ObjectMeta {
            name: Some(LEASE_NAME.into()),
            namespace: Some(LEASE_NAMESPACE.into()),
            labels: Some([("app.kubernetes.io/managed-by".into(), "kubectl-capi".into())].into()),
            annotations: Some([(LEASE_HOLDER_ANNOTATION.into(), holder_text.clone())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(identity.clone()),
            lease_duration_seconds: Some(seconds),
            acquire_time: Some(micro_now()),
            renew_time: Some(micro_now()),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        }),
    };
    // Created, or (409) found: ours (a create retried after a lost answer), live, or abandoned.
    let (lease, took_over) = match api.create(&PostParams::default(), &fresh).await {
        Ok(lease) => (lease, None),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let found = api
                .get_opt(LEASE_NAME)
                .await
                .map_err(|e| forbidden_hint(cluster, e, "reading"))?;
            let Some(found) = found else {
                // Released between the create and the read: the next command may try again.
                return Err(Error::Refused(vec![format!(
                    "the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} changed hands while this command took it; run it again",
                    cluster.url
                )]));
            };
            let ours = found
                .spec
                .as_ref()
                .and_then(|s| s.holder_identity.as_deref())
                == Some(identity.as_str());
            match judge(&found, jiff::Timestamp::now()) {
                _ if ours => (found, None),
                Found::Live { holder, expires } => {
                    return Err(Error::Refused(vec![refusal(
                        &cluster.url,
                        holder.as_ref(),
                        expires,
                    )]));
                }
                Found::Abandoned { holder, renewed } => {
                    let this = (identity.as_str(), holder_text.as_str(), seconds);
                    take_over(cluster, &found, (holder, renewed), this).await?
                }
            }
        }
        Err(e) => return Err(forbidden_hint(cluster, e, "taking")),
    };
    let uid = lease.metadata.uid.clone().unwrap_or_default();
    let version = Arc::new(Mutex::new(
        lease.metadata.resource_version.clone().unwrap_or_default(),
    ));
    let renewer = tokio::spawn(renew(
        cluster.clone(),
        identity.clone(),
        version.clone(),
        duration,
        stop.clone(),
    ));
    Ok(Held {
        cluster: cluster.clone(),
        uid,
        identity,
        version,
        renewer,
        stop: stop.clone(),
        took_over,
    })
}

/// Takes over a lease whose holder stopped renewing it for longer than its duration, with a
/// resourceVersion-conditioned patch: of two commands doing so at once, one gets it. Returns the
/// lease and the note that says whom it was taken from.
async fn take_over(
    cluster: &Cluster,
    found: &Lease,
    (holder, renewed): (Option<Holder>, Option<jiff::Timestamp>),
    (identity, holder_text, seconds): (&str, &str, i32),
) -> Result<(Lease, Option<String>)> {
    let api = leases(cluster);
    let transitions = found
        .spec
        .as_ref()
        .and_then(|s| s.lease_transitions)
        .unwrap_or(0);
    let takeover = json!({
        "metadata": {
            "resourceVersion": found.metadata.resource_version,
            "annotations": {LEASE_HOLDER_ANNOTATION: holder_text},
        },
        "spec": {
            "holderIdentity": identity,
            "leaseDurationSeconds": seconds,
            "acquireTime": micro_now(),
            "renewTime": micro_now(),
            "leaseTransitions": transitions + 1,
        },
    });
    let taken = api
            .patch(LEASE_NAME, &PatchParams::default(), &Patch::Merge(&takeover))
            .await
            .map_err(|e| match e {
                kube::Error::Api(s) if s.code == 409 || s.code == 404 => {
                    Error::Refused(vec![format!(
                        "another command took the abandoned lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} at the same moment as this one; run this command again to see who holds it",
                        cluster.url
                    )])
                }
                other => forbidden_hint(cluster, other, "taking over"),
            })?;
    let who = holder.map_or_else(
        || "a holder that left no annotation".to_string(),
        |h| h.describe(),
    );
    let when = renewed.map_or_else(|| "never".to_string(), |t| t.to_string());
    Ok((
        taken,
        Some(format!(
            "took over the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} from {who}: it was last renewed at {when}, longer ago than its duration",
            cluster.url
        )),
    ))
}

/// Renews the Lease every quarter of its duration. A renewal that finds the Lease changed
/// (another holder took it over, or someone deleted it) loses it at once; one that cannot reach
/// the server keeps trying until the duration since the last renewal has passed, then loses it.
async fn renew(
    cluster: Cluster,
    identity: String,
    version: Arc<Mutex<String>>,
    duration: Duration,
    stop: Stop,
) {
    let api = leases(&cluster);
    let mut renewed = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(duration / 4).await;
        let current = version.lock().expect("not poisoned").clone();
        let patch = json!({
            "metadata": {"resourceVersion": current},
            "spec": {"holderIdentity": identity, "renewTime": micro_now()},
        });
        let attempt = tokio::time::timeout(
            duration / 4,
            api.patch(LEASE_NAME, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await;
        match attempt {
            Ok(Ok(lease)) => {
                *version.lock().expect("not poisoned") =
                    lease.metadata.resource_version.unwrap_or_default();
                renewed = tokio::time::Instant::now();
            }
            Ok(Err(kube::Error::Api(s))) if s.code == 409 || s.code == 404 => {
                // A renewal applied whose answer was lost is resent with the old
                // resourceVersion and conflicts: the Lease read again tells whether it is still
                // this process's.
                if s.code == 409
                    && let Ok(Some(lease)) = api.get_opt(LEASE_NAME).await
                    && lease
                        .spec
                        .as_ref()
                        .and_then(|spec| spec.holder_identity.as_deref())
                        == Some(identity.as_str())
                {
                    *version.lock().expect("not poisoned") =
                        lease.metadata.resource_version.unwrap_or_default();
                    continue;
                }
                stop.lose(format!(
                    "lost the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {}: another command took it over or removed it while this one ran (it may have judged this one gone); stopped writing",
                    cluster.url
                ));
                return;
            }
            _ if renewed.elapsed() >= duration => {
                stop.lose(format!(
                    "could not renew the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} for {}s, so another command may take it over; stopped writing",
                    cluster.url,
                    duration.as_secs()
                ));
                return;
            }
            _ => {}
        }
    }
}

impl Held {
    /// The stop its loss requests.
    pub fn stop(&self) -> &Stop {
        &self.stop
    }

    /// Gives the Lease up: stops renewing and deletes it — only as this process last wrote it
    /// (UID and resourceVersion as preconditions), never one another command took over. A
    /// release that fails leaves a Lease that expires after its duration.
    pub async fn release(self) {
        self.renewer.abort();
        let _ = self.renewer.await;
        if self.stop.lost().is_some() {
            return;
        }
        let api = leases(&self.cluster);
        for _ in 0..2 {
            let version = self.version.lock().expect("not poisoned").clone();
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(self.uid.clone()),
                    resource_version: Some(version),
                }),
                ..DeleteParams::default()
            };
            match api.delete(LEASE_NAME, &params).await {
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    // A renewal aborted after the server applied it: read the Lease again and
                    // delete it if it is still ours.
                    let Ok(Some(lease)) = api.get_opt(LEASE_NAME).await else {
                        return;
                    };
                    let ours = lease
                        .spec
                        .as_ref()
                        .and_then(|s| s.holder_identity.as_deref())
                        == Some(self.identity.as_str());
                    if !ours {
                        return;
                    }
                    *self.version.lock().expect("not poisoned") =
                        lease.metadata.resource_version.unwrap_or_default();
                }
                _ => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: Option<&str>, renewed_seconds_ago: i64, duration: i32) -> Lease {
        let now: jiff::Timestamp = NOW.parse().unwrap();
        Lease {
            metadata: ObjectMeta {
                annotations: Some(
                    [(
                        LEASE_HOLDER_ANNOTATION.to_string(),
                        serde_json::to_string(&Holder::this_process("kubectl capi move")).unwrap(),
                    )]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_string),
                lease_duration_seconds: Some(duration),
                renew_time: Some(MicroTime(
                    now - jiff::SignedDuration::from_secs(renewed_seconds_ago),
                )),
                ..LeaseSpec::default()
            }),
        }
    }

    const NOW: &str = "2026-12-04T10:00:00Z";

    #[test]
    fn a_lease_is_live_until_its_duration_has_passed_since_its_renewal() {
        let now: jiff::Timestamp = NOW.parse().unwrap();
        assert!(matches!(
            judge(&lease(Some("h/1/a"), 10, 60), now),
            Found::Live { holder: Some(h), .. } if h.command == "kubectl capi move"
        ));
        assert!(matches!(
            judge(&lease(Some("h/1/a"), 61, 60), now),
            Found::Abandoned { .. }
        ));
        assert!(
            matches!(judge(&lease(None, 0, 60), now), Found::Abandoned { .. }),
            "no holder: released"
        );
        assert!(
            matches!(
                judge(&lease(Some("h/1/a"), 0, 0), now),
                Found::Abandoned { .. }
            ),
            "no duration: nothing to wait for"
        );
    }

    #[test]
    fn the_refusal_names_the_holder_and_when_the_lease_expires() {
        let holder = Holder {
            host: "ops-1".into(),
            pid: 4242,
            command: "kubectl capi move -n ns1 --to-context b".into(),
            since: "2026-12-04T10:00:00Z".into(),
        };
        let expires: jiff::Timestamp = "2026-12-04T10:05:00Z".parse().unwrap();
        let text = refusal("https://a", Some(&holder), expires);
        for part in [
            "`kubectl capi move -n ns1 --to-context b`",
            "process 4242 on ops-1",
            "since 2026-12-04T10:00:00Z",
            "kube-system/kubectl-capi",
            "https://a",
            "expires at 2026-12-04T10:05:00Z",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
    }

    #[test]
    fn micro_times_serialise_as_a_real_server_expects() {
        let text = serde_json::to_value(MicroTime(
            "2026-12-04T10:00:00.5Z".parse::<jiff::Timestamp>().unwrap(),
        ))
        .unwrap();
        assert_eq!(text, "2026-12-04T10:00:00.500000Z");
    }
}
