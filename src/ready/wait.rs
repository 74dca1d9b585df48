//! `ready --wait`: re-evaluate on every change of every kind read, until ready.

use std::time::Duration;

use super::evaluate::{Options, Report, evaluate};
use crate::error::Result;
use crate::kube::{Catalog, Cluster};
use crate::snapshot::Fetch;
use crate::snapshot::watch::{Waited, until};

pub enum Outcome {
    Ready(Report),
    TimedOut(Report),
    /// A Cluster whose frozen control plane can never become ready: waiting ends at once.
    Stuck(Report, Vec<(crate::model::ObjectRef, String)>),
}

/// Watches until the evaluation says ready or `timeout` passes; `on_change` sees every new report.
pub async fn wait(
    log: Option<crate::output::Log>,
    cluster: &Cluster,

    catalog: &Catalog,
    fetch: &Fetch,
    options: &Options,
    timeout: Duration,
    mut on_change: impl FnMut(&Report),
) -> Result<Outcome> {
    let mut last: Option<String> = None;
    let waited = until(log, cluster, catalog, fetch, timeout, |snapshot| {
        let report = evaluate(snapshot, options);
        let fingerprint = serde_json::to_string(&report).unwrap_or_default();
        if last.as_deref() != Some(&fingerprint) {
            on_change(&report);
            last = Some(fingerprint);
        }
        let stuck = if report.ready {
            Vec::new()
        } else {
            crate::freeze::plan::stuck_while_frozen(snapshot, &options.clusters)
        };
        (report.ready || !stuck.is_empty(), (report, stuck))
    })
    .await?;
    Ok(match waited {
        Waited::Done((report, stuck)) if !stuck.is_empty() => Outcome::Stuck(report, stuck),
        Waited::Done((report, _)) => Outcome::Ready(report),
        Waited::TimedOut((report, _)) => Outcome::TimedOut(report),
    })
}
