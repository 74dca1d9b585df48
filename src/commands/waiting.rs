//! What `ready --wait` shows while it waits. On a terminal: a spinner per Cluster that is not
//! ready yet, short enough for 80 columns (`ns/name 2/3 Machines with a node — machine-node`),
//! with each new blocker printed in full above the spinners, never cut; a Cluster that becomes
//! ready stops spinning and is printed once. Elsewhere (a pipe, a log): one plain line per
//! state change. Ctrl-C leaves no spinner behind.

use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::output::Printer;
use crate::ready::evaluate::{ClusterReport, Report};

pub struct Waiting {
    /// Spinners on a terminal: one per Cluster (by position in the report), `None` once ready.
    spinners: Option<(MultiProgress, Vec<Option<ProgressBar>>)>,
    /// Plain lines off a terminal (not for `-o json|yaml`).
    lines: bool,
    /// What was last said per Cluster, to say only what changed.
    said: Vec<String>,
    printer: Printer,
}

impl Waiting {
    pub fn new(printer: &Printer, report: &Report, lines: bool) -> Waiting {
        Waiting::drawing_to(printer, report, lines, printer.progress_target())
    }

    pub fn drawing_to(
        printer: &Printer,
        report: &Report,
        lines: bool,
        target: ProgressDrawTarget,
    ) -> Waiting {
        let spinners = printer.progress().then(|| {
            let progress = MultiProgress::with_draw_target(target);
            let style =
                ProgressStyle::with_template("{spinner} {prefix} {msg}").expect("valid template");
            let bars = report
                .clusters
                .iter()
                .map(|c| {
                    let bar = progress.add(
                        ProgressBar::new_spinner()
                            .with_style(style.clone())
                            .with_prefix(format!("{}/{}", c.namespace, c.name)),
                    );
                    bar.enable_steady_tick(Duration::from_millis(120));
                    Some(bar)
                })
                .collect();
            (progress, bars)
        });
        Waiting {
            spinners,
            lines,
            said: vec![String::new(); report.clusters.len()],
            printer: printer.clone(),
        }
    }

    /// Shows a new evaluation.
    pub fn update(&mut self, report: &Report) {
        for (index, cluster) in report.clusters.iter().enumerate() {
            let full = full_line(cluster);
            let changed = self.said.get(index) != Some(&full);
            if changed && let Some(said) = self.said.get_mut(index) {
                said.clone_from(&full);
            }
            match &mut self.spinners {
                Some((progress, bars)) => {
                    let Some(slot) = bars.get_mut(index) else {
                        continue;
                    };
                    if changed {
                        // Above the spinners, whole: the terminal wraps it, nothing cuts it.
                        let _ = progress.println(&full);
                    }
                    match (cluster.ready, slot.take()) {
                        (true, Some(bar)) => {
                            bar.finish_and_clear();
                            progress.remove(&bar);
                        }
                        (false, Some(bar)) => {
                            bar.set_message(short_message(cluster));
                            *slot = Some(bar);
                        }
                        (_, None) => {}
                    }
                }
                None if self.lines && changed => self.printer.info(&full),
                None => {}
            }
        }
    }

    /// The wait is over (done, timed out or interrupted): no spinner stays on screen.
    pub fn finish(&mut self) {
        if let Some((progress, bars)) = &mut self.spinners {
            for bar in bars.iter_mut().filter_map(Option::take) {
                bar.finish_and_clear();
            }
            let _ = progress.clear();
        }
    }
}

/// A Cluster's state in full: `ns/name: 2/3 Machines with a node, not ready: <first blocker>`.
pub fn full_line(c: &ClusterReport) -> String {
    let verdict = match c.reason() {
        _ if c.ready => "ready to move".to_string(),
        Some(reason) => format!("not ready: {reason}"),
        None => "not ready".to_string(),
    };
    format!(
        "{}/{}: {}/{} Machines with a node, {verdict}",
        c.namespace, c.name, c.machines.with_node, c.machines.total
    )
}

/// A spinner's message: the counts and which check blocks (its full message is printed above).
fn short_message(c: &ClusterReport) -> String {
    let blocker = c
        .checks
        .iter()
        .find(|check| check.status == crate::ready::evaluate::CheckStatus::Fail)
        .map_or("", |check| check.check.as_str());
    format!(
        "{}/{} Machines with a node — waiting: {blocker}",
        c.machines.with_node, c.machines.total
    )
}

#[cfg(test)]
mod tests {
    use indicatif::InMemoryTerm;

    use super::*;
    use crate::model::ObjectRef;
    use crate::ready::evaluate::{Check, CheckId, CheckStatus, MachineCount};
    use crate::settings::OutputFormat;

    fn cluster(name: &str, with_node: usize, blocker: Option<&str>) -> ClusterReport {
        let checks = blocker
            .map(|message| Check {
                check: CheckId::MachineNode,
                status: CheckStatus::Fail,
                object: ObjectRef {
                    api_version: "cluster.x-k8s.io/v1beta2".into(),
                    kind: "Machine".into(),
                    namespace: "default".into(),
                    name: "m".into(),
                },
                message: message.to_string(),
            })
            .into_iter()
            .collect();
        ClusterReport {
            namespace: "default".into(),
            name: name.into(),
            ready: blocker.is_none(),
            machines: MachineCount {
                total: 3,
                with_node,
            },
            frozen: Vec::new(),
            checks,
            control_plane: None,
            workers: (0, 0),
            paused: false,
        }
    }

    fn report(clusters: Vec<ClusterReport>) -> Report {
        Report {
            api_version: "kubectl-capi/v1",
            kind: "ReadyReport",
            ready: clusters.iter().all(|c| c.ready),
            clusters,
        }
    }

    #[test]
    fn spinners_fit_80_columns_ready_ones_stop_and_none_stay_after_the_wait() {
        let long = "cannot start the move operation while \"cluster.x-k8s.io/v1beta2, Kind=Machine\" default/workload-with-a-long-name-md-0-x7k2p is still provisioning the node; wait for it with `kubectl capi ready workload-with-a-long-name -n default --wait --context prod`";
        let term = InMemoryTerm::new(30, 80);
        let printer = Printer::plain(OutputFormat::Table).drawing();
        let first = report(vec![
            cluster("a", 2, Some(long)),
            cluster("b", 2, Some(long)),
        ]);
        let mut waiting = Waiting::drawing_to(
            &printer,
            &first,
            true,
            ProgressDrawTarget::term_like(Box::new(term.clone())),
        );
        waiting.update(&first);
        let screen = term.contents();
        let spinners: Vec<&str> = screen
            .lines()
            .filter(|l| l.contains("— waiting:"))
            .collect();
        assert_eq!(spinners.len(), 2, "{screen}");
        assert!(spinners.iter().all(|l| l.chars().count() < 80), "{screen}");
        let unwrapped = |text: &str| text.split_whitespace().collect::<String>();
        assert!(
            unwrapped(&screen).contains(&unwrapped(&format!(
                "default/a: 2/3 Machines with a node, not ready: {long}"
            ))),
            "the full reason, wrapped but not cut: {screen}"
        );
        // b becomes ready: it stops spinning and is said once; a still waits.
        waiting.update(&report(vec![
            cluster("a", 2, Some(long)),
            cluster("b", 3, None),
        ]));
        let screen = term.contents();
        assert!(
            screen.contains("default/b: 3/3 Machines with a node, ready to move"),
            "{screen}"
        );
        let spinners: Vec<&str> = screen
            .lines()
            .filter(|l| l.contains("— waiting:"))
            .collect();
        assert_eq!(spinners.len(), 1, "{screen}");
        assert!(spinners[0].contains("default/a"), "{screen}");
        // Interrupted: no spinner stays.
        waiting.finish();
        let screen = term.contents();
        assert!(!screen.contains("— waiting:"), "{screen}");
    }
}
