//! How the simulated controllers behave: how long each provisioning step takes (`Delays`) and
//! what else a management cluster's controllers are configured with (`Config`).

use std::time::Duration;

use crate::crds::Dialect;

/// How long each provisioning step takes (jittered ±20 %, deterministic given the seed).
#[derive(Debug, Clone, Copy)]
pub struct Delays {
    pub infrastructure_cluster: Duration,
    pub bootstrap: Duration,
    pub infrastructure: Duration,
    pub node: Duration,
    /// How long an infrastructure cluster takes to finish pausing before it drops block-move.
    pub block_move_release: Duration,
}

impl Delays {
    /// Human-scale delays for `capi-sandbox up` and the demo.
    pub fn seconds() -> Delays {
        Delays {
            infrastructure_cluster: Duration::from_secs(2),
            bootstrap: Duration::from_secs(1),
            infrastructure: Duration::from_secs(2),
            node: Duration::from_secs(2),
            block_move_release: Duration::from_secs(1),
        }
    }

    /// Every step takes about `ms` milliseconds (tests).
    pub fn millis(ms: u64) -> Delays {
        let d = Duration::from_millis(ms);
        Delays {
            infrastructure_cluster: d,
            bootstrap: d,
            infrastructure: d,
            node: d,
            block_move_release: d,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub dialect: Dialect,
    pub delays: Delays,
    pub seed: u64,
    /// Infrastructure clusters carry `block-move` until they see their Cluster paused.
    pub block_move: bool,
    /// How long a node must stay unhealthy before a MachineHealthCheck marks its Machine.
    pub health_check_timeout: Duration,
    /// The kubeconfig (as text) a workload cluster's `NAME-kubeconfig` Secret holds in `value`,
    /// by Cluster name: an API server that plays that workload cluster (a self-hosted pivot).
    /// Clusters not named here get certificates only, as before.
    pub kubeconfigs: std::collections::BTreeMap<String, String>,
}

impl Config {
    pub fn new(dialect: Dialect, delays: Delays) -> Config {
        Config {
            dialect,
            delays,
            seed: 7,
            block_move: false,
            health_check_timeout: delays.node * 3,
            kubeconfigs: std::collections::BTreeMap::new(),
        }
    }
}
