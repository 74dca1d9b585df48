//! One writer at a time: a `coordination.k8s.io/v1` Lease (`kube-system/kubectl-capi`) that every
//! command writing for a move takes in every cluster it writes to, before its first write, and
//! holds to its end.
//!
//! Taken and kept as client-go's leader election does it, so that no clock but the holder's own
//! decides anything: a free Lease is created (or a released one taken, conditional on the
//! resourceVersion read). One held by another command is watched: if its record changes (its
//! holder renewed it) that command is alive and this one is refused, naming it; if it stays the
//! same for a whole duration as this command watches it, its holder is gone and it is taken
//! over — never by comparing another host's `renewTime` with the local clock. A holder on this
//! machine whose process is gone is taken over at once ([`Holder::gone_from_this_machine`]).
//!
//! The holder renews every twelfth of the duration and proves the Lease held only until its
//! renew deadline (two thirds of the duration) after its last successful renewal was *sent*,
//! measured on a clock that counts suspended time; past it, the Lease is lost for good and the
//! write gate ([`super::gate`]) lets no write of this command out — a third of the duration
//! before anyone may take it over.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;

use super::gate::{Guard, Stamp};
pub use super::holder::Holder;
use super::lease_timing::{duration, poll_interval, renew_deadline, renew_interval};
use super::{connect::Cluster, stop::Stop};
use crate::error::{Error, Result};
use crate::names::{
    FIELD_MANAGER, LEASE_GROUP, LEASE_HOLDER_ANNOTATION, LEASE_NAME, LEASE_NAMESPACE,
    LEASE_RENEWED_ANNOTATION, MANAGED_BY_LABEL,
};

/// Where a command says what it waits for while it watches a Lease another holds (the
/// printer's warning line): a wait is never silent.
pub type Tell<'a> = &'a dyn Fn(&str);

fn holder_of(lease: &Lease) -> Option<Holder> {
    lease
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(LEASE_HOLDER_ANNOTATION))
        .and_then(|text| serde_json::from_str::<Holder>(text).ok())
}

fn identity_of(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .filter(|h| !h.is_empty())
}

/// The duration its holder gave the Lease (this process's own when it gave none).
fn duration_of(lease: &Lease) -> Duration {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.lease_duration_seconds)
        .and_then(|s| u64::try_from(s).ok())
        .filter(|s| *s > 0)
        .map_or_else(duration, Duration::from_secs)
}

/// The refusal for a command that finds the Lease held by a live holder.
pub fn refusal(url: &str, holder: Option<&Holder>, duration: Duration) -> String {
    let who = holder.map_or_else(
        || "another command (its holder annotation is missing)".to_string(),
        |h| format!("another kubectl-capi command, {}", h.describe()),
    );
    format!(
        "{who} holds the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {url} and is renewing it: only one command at a time may write for a move there; wait until it ends and run this command again (should that process be gone, a command that finds its lease unrenewed for {}s takes it over)",
        duration.as_secs()
    )
}

/// The refusal for a command that finds `lease` of `cluster` held by a live holder.
fn refused_by(cluster: &Cluster, lease: &Lease) -> Error {
    Error::Refused(vec![refusal(
        &cluster.url,
        holder_of(lease).as_ref(),
        duration_of(lease),
    )])
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
        "{doing} the lease {LEASE_NAMESPACE}/{LEASE_NAME} (one command at a time writes for a move; it needs get, create, patch and delete on leases.{LEASE_GROUP} in {LEASE_NAMESPACE})"
    );
    match e {
        kube::Error::Api(status) if status.code == 403 => Error::Forbidden {
            message: format!("{context}: {}", status.message),
        },
        other => cluster.api_error(other, &context),
    }
}

async fn read(cluster: &Cluster) -> Result<Option<Lease>> {
    leases(cluster)
        .get_opt(LEASE_NAME)
        .await
        .map_err(|e| forbidden_hint(cluster, e, "reading"))
}

/// What watching a Lease held by another showed.
enum Watched {
    /// Its record changed (`None`: it was deleted): its holder is alive, or let it go.
    Changed(Option<Box<Lease>>),
    /// It stayed as it was for a whole duration: its holder is gone.
    Unchanged,
}

/// What a Lease found in the cluster means for a command that wants it.
enum Judged {
    /// Nobody holds it (deleted, or released without deleting).
    Free(Option<Lease>),
    /// Its holder is gone: it may be taken over (why, for the user).
    Abandoned(Lease, String),
    /// Its holder renews it.
    Live(Lease),
}

/// Judges `found` the only ways that need no other host's clock: released, its holder's process
/// gone from this machine, else watched until it changes or a whole duration passes.
async fn judge(cluster: &Cluster, found: Lease, tell: Tell<'_>) -> Result<Judged> {
    if identity_of(&found).is_none() {
        return Ok(Judged::Free(Some(found)));
    }
    let holder = holder_of(&found);
    let who = holder.as_ref().map_or_else(
        || "a holder that left no annotation".to_string(),
        Holder::describe,
    );
    if let Some(gone) = holder.as_ref().and_then(Holder::gone_from_this_machine) {
        wait_out_last_writes(&found, &who, tell).await;
        return Ok(Judged::Abandoned(
            found,
            format!("{who} held it, but {gone} on this machine"),
        ));
    }
    let duration = duration_of(&found);
    tell(&waiting_for(cluster, &found, &who, duration));
    match watch_unchanged(cluster, &found, duration).await? {
        Watched::Changed(None) => Ok(Judged::Free(None)),
        Watched::Changed(Some(now)) if identity_of(&now).is_none() => Ok(Judged::Free(Some(*now))),
        Watched::Changed(Some(now)) => Ok(Judged::Live(*now)),
        Watched::Unchanged => Ok(Judged::Abandoned(
            found,
            format!(
                "{who} held it, but it stayed unrenewed for {}s while this command watched it",
                duration.as_secs()
            ),
        )),
    }
}

/// A holder that ended on this machine may have sent writes just before: each could last until
/// its renew deadline (an attempt waits no longer, and tells the server so), counted from its
/// last renewal. That is waited out here before the lease is taken over.
async fn wait_out_last_writes(found: &Lease, who: &str, tell: Tell<'_>) {
    let left = last_writes_left(found, Stamp::now());
    if left.is_zero() {
        return;
    }
    tell(&format!(
        "the lease {LEASE_NAMESPACE}/{LEASE_NAME} was held by {who}, which ended on this machine; waiting {}s, until the last writes it may have sent are done, before taking it over",
        left.as_secs_f64().ceil()
    ));
    tokio::time::sleep(left).await;
}

/// How long a holder that ended on this machine may still have writes landing, at `now`:
/// counted on this machine's boot clock, which the holder recorded beside its last renewal
/// ([`LEASE_RENEWED_ANNOTATION`]) — never on the wall clock, which may have stepped since. A
/// holder that recorded none, or a stamp later than now, gets the whole deadline.
fn last_writes_left(found: &Lease, now: Stamp) -> Duration {
    let deadline = renew_deadline(duration_of(found));
    let renewed = found
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(LEASE_RENEWED_ANNOTATION))
        .and_then(|text| text.parse::<u64>().ok());
    match renewed {
        Some(renewed) if renewed <= now.millis() => {
            deadline.saturating_sub(Duration::from_millis(now.millis() - renewed))
        }
        _ => deadline,
    }
}

/// What a command says as it starts watching `found`: who holds it, when it was last renewed,
/// until when it waits, and how to see the Lease (with the user's own flags).
fn waiting_for(cluster: &Cluster, found: &Lease, who: &str, duration: Duration) -> String {
    let renewed = found
        .spec
        .as_ref()
        .and_then(|s| s.renew_time.as_ref())
        .map_or_else(|| "never".to_string(), |t| t.0.to_string());
    let until = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::try_from(duration).unwrap_or_default())
        .map_or_else(
            |_| "later".to_string(),
            |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        );
    // kubectl would run what a kubeconfig read from a Secret names: never handed to it.
    let see = match &cluster.flags {
        None => format!(
            "see it with kubectl get lease {LEASE_NAME} -n {LEASE_NAMESPACE} -o yaml and a kubeconfig for that cluster you trust"
        ),
        Some(flags) => format!(
            "see it with `kubectl get lease {LEASE_NAME} -n {LEASE_NAMESPACE} -o yaml{flags}`"
        ),
    };
    format!(
        "the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} is held by {who} (renewed {renewed}, for {}s); waiting until {until} to see whether it is renewed: a holder this machine cannot see is gone only once its lease stays unrenewed that long ({see})",
        cluster.url,
        duration.as_secs(),
    )
}

/// Reads `found` again every little while until its record changes or `duration` has passed
/// on this command's own clock.
async fn watch_unchanged(cluster: &Cluster, found: &Lease, duration: Duration) -> Result<Watched> {
    let since = Stamp::now();
    let seen = found.metadata.resource_version.clone();
    loop {
        tokio::time::sleep(poll_interval(duration)).await;
        let now = read(cluster).await?;
        match now {
            None => return Ok(Watched::Changed(None)),
            Some(lease) if lease.metadata.resource_version != seen => {
                return Ok(Watched::Changed(Some(Box::new(lease))));
            }
            Some(_) if since.elapsed() >= duration => return Ok(Watched::Unchanged),
            Some(_) => {}
        }
    }
}

/// Reads the Lease without taking it: `Err(Refused)` when a live holder has it. For commands
/// that only check (a server-side dry run).
pub async fn ensure_free(cluster: &Cluster, tell: Tell<'_>) -> Result<()> {
    let Some(found) = read(cluster).await? else {
        return Ok(());
    };
    match judge(cluster, found, tell).await? {
        Judged::Live(lease) => Err(refused_by(cluster, &lease)),
        Judged::Abandoned(_, why) => {
            tell(&format!(
                "the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {}: {why}; a move would take it over",
                cluster.url
            ));
            Ok(())
        }
        Judged::Free(_) => Ok(()),
    }
}

/// A Lease this process holds; renewed in the background until [`Held::release`].
pub struct Held {
    cluster: Cluster,
    uid: String,
    identity: String,
    /// The resourceVersion of the last write of the Lease by this process.
    version: Arc<Mutex<String>>,
    renewer: tokio::task::JoinHandle<()>,
    guard: Arc<Guard>,
    /// Set when the Lease was taken over from a gone holder: what to tell the user.
    pub took_over: Option<String>,
}

/// What this process writes into a Lease it takes.
struct Claim {
    identity: String,
    holder_text: String,
    seconds: i32,
}

impl Claim {
    fn new(command: &str, duration: Duration) -> Claim {
        let holder = Holder::this_process(command);
        Claim {
            identity: format!(
                "{}/{}/{:x}",
                holder.host,
                holder.pid,
                jiff::Timestamp::now().as_nanosecond()
            ),
            holder_text: serde_json::to_string(&holder).expect("a holder serialises"),
            seconds: i32::try_from(duration.as_secs()).unwrap_or(i32::MAX),
        }
    }

    fn fresh(&self, sent: Stamp) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(LEASE_NAME.into()),
                namespace: Some(LEASE_NAMESPACE.into()),
                labels: Some([(MANAGED_BY_LABEL.into(), FIELD_MANAGER.into())].into()),
                annotations: Some(
                    [
                        (LEASE_HOLDER_ANNOTATION.into(), self.holder_text.clone()),
                        (LEASE_RENEWED_ANNOTATION.into(), sent.millis().to_string()),
                    ]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                lease_duration_seconds: Some(self.seconds),
                acquire_time: Some(micro_now()),
                renew_time: Some(micro_now()),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        }
    }
}

/// Takes the Lease of `cluster` for `command`, before this command's first write there; `stop`
/// hears of its loss. A live holder refuses it (`Err(Refused)`, naming the holder).
pub async fn take(cluster: &Cluster, command: &str, stop: &Stop, tell: Tell<'_>) -> Result<Held> {
    let duration = duration();
    let claim = Claim::new(command, duration);
    let api = leases(cluster);
    for _ in 0..4 {
        let sent = Stamp::now();
        let found = match read(cluster).await? {
            None => match api.create(&PostParams::default(), &claim.fresh(sent)).await {
                Ok(lease) => return Ok(hold(cluster, lease, (sent, duration), stop, None)),
                // Someone created it between the read and the create: judge theirs.
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(forbidden_hint(cluster, e, "taking")),
            },
            Some(found) => found,
        };
        if identity_of(&found) == Some(claim.identity.as_str()) {
            // A create retried after its answer was lost.
            return Ok(hold(cluster, found, (sent, duration), stop, None));
        }
        let (found, note) = match judge(cluster, found, tell).await? {
            Judged::Live(lease) => {
                return Err(refused_by(cluster, &lease));
            }
            Judged::Free(None) => continue,
            Judged::Free(Some(lease)) => (lease, None),
            Judged::Abandoned(lease, why) => (lease, Some(why)),
        };
        let sent = Stamp::now();
        let lease = take_over(cluster, &found, &claim, sent).await?;
        let note = note.map(|why| {
            format!(
                "took over the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {}: {why}",
                cluster.url
            )
        });
        return Ok(hold(cluster, lease, (sent, duration), stop, note));
    }
    Err(Error::Refused(vec![format!(
        "the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} kept changing hands while this command took it; run it again",
        cluster.url
    )]))
}

/// Takes a free or abandoned Lease with a resourceVersion-conditioned patch: of two commands
/// doing so at once, one gets it.
async fn take_over(cluster: &Cluster, found: &Lease, claim: &Claim, sent: Stamp) -> Result<Lease> {
    let transitions = found
        .spec
        .as_ref()
        .and_then(|s| s.lease_transitions)
        .unwrap_or(0);
    let takeover = json!({
        "metadata": {
            "resourceVersion": found.metadata.resource_version,
            "annotations": {
                LEASE_HOLDER_ANNOTATION: claim.holder_text,
                LEASE_RENEWED_ANNOTATION: sent.millis().to_string(),
            },
        },
        "spec": {
            "holderIdentity": claim.identity,
            "leaseDurationSeconds": claim.seconds,
            "acquireTime": micro_now(),
            "renewTime": micro_now(),
            "leaseTransitions": transitions + 1,
        },
    });
    let sent = leases(cluster)
        .patch(
            LEASE_NAME,
            &PatchParams::default(),
            &Patch::Merge(&takeover),
        )
        .await;
    let error = match sent {
        Ok(lease) => return Ok(lease),
        Err(kube::Error::Api(s)) if s.code == 403 => {
            return Err(forbidden_hint(cluster, kube::Error::Api(s), "taking over"));
        }
        Err(e) => e,
    };
    // A conflict, or no answer: the takeover may have been applied and its answer lost (a
    // retry then conflicts with it). The Lease read again tells whose it is.
    match read(cluster).await? {
        Some(lease) if identity_of(&lease) == Some(claim.identity.as_str()) => Ok(lease),
        Some(lease) if matches!(&error, kube::Error::Api(s) if s.code == 409) => {
            Err(refused_by(cluster, &lease))
        }
        None if matches!(&error, kube::Error::Api(s) if s.code == 404) => {
            Err(Error::Refused(vec![format!(
                "the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} was removed while this command took it over; run this command again",
                cluster.url
            )]))
        }
        _ => Err(forbidden_hint(cluster, error, "taking over")),
    }
}

/// The Lease as taken (its request sent at `sent`): guarded writes open, renewed from now on.
fn hold(
    cluster: &Cluster,
    lease: Lease,
    (sent, duration): (Stamp, Duration),
    stop: &Stop,
    took_over: Option<String>,
) -> Held {
    let identity = identity_of(&lease).unwrap_or_default().to_string();
    let guard = Guard::new(
        (&cluster.url, &identity),
        sent,
        renew_deadline(duration),
        stop,
    );
    cluster.gate.hold(guard.clone());
    let version = Arc::new(Mutex::new(
        lease.metadata.resource_version.clone().unwrap_or_default(),
    ));
    let renewer = tokio::spawn(renew(
        cluster.clone(),
        identity.clone(),
        version.clone(),
        duration,
        guard.clone(),
    ));
    Held {
        cluster: cluster.clone(),
        uid: lease.metadata.uid.clone().unwrap_or_default(),
        identity,
        version,
        renewer,
        guard,
        took_over,
    }
}

/// Renews the Lease every [`renew_interval`], each renewal conditional on the resourceVersion of
/// the last; the guard counts from when the last successful one was sent. A renewal that finds
/// the Lease changed (taken over, or removed) loses it at once, naming who has it; past the
/// renew deadline without a successful renewal it is lost, and never renewed again.
async fn renew(
    cluster: Cluster,
    identity: String,
    version: Arc<Mutex<String>>,
    duration: Duration,
    guard: Arc<Guard>,
) {
    let api = leases(&cluster);
    loop {
        tokio::time::sleep(renew_interval(duration)).await;
        if guard.check().is_err() {
            return;
        }
        let current = version.lock().expect("not poisoned").clone();
        let sent = Stamp::now();
        let patch = json!({
            "metadata": {"resourceVersion": current,
                "annotations": {LEASE_RENEWED_ANNOTATION: sent.millis().to_string()}},
            "spec": {"holderIdentity": identity, "renewTime": micro_now()},
        });
        let left = guard.deadline().saturating_sub(guard.age());
        let attempt = tokio::time::timeout(
            left,
            api.patch(LEASE_NAME, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await;
        match attempt {
            Ok(Ok(lease)) => {
                *version.lock().expect("not poisoned") =
                    lease.metadata.resource_version.unwrap_or_default();
                guard.renewed(sent);
            }
            Ok(Err(kube::Error::Api(s))) if s.code == 409 || s.code == 404 => {
                // A renewal applied whose answer was lost is resent with the old
                // resourceVersion and conflicts: the Lease read again tells whether it is still
                // this process's.
                let now = match api.get_opt(LEASE_NAME).await {
                    Ok(now) => now,
                    Err(e) => {
                        // Not known to be lost, but no longer provable: stop all the same.
                        guard.lose(format!(
                            "lost the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} at {}: a renewal conflicted and reading the lease back failed ({}), so this command cannot prove it still holds it; this command stopped writing",
                            cluster.url,
                            super::gate::now(),
                            Error::from_kube(e, &cluster.server(), "reading the lease")
                        ));
                        return;
                    }
                };
                match &now {
                    Some(lease) if identity_of(lease) == Some(identity.as_str()) => {
                        *version.lock().expect("not poisoned") =
                            lease.metadata.resource_version.clone().unwrap_or_default();
                    }
                    _ => {
                        guard.lose(lost_to(&cluster, now.as_ref()));
                        return;
                    }
                }
            }
            // Not answered: tried again until the deadline, which the guard watches.
            _ => {}
        }
    }
}

/// Why a holder lost its Lease to whoever has it now (`None`: someone removed it).
fn lost_to(cluster: &Cluster, now: Option<&Lease>) -> String {
    let to = match now {
        Some(lease) => holder_of(lease).map_or_else(
            || "another command (its holder annotation is missing)".to_string(),
            |h| h.describe(),
        ),
        None => "nobody: someone removed it".to_string(),
    };
    format!(
        "lost the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} to {to} at {}; this command stopped writing",
        cluster.url,
        super::gate::now()
    )
}

impl Held {
    /// Gives the Lease up: stops renewing and deletes it — only as this process last wrote it
    /// (UID and resourceVersion as preconditions), never one another command took over. A
    /// release that fails leaves a Lease that others take over once it stays unrenewed.
    pub async fn release(self) {
        self.renewer.abort();
        let _ = self.renewer.await;
        self.cluster.gate.release();
        if self.guard.check().is_err() {
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
                    if identity_of(&lease) != Some(self.identity.as_str()) {
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

/// The leases a command holds — one per cluster it writes to, taken in the order of the
/// clusters' `kube-system` UIDs so that two commands never each hold one and want the other's —
/// and the stop their loss requests.
pub struct Leases {
    held: Vec<Held>,
    stop: Stop,
}

impl Leases {
    /// Takes the lease of each of `clusters` (with their `kube-system` UIDs) for `command`, in
    /// UID order; a refusal gives back those already taken.
    pub async fn take(
        clusters: &[(&Cluster, &str)],
        command: &str,
        tell: Tell<'_>,
    ) -> Result<Leases> {
        let stop = Stop::default();
        let mut ordered: Vec<&(&Cluster, &str)> = clusters.iter().collect();
        ordered.sort_by_key(|(_, uid)| *uid);
        let mut leases = Leases {
            held: Vec::new(),
            stop: stop.clone(),
        };
        for (cluster, _) in ordered {
            match take(cluster, command, &stop, tell).await {
                Ok(held) => leases.held.push(held),
                Err(e) => {
                    leases.release().await;
                    return Err(e);
                }
            }
        }
        Ok(leases)
    }

    /// One lease already taken.
    pub fn one(held: Held) -> Leases {
        let stop = held.guard.stop();
        Leases {
            held: vec![held],
            stop,
        }
    }

    /// The stop their loss requests.
    pub fn stop(&self) -> &Stop {
        &self.stop
    }

    /// What to tell the user of leases taken over from gone holders.
    pub fn notes(&self) -> impl Iterator<Item = &str> {
        self.held.iter().filter_map(|h| h.took_over.as_deref())
    }

    pub async fn release(self) {
        for held in self.held.into_iter().rev() {
            held.release().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_holder_and_how_a_gone_one_is_taken_over() {
        let holder = Holder {
            host: "ops-1".into(),
            pid: 4242,
            command: "kubectl capi move -n ns1 --to-context b".into(),
            since: "2026-12-04T10:00:00Z".into(),
            boot_id: None,
            pid_namespace: None,
            start_time: None,
        };
        let text = refusal("https://a", Some(&holder), Duration::from_secs(60));
        for part in [
            "`kubectl capi move -n ns1 --to-context b`",
            "process 4242 on ops-1",
            "since 2026-12-04T10:00:00Z",
            "kube-system/kubectl-capi",
            "https://a",
            "unrenewed for 60s takes it over",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
    }

    #[tokio::test]
    async fn a_wait_hints_kubectl_only_with_a_kubeconfig_of_the_users_own() {
        let service = tower::service_fn(|_: http::Request<kube::client::Body>| async {
            Err::<http::Response<kube::client::Body>, std::io::Error>(std::io::Error::other("none"))
        });
        let mut cluster = Cluster::from_client(kube::Client::new(service, "default"), "https://a");
        let lease = Lease::default();
        cluster.flags = Some(" --context mgmt".into());
        let own = waiting_for(&cluster, &lease, "someone", Duration::from_secs(60));
        assert!(
            own.contains("`kubectl get lease kubectl-capi -n kube-system -o yaml --context mgmt`"),
            "{own}"
        );
        // Read from a Secret: kubectl would run what that kubeconfig names.
        cluster.flags = None;
        let secrets = waiting_for(&cluster, &lease, "someone", Duration::from_secs(60));
        assert!(!secrets.contains('`'), "no command to paste: {secrets}");
        assert!(
            secrets.contains("a kubeconfig for that cluster you trust"),
            "{secrets}"
        );
    }

    #[test]
    fn the_holder_stops_writing_well_before_anyone_may_take_over() {
        let duration = Duration::from_secs(60);
        assert_eq!(renew_deadline(duration), Duration::from_secs(40));
        assert!(renew_interval(duration) * 4 < renew_deadline(duration));
        assert!(poll_interval(duration) < renew_interval(duration));
    }

    #[test]
    fn a_dead_holders_last_writes_are_counted_on_the_boot_clock_not_the_wall_clock() {
        let lease = |renewed: Option<&str>, renew_time: &str| Lease {
            metadata: ObjectMeta {
                annotations: renewed
                    .map(|r| [(LEASE_RENEWED_ANNOTATION.to_string(), r.to_string())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                lease_duration_seconds: Some(60),
                renew_time: Some(MicroTime(renew_time.parse().unwrap())),
                ..LeaseSpec::default()
            }),
        };
        let now = Stamp::from_millis(1_000_000);
        // Renewed 10 s ago on this boot: 30 s of its 40 s deadline left, whatever the wall
        // clock says it wrote (a year ahead, or long ago: the clock stepped since).
        for wall in ["2027-12-07T00:00:00Z", "2000-01-01T00:00:00Z"] {
            let left = last_writes_left(&lease(Some("990000"), wall), now);
            assert_eq!(left, Duration::from_secs(30), "{wall}");
        }
        assert_eq!(
            last_writes_left(&lease(Some("0"), "2000-01-01T00:00:00Z"), now),
            Duration::ZERO
        );
        for unproven in [None, Some("later"), Some("2000000")] {
            assert_eq!(
                last_writes_left(&lease(unproven, "2000-01-01T00:00:00Z"), now),
                Duration::from_secs(40),
                "{unproven:?}: the whole deadline"
            );
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
