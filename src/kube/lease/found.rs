//! A Lease another command holds, judged without any other host's clock: released, its holder
//! gone from this machine, or watched until it changes or a whole duration passes.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;

use super::record::{duration_of, holder_of, identity_of, read, refused_by};
use crate::error::Result;
use crate::kube::connect::Cluster;
use crate::kube::gate::Stamp;
use crate::kube::holder::Holder;
use crate::kube::lease_timing::{poll_interval, renew_deadline};
use crate::names::{LEASE_NAME, LEASE_NAMESPACE, LEASE_RENEWED_ANNOTATION};

/// Where a command says what it waits for while it watches a Lease another holds (the
/// printer's warning line): a wait is never silent.
pub type Tell<'a> = &'a dyn Fn(&str);

/// What watching a Lease held by another showed.
enum Watched {
    /// Its record changed (`None`: it was deleted): its holder is alive, or let it go.
    Changed(Option<Box<Lease>>),
    /// It stayed as it was for a whole duration: its holder is gone.
    Unchanged,
}

/// What a Lease found in the cluster means for a command that wants it.
pub(super) enum Judged {
    /// Nobody holds it (deleted, or released without deleting).
    Free(Option<Lease>),
    /// Its holder is gone: it may be taken over (why, for the user).
    Abandoned(Lease, String),
    /// Its holder renews it.
    Live(Lease),
}

/// Judges `found` the only ways that need no other host's clock: released, its holder's process
/// gone from this machine, else watched until it changes or a whole duration passes.
pub(super) async fn judge(cluster: &Cluster, found: Lease, tell: Tell<'_>) -> Result<Judged> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::lease_timing::renew_interval;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};

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
}
