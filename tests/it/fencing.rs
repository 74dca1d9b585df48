//! The sandbox's fencing check, as the plugin meets it: every write names the lease holder it
//! was sent under, and the server notes who held its Lease when it applied the write.

use crate::move_world::{Fixture, KillPoint, MOVE_NS1, World, kill_at};

/// Every write a move applies names the lease holder it was sent under, and that is who held the
/// cluster's Lease when the server applied it (the sandbox's fencing check): a move, and a
/// rollback after it, in both clusters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_is_applied_under_the_lease_its_sender_holds() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let rollback = [&MOVE_NS1[..], &["--rollback"]].concat();
    assert!(kill_at(&w, &MOVE_NS1, KillPoint::Writes(12)).await);
    crate::common::expire_lease(&w.source).await;
    crate::common::expire_lease(&w.target).await;
    let out = w.plugin(&rollback).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut holders = std::collections::BTreeSet::new();
    for server in [&w.source, &w.target] {
        let named: Vec<capi_sandbox::FencedWrite> = server
            .fenced_writes()
            .into_iter()
            .filter(|w| w.agent.starts_with(crate::common::PLUGIN_AGENT))
            .collect();
        let applied = server
            .mutations()
            .into_iter()
            .filter(|r| {
                r.agent.starts_with(crate::common::PLUGIN_AGENT) && !crate::common::is_lease(r)
            })
            .count();
        assert!(applied > 0);
        assert_eq!(named.len(), applied, "the check saw every write");
        // `host/pid/…`: one identity per process and cluster.
        holders.extend(named.iter().map(|w| {
            let named = w.named.clone().unwrap_or_default();
            named.split('/').nth(1).unwrap_or_default().to_string()
        }));
        let unfenced = crate::common::unfenced_writes(server);
        assert!(unfenced.is_empty(), "{unfenced:#?}");
    }
    assert_eq!(
        holders.len(),
        2,
        "the move's and the rollback's: {holders:?}"
    );
}
