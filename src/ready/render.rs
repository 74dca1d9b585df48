//! What `ready` prints: a table (kubectl-like), wide, per-check details, json/yaml, names.

use super::evaluate::{CheckStatus, ClusterReport, Report};
use crate::output::table::table;
use crate::output::{Printer, Render};

fn ready_word(printer: &Printer, ready: bool) -> String {
    printer.status_word(if ready { "True" } else { "False" }, ready)
}

fn frozen_column(cluster: &ClusterReport) -> String {
    if cluster.frozen.is_empty() {
        return "-".into();
    }
    let unacknowledged = cluster
        .frozen
        .iter()
        .filter(|f| f.acknowledged != Some(true))
        .count();
    if unacknowledged == 0 {
        cluster.frozen.len().to_string()
    } else {
        format!("{} ({unacknowledged} unacknowledged)", cluster.frozen.len())
    }
}

pub fn table_text(report: &Report, printer: &Printer, wide: bool) -> String {
    let mut headers = vec!["NAMESPACE", "NAME", "READY", "MACHINES", "FROZEN"];
    if wide {
        headers.extend(["CONTROL-PLANE", "WORKERS", "PAUSED", "WARNINGS"]);
    }
    headers.push("REASON");
    let rows = report
        .clusters
        .iter()
        .map(|c| {
            let mut row = vec![
                c.namespace.clone(),
                c.name.clone(),
                ready_word(printer, c.ready),
                format!("{}/{}", c.machines.with_node, c.machines.total),
                frozen_column(c),
            ];
            if wide {
                row.push(
                    c.control_plane
                        .map(|(ready, desired)| format!("{ready}/{desired}"))
                        .unwrap_or_else(|| "-".into()),
                );
                row.push(format!("{}/{}", c.workers.0, c.workers.1));
                row.push(c.paused.to_string());
                row.push(c.warnings().to_string());
            }
            row.push(c.reason().unwrap_or("-").to_string());
            row
        })
        .collect();
    table(&headers, rows)
}

fn status_word(printer: &Printer, status: CheckStatus) -> String {
    match status {
        CheckStatus::Pass => printer.status_word("pass", true),
        CheckStatus::Fail => printer.status_word("fail", false),
        other => other.word().to_string(),
    }
}

/// Every check of every cluster, grouped by cluster.
pub fn details_text(report: &Report, printer: &Printer) -> String {
    let mut out = String::new();
    for (i, cluster) in report.clusters.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let verdict = if cluster.ready {
            "ready to move"
        } else {
            "not ready to move"
        };
        out.push_str(&format!(
            "Cluster {}/{}: {verdict} ({}/{} Machines with a node)\n",
            cluster.namespace, cluster.name, cluster.machines.with_node, cluster.machines.total
        ));
        let rows = cluster
            .checks
            .iter()
            .map(|c| {
                vec![
                    c.check.to_string(),
                    status_word(printer, c.status),
                    c.object.kubectl_name(),
                    c.message.clone(),
                ]
            })
            .collect();
        out.push_str(&table(&["CHECK", "STATUS", "OBJECT", "MESSAGE"], rows));
        for frozen in &cluster.frozen {
            let ack = match frozen.acknowledged {
                Some(true) => "acknowledged",
                Some(false) => "not acknowledged yet",
                None => "not acknowledged: controller does not report Paused",
            };
            let by = if frozen.by_kubectl_capi {
                "by kubectl capi"
            } else {
                "not by kubectl capi"
            };
            out.push_str(&format!(
                "Frozen: {} ({ack}, {by})\n",
                frozen.object.kubectl_name()
            ));
        }
    }
    out
}

pub fn names_text(report: &Report) -> String {
    report
        .clusters
        .iter()
        .filter(|c| c.ready)
        .map(|c| format!("cluster.{}/{}\n", crate::names::CORE_GROUP, c.name))
        .collect()
}

/// One evaluation as `ready` shows it: a line per Cluster, or every check of each with
/// `details` (one Cluster asked for, or `--details`).
pub struct Readiness<'a> {
    pub report: &'a Report,
    pub details: bool,
}

impl serde::Serialize for Readiness<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.report.serialize(serializer)
    }
}

impl Render for Readiness<'_> {
    fn table(&self, printer: &Printer) -> String {
        if self.details {
            details_text(self.report, printer)
        } else {
            table_text(self.report, printer, false)
        }
    }

    fn wide(&self, printer: &Printer) -> String {
        if self.details {
            details_text(self.report, printer)
        } else {
            table_text(self.report, printer, true)
        }
    }

    fn names(&self, _: &Printer) -> String {
        names_text(self.report)
    }
}
