//! What one `kubectl capi pause` or `resume` was asked, resolved once from its flags: which
//! Clusters, whether to wait for the controllers and how long, a dry run, and for a pause its
//! reason and whether remediation keeps running.

use std::time::Duration;

use crate::cli::{FreezeSelection, PauseArgs, ResumeArgs};
use crate::freeze::apply::Mode;
use crate::settings::DryRun;

/// A freeze or its release, resolved: the code below reads these fields, never the flags.
#[derive(Debug, Clone)]
pub struct FreezeRequest {
    pub mode: Mode,
    /// Cluster names; none with `all`, `-A` or `-l`.
    pub clusters: Vec<String>,
    pub all: bool,
    /// `--wait`: until every object acknowledges, for at most `timeout`.
    pub wait: bool,
    pub timeout: Duration,
    pub dry_run: DryRun,
    /// Why, recorded in the marker annotation (a pause only).
    pub reason: Option<String>,
    pub keep_remediation: bool,
}

impl FreezeRequest {
    /// `kubectl capi pause`.
    pub fn pause(args: &PauseArgs) -> FreezeRequest {
        FreezeRequest {
            reason: args.reason.clone(),
            keep_remediation: args.keep_remediation,
            ..FreezeRequest::of(Mode::Freeze, &args.selection)
        }
    }

    /// `kubectl capi resume`.
    pub fn resume(args: &ResumeArgs) -> FreezeRequest {
        FreezeRequest::of(Mode::Resume, &args.selection)
    }

    fn of(mode: Mode, selection: &FreezeSelection) -> FreezeRequest {
        FreezeRequest {
            mode,
            clusters: selection.clusters.clone(),
            all: selection.all,
            wait: selection.wait,
            timeout: selection.wait_limit.timeout,
            dry_run: selection.dry_run,
            reason: None,
            keep_remediation: false,
        }
    }

    /// `pause` or `resume`, as the user calls it.
    pub fn verb(&self) -> &'static str {
        match self.mode {
            Mode::Freeze => "pause",
            Mode::Resume => "resume",
        }
    }
}
