//! The leases of every cluster a command writes to, taken in one order and given back together.

use super::found::Tell;
use super::held::{Held, take};
use crate::error::Result;
use crate::kube::connect::Cluster;
use crate::kube::stop::Stop;

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
