//! What a move reports: its plan (a table, the ownership tree with `-o wide`, or a document) and
//! its summary, rendered for the printer.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::model::ObjectRef;
use crate::mover::addressing::kind_key;
use crate::mover::graph::plan::{Excluded, MovePlan, TreeNode};
use crate::mover::journal::{Journal, Stage};
use crate::mover::request::{MoveRequest, scope_flags};
use crate::output::table::table;
use crate::output::{Printer, Render};

/// What a finished move reports: the Clusters, what it created, deleted and left, and where
/// its time went.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub clusters: Vec<ObjectRef>,
    /// Objects created in the target, per `Kind.group`.
    pub created: BTreeMap<String, usize>,
    pub deleted: usize,
    /// Objects the move meant to delete but found replaced by another of the same name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    pub kept_in_source: usize,
    pub excluded: Vec<Excluded>,
    /// Objects frozen by `kubectl capi pause` that stay frozen in the target.
    pub frozen_in_target: Vec<ObjectRef>,
    pub seconds: f64,
    /// Where the time went.
    pub phases: Phases,
    /// Verification records that could not be left in the target (warnings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_recorded: Vec<String>,
    /// The moved Clusters as the source had them, for `--verify`.
    #[serde(skip)]
    pub moved: Vec<crate::verify::MovedCluster>,
    /// What `--verify` found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<crate::verify::VerificationReport>,
}

impl Summary {
    /// The summary of a move finished from its `journal` alone (an interrupted move that
    /// already deleted from the source): what it records, with what its finish `skipped` and
    /// could `not_recorded`, in `seconds`.
    pub fn of_journal(
        journal: &Journal,
        skipped: Vec<Skipped>,
        not_recorded: Vec<String>,
        seconds: f64,
    ) -> Summary {
        let mut created: BTreeMap<String, usize> = BTreeMap::new();
        for entry in &journal.entries {
            *created
                .entry(kind_key(&entry.object.kind, entry.object.group()))
                .or_default() += 1;
        }
        Summary {
            api_version: crate::names::OUTPUT_API_VERSION,
            kind: "MoveSummary",
            clusters: journal
                .entries
                .iter()
                .filter(|e| e.object.is_core_cluster())
                .map(|e| e.object.clone())
                .collect(),
            created,
            deleted: journal.entries.iter().filter(|e| e.deleted).count(),
            skipped,
            kept_in_source: journal.entries.iter().filter(|e| e.kept_in_source).count(),
            excluded: Vec::new(),
            frozen_in_target: Vec::new(),
            seconds,
            phases: Default::default(),
            not_recorded,
            moved: journal.moved.clone(),
            verification: None,
        }
    }
}

/// Seconds spent in each step of a move.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Phases {
    /// From the start of the command to the first write: connecting, reading, planning and the
    /// preflight's checks (access reviews, dry runs).
    pub preflight: f64,
    /// Pausing the source, waiting for block-move, reading the paused objects.
    pub pause: f64,
    pub create: f64,
    pub delete: f64,
    pub unpause: f64,
}

/// An object a move left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    pub object: ObjectRef,
    pub reason: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanGroup {
    group: usize,
    objects: Vec<PlannedObject>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedObject {
    #[serde(flatten)]
    object: ObjectRef,
    kept_in_source: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReport<'p> {
    #[serde(skip)]
    plan: &'p MovePlan,
    api_version: &'static str,
    kind: &'static str,
    clusters: Vec<ObjectRef>,
    groups: Vec<PlanGroup>,
    excluded: Vec<Excluded>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    preflight_failures: Vec<String>,
}

pub fn plan_report<'p>(
    plan: &'p MovePlan,
    clusters: &[ObjectRef],
    failures: Vec<String>,
) -> PlanReport<'p> {
    PlanReport {
        plan,
        api_version: crate::names::OUTPUT_API_VERSION,
        kind: "MovePlan",
        clusters: clusters.to_vec(),
        groups: plan
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let mut objects: Vec<PlannedObject> = g
                    .iter()
                    .map(|uid| PlannedObject {
                        object: plan.node(uid).reference.clone(),
                        kept_in_source: plan.kept_in_source.contains(uid),
                    })
                    .collect();
                objects.sort_by(|a, b| a.object.cmp(&b.object));
                PlanGroup {
                    group: i + 1,
                    objects,
                }
            })
            .collect(),
        excluded: plan.excluded.clone(),
        preflight_failures: failures,
    }
}

/// Draws the ownership forest: one root line per Cluster (and per shared root), owned objects
/// indented beneath with box-drawing guides.
fn tree_text(forest: &[TreeNode]) -> String {
    fn draw(node: &TreeNode, prefix: &str, last: bool, out: &mut String) {
        let (branch, next) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        push_line(node, &format!("{prefix}{branch}"), out);
        let child_prefix = format!("{prefix}{next}");
        for (i, child) in node.children.iter().enumerate() {
            draw(child, &child_prefix, i + 1 == node.children.len(), out);
        }
    }
    fn push_line(node: &TreeNode, lead: &str, out: &mut String) {
        let kept = if node.kept_in_source {
            "  (copied, kept in source)"
        } else {
            ""
        };
        out.push_str(&format!("{lead}{}{kept}\n", node.object.kubectl_name()));
    }
    let mut out = String::new();
    for root in forest {
        let namespace = if root.object.namespace.is_empty() {
            String::new()
        } else {
            format!("  (namespace {})", root.object.namespace)
        };
        out.push_str(&format!(
            "\n{}{namespace}{}\n",
            root.object.kubectl_name(),
            if root.kept_in_source {
                "  (copied, kept in source)"
            } else {
                ""
            }
        ));
        for (i, child) in root.children.iter().enumerate() {
            draw(child, "", i + 1 == root.children.len(), &mut out);
        }
    }
    out
}

pub fn plan_text(report: &PlanReport, tree: Option<&[TreeNode]>) -> String {
    let total: usize = report.groups.iter().map(|g| g.objects.len()).sum();
    let mut out = format!(
        "Move plan: {} Cluster(s), {total} objects in {} groups\n",
        report.clusters.len(),
        report.groups.len()
    );
    let rows = report
        .groups
        .iter()
        .map(|g| {
            let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
            for o in &g.objects {
                *kinds.entry(o.object.kind.as_str()).or_default() += 1;
            }
            let kinds = kinds
                .iter()
                .map(|(k, n)| {
                    if *n > 1 {
                        format!("{k}×{n}")
                    } else {
                        k.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            vec![g.group.to_string(), g.objects.len().to_string(), kinds]
        })
        .collect();
    out.push_str(&table(&["GROUP", "OBJECTS", "KINDS"], rows));
    if let Some(forest) = tree {
        out.push_str(&tree_text(forest));
        out.push('\n');
    }
    let kept: Vec<&PlannedObject> = report
        .groups
        .iter()
        .flat_map(|g| &g.objects)
        .filter(|o| o.kept_in_source)
        .collect();
    if !kept.is_empty() {
        out.push_str(&format!(
            "Copied, kept in source: {}\n",
            kept.iter()
                .map(|o| o.object.kubectl_name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for e in &report.excluded {
        out.push_str(&format!(
            "Not moved: {} — {}\n",
            e.object.kubectl_name(),
            e.reason
        ));
    }
    out
}

/// `" (the move it records finished at T)"`, for messages about a finished record.
pub fn finished_note(finished: Option<&Journal>) -> String {
    finished
        .map(|j| {
            format!(
                " (the move it records {} at {})",
                if j.stage == Stage::RolledBack {
                    "was rolled back"
                } else {
                    "finished"
                },
                j.finished_at.as_deref().unwrap_or("an unknown time")
            )
        })
        .unwrap_or_default()
}

/// Objects a move or rollback left alone because another object had taken their name.
pub fn warn_skipped(printer: &Printer, skipped: &[Skipped]) {
    for s in skipped {
        printer.warn(&format!("{}: {}", s.object.kubectl_name(), s.reason));
    }
}

impl Render for PlanReport<'_> {
    fn table(&self, _: &Printer) -> String {
        plan_text(self, None)
    }

    /// The plan with the ownership tree.
    fn wide(&self, _: &Printer) -> String {
        plan_text(self, Some(&self.plan.tree()))
    }
}

impl Render for Summary {
    /// A line for the move, one per Cluster.
    fn table(&self, _: &Printer) -> String {
        let created: usize = self.created.values().sum();
        let mut text = format!(
            "moved {} Cluster(s): {created} objects created in the target, {} deleted from the source, {} copied and kept in the source ({:.1}s)\n",
            self.clusters.len(),
            self.deleted,
            self.kept_in_source,
            self.seconds
        );
        for cluster in &self.clusters {
            text.push_str(&format!("{} moved\n", cluster.kubectl_name()));
        }
        text
    }
}

/// The move's summary: a document, or lines with warnings and notes on stderr.
pub fn print_summary(request: &MoveRequest, printer: &Printer, summary: &Summary) -> Result<()> {
    printer.report(summary)?;
    if !printer.documents() {
        warn_skipped(printer, &summary.skipped);
        for e in &summary.excluded {
            printer.warn(&format!(
                "not moved: {} — {}",
                e.object.kubectl_name(),
                e.reason
            ));
        }
    }
    for warning in &summary.not_recorded {
        printer.warn(warning);
    }
    if !summary.frozen_in_target.is_empty() && !request.freeze {
        let names: Vec<&str> = summary.clusters.iter().map(|c| c.name.as_str()).collect();
        let scope = scope_flags(&summary.clusters);
        // A note on stderr, with every output format: the next step stays visible.
        printer.note(&format!(
            "note: {} object(s) frozen by kubectl capi pause stay frozen in the target; release them with `kubectl capi resume {}{}{scope}`",
            summary.frozen_in_target.len(),
            names.join(" "),
            request
                .target
                .as_ref()
                .map(|target| target.as_flags())
                .unwrap_or_default(),
        ));
    }
    Ok(())
}
