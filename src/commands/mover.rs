//! `kubectl capi move`: its flags resolved once into a request, both ends connected once, the
//! lease taken, then [`crate::mover::run`] — with `pause`, `resume`, `ready --wait` and
//! `verify` run for it on the same ends ([`Around`]), and its reports rendered.

use std::collections::BTreeSet;

use super::freeze::Locking;
use super::reporter::Reporter;
use crate::cli::MoveArgs;
use crate::error::{Error, Result};
use crate::freeze::apply::Mode;
use crate::freeze::plan::Action;
use crate::model::ObjectRef;
use crate::mover::Around;
use crate::mover::ends::both::Ends;
use crate::mover::report::Summary;
use crate::mover::report::print_summary;
use crate::mover::request::MoveRequest;
use crate::output::{ExitStatus, Printer};
use crate::ready::request::ReadyRequest;
use crate::settings::{Connection, OutputFormat, Settings};
use crate::verify::{MovedCluster, VerificationReport, Verified};

/// `move`, optionally wrapped in the whole story: `--freeze` (pause scaling first, release it
/// in the target after), `--wait-ready` (wait until the Clusters can be moved), `--verify` (watch
/// the target adopt them). The steps print to stderr; stdout carries only the move's result.
/// A command that will write holds the lease of the cluster it writes to first from before its
/// first write to its end (see [`crate::kube::lease`]).
pub async fn run(args: &MoveArgs, settings: &Settings, printer: &Printer) -> Result<ExitStatus> {
    let request = MoveRequest::resolve(args, settings)?;
    let (ends, request) = Ends::open(request).await?;
    let leases = ends
        .take_leases(&request, &|line: &str| printer.warn(line))
        .await?;
    let stop = leases
        .as_ref()
        .map(|held| held.stop().clone())
        .unwrap_or_default();
    let around = Commands {
        request: &request,
        ends: &ends,
        printer,
        step: printer.step(),
        step_settings: Settings {
            output: OutputFormat::Table,
            ..settings.clone()
        },
    };
    let reporter = Reporter::new(printer);
    let story = crate::mover::run(&request, &ends, (printer, &reporter), &stop, &around);
    super::holding::holding(leases, printer, story)
        .await
        .map_err(|e| match e {
            Error::LeaseLost(why) => Error::LeaseLost(format!(
                "{why}; run `{}` to see where the move stands",
                request.where_it_stands()
            )),
            other => other,
        })
}

/// The commands the move's story runs on its ends, as the user would run them.
struct Commands<'a> {
    request: &'a MoveRequest,
    ends: &'a Ends,
    printer: &'a Printer,
    /// The printer of the composed steps (freeze, wait, release): human output on stderr.
    step: Printer,
    /// The settings of the composed steps: the user's, with human output.
    step_settings: Settings,
}

impl Commands<'_> {
    /// The settings of a composed step at `end`.
    fn at(&self, end: &Connection) -> Settings {
        Settings {
            connection: end.clone(),
            ..self.step_settings.clone()
        }
    }
}

impl Around for Commands<'_> {
    async fn freeze(&self) -> Result<std::result::Result<BTreeSet<ObjectRef>, ExitStatus>> {
        let (frozen, outcomes) = super::freeze::run_on(
            &self
                .request
                .freeze_request(Mode::Freeze, Some("kubectl capi move --freeze")),
            (Locking::HeldByCaller, None),
            (&self.ends.source, &self.at(&self.request.source)),
            &self.step,
        )
        .await?;
        if frozen != ExitStatus::Success {
            return Ok(Err(frozen));
        }
        Ok(Ok(outcomes
            .into_iter()
            .filter(|o| o.action == Action::Frozen)
            .map(|o| o.object)
            .collect()))
    }

    async fn wait_ready(&self) -> Result<ExitStatus> {
        let ready = ReadyRequest {
            clusters: self.request.clusters.clone(),
            wait: true,
            timeout: self.request.timeout,
            details: false,
            strict: false,
            to_cluster: None,
        };
        let source = (&self.ends.source, &self.at(&self.request.source));
        super::ready::run_on(&ready, source, &self.step).await
    }

    async fn unfreeze(&self, froze: BTreeSet<ObjectRef>) -> Result<ExitStatus> {
        let (status, _) = super::freeze::run_on(
            &self.request.freeze_request(Mode::Resume, None),
            (Locking::HeldByCaller, Some(froze)),
            (&self.ends.source, &self.at(&self.request.source)),
            &self.step,
        )
        .await?;
        Ok(status)
    }

    async fn release_in_target(&self, request: &MoveRequest) -> Result<ExitStatus> {
        let (Some(target), Some(connection)) = (&self.ends.target, &request.target) else {
            return Ok(ExitStatus::Success);
        };
        super::freeze::run(
            &request.freeze_request(Mode::Resume, None),
            Locking::HeldByCaller,
            (target, &self.at(connection)),
            &self.step,
        )
        .await
    }

    async fn verify(&self, request: &MoveRequest, moved: &[MovedCluster]) -> Result<Verified> {
        let target = self.ends.target.as_ref().expect("a move has a target");
        let ends = super::verify::Ends {
            target,
            source: Some(&self.ends.source),
            flags: request
                .target
                .as_ref()
                .map(Connection::as_flags)
                .unwrap_or_default(),
        };
        let wait = Some(self.request.verify_timeout);
        super::verify::verify(&ends, moved, wait, self.printer).await
    }

    fn show_summary(&self, request: &MoveRequest, summary: &Summary) -> Result<()> {
        print_summary(request, self.printer, summary)
    }

    fn show_verification(&self, report: &VerificationReport) -> Result<()> {
        self.printer.report(report)
    }
}
