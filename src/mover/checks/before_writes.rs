//! Every check before the first write: the preflight (and for a dry run, the plan it passed);
//! with `--freeze`, the checks the freeze does not change, before it writes.

use std::collections::BTreeSet;

use crate::cli::DryRun;
use crate::error::{Error, Result};
use crate::kube::OnCtrlC;
use crate::mover::checks::findings::ThisMove;
use crate::mover::checks::preflight::preflight;
use crate::mover::report::{plan_report, rendered};
use crate::mover::steps::{Checked, History, Move, Planned, Step};
use crate::mover::write::namespaces::remove_namespaces;
use crate::output::ExitStatus;

impl Move<'_> {
    /// The unfinished moves that paused Clusters of `snapshot`: from the journal copies in the
    /// source, and in the target — where a move the other way finds the one whose paused copies
    /// it would move back, with the commands that continue and undo it in this user's flags.
    async fn unfinished_moves(
        &self,
        snapshot: &crate::snapshot::Snapshot,
        flags: &str,
    ) -> Result<Vec<crate::ready::evaluate::UnfinishedMove>> {
        let mut found =
            crate::mover::recovery::unfinished_moves(self.source(), snapshot, flags).await?;
        if let (Some(target), Some(connection)) = (&self.ends.target, &self.request.target) {
            found.extend(
                crate::mover::recovery::unfinished_moves(
                    &target.cluster,
                    snapshot,
                    &connection.as_flags(),
                )
                .await?,
            );
        }
        Ok(found)
    }

    /// What the preflight knows of this move beyond its plan, as every check of it starts.
    fn this_move<'b>(
        &'b self,
        flags: &'b str,
        unfinished: &'b [crate::ready::evaluate::UnfinishedMove],
        between: Option<&'b crate::verify::Between>,
    ) -> ThisMove<'b> {
        ThisMove {
            overwrite_existing: self.request.overwrite_existing,
            journal_namespace: self.records.as_ref().map(|r| r.copy_namespace.as_str()),
            flags,
            concurrency: self.request.concurrency,
            unfinished,
            earlier_copies: between.map(|b| (self.source(), b)),
            ..ThisMove::default()
        }
    }

    /// `--freeze`/`--wait-ready`: the checks that need no freeze, before freezing (read-only).
    /// `Some(status)` ends the command there: refused, or nothing to move.
    pub(in crate::mover) async fn check_before_freezing(&self) -> Result<Option<ExitStatus>> {
        let history = match self.history().await? {
            Step::Go(history) => history,
            Step::Stop(status) => return Ok(Some(status)),
        };
        // A resumed move checks itself as it goes on.
        if history.unfinished.is_some() {
            return Ok(None);
        }
        let planned = match self.plan(&history).await? {
            Step::Go(planned) => planned,
            Step::Stop(status) => return Ok(Some(status)),
        };
        let snapshot = crate::mover::graph::object_graph::snapshot_of(&planned.objects);
        if self.request.freeze {
            let forever = crate::freeze::plan::frozen_forever(&snapshot, &planned.clusters);
            if !forever.is_empty() {
                let reasons: Vec<String> = forever
                    .iter()
                    .map(|(cluster, why)| {
                        format!(
                            "{} not frozen: {why}; wait for it without the freeze (`kubectl capi ready {} -n {} --wait{}`), then move",
                            cluster.kubectl_name(),
                            crate::settings::shell_word(&cluster.name),
                            crate::settings::shell_word(&cluster.namespace),
                            self.request.source.as_flags()
                        )
                    })
                    .collect();
                self.printer.refused(
                    "move refused before freezing, nothing was written:",
                    &reasons,
                );
                return Ok(Some(ExitStatus::Failure));
            }
        }
        let between = self.records.as_ref().map(|r| &r.identities);
        let flags = self.request.source.as_flags();
        let unfinished = self.unfinished_moves(&snapshot, &flags).await?;
        let found = preflight(
            &planned.plan,
            &planned.types,
            &planned.objects,
            self.source(),
            self.ends.target.as_ref(),
            &planned.clusters,
            &ThisMove {
                before_freeze: true,
                ..self.this_move(&flags, &unfinished, between)
            },
        )
        .await?;
        let failures = rendered(&found.failures);
        if failures.is_empty() {
            return Ok(None);
        }
        self.printer.refused(
            "move refused by its preflight before freezing, nothing was written:",
            &failures,
        );
        Ok(Some(ExitStatus::Failure))
    }

    /// The preflight, then for a dry run the plan: every check before the first write.
    pub(in crate::mover) async fn check(
        &self,
        planned: &Planned,
        history: &History,
    ) -> Result<Step<Checked>> {
        let Planned {
            types,
            objects,
            plan,
            clusters,
        } = planned;
        let dry_run = self.request.dry_run;
        // The preflight may make namespaces for its dry runs: from here Ctrl-C lets it finish
        // and then removes them, rather than ending with them left behind.
        if dry_run == DryRun::None {
            self.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
        }
        let (failures, checked) = if dry_run == DryRun::Client {
            (
                Vec::new(),
                Checked {
                    in_target: BTreeSet::new(),
                    made_namespaces: Vec::new(),
                    reused: BTreeSet::new(),
                    unchecked: Vec::new(),
                    removed_namespaces: Vec::new(),
                },
            )
        } else {
            let between = self.records.as_ref().map(|r| &r.identities);
            let flags = self.request.source.as_flags();
            let unfinished = self
                .unfinished_moves(
                    &crate::mover::graph::object_graph::snapshot_of(objects),
                    &flags,
                )
                .await?;
            let found = preflight(
                plan,
                types,
                objects,
                self.source(),
                self.ends.target.as_ref(),
                clusters,
                &ThisMove {
                    earlier: history.unfinished.as_ref(),
                    server_dry_run: dry_run == DryRun::Server,
                    ..self.this_move(&flags, &unfinished, between)
                },
            )
            .await?;
            (
                found.failures,
                Checked {
                    in_target: found.in_target,
                    made_namespaces: found.made_namespaces,
                    reused: found.reused,
                    unchecked: found.unchecked,
                    removed_namespaces: found.removed_namespaces,
                },
            )
        };
        let failures = rendered(&failures);
        let structured = self.request.structured();
        if !failures.is_empty() {
            if structured {
                self.printer
                    .report(&plan_report(plan, clusters, failures.clone()))?;
            }
            // Exactly what it wrote and undid: "nothing was written" only when nothing was.
            let heading = match (self.request.freeze, checked.removed_namespaces.as_slice()) {
                // Its freeze ran before these checks; the story releases what it froze.
                (true, _) => "move refused by its preflight, nothing was moved:".to_string(),
                (false, []) => "move refused by its preflight, nothing was written:".to_string(),
                (false, made) => format!(
                    "move refused by its preflight; the namespace(s) {} its dry runs needed were created in the target and removed again, nothing else was written:",
                    made.join(", ")
                ),
            };
            self.printer.refused(&heading, &failures);
            return Ok(Step::Stop(ExitStatus::Failure));
        }
        if dry_run == DryRun::None {
            if self.stop.requested() {
                if let Some(target) = &self.ends.target {
                    remove_namespaces(&target.cluster, &checked.made_namespaces).await;
                }
                self.printer.note(
                    "interrupted before the move's first write: the namespaces its checks made are removed again, nothing else was written",
                );
                return Err(self.stop.check().err().unwrap_or(Error::Interrupted));
            }
            return Ok(Step::Go(checked));
        }
        // A dry run leaves nothing behind, not even the namespaces its checks needed.
        if let Some(target) = &self.ends.target {
            remove_namespaces(&target.cluster, &checked.made_namespaces).await;
        }
        let report = plan_report(plan, clusters, Vec::new());
        self.printer.report(&report)?;
        if !structured && dry_run == DryRun::Server {
            for note in &checked.unchecked {
                self.printer.info(note);
            }
            self.printer
                .info("preflight passed: the move can start now");
        }
        Ok(Step::Stop(ExitStatus::Success))
    }
}
