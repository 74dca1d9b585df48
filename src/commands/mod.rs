//! One module per subcommand; each returns how it ended.

pub mod complete;
pub mod freeze;
pub mod mover;
pub mod ready;
pub mod reporter;
pub mod verify;
pub mod version;
pub mod waiting;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::error::{Error, Result};
use crate::kube::lease::Leases;
use crate::kube::{OnCtrlC, Stop};
use crate::output::{ExitStatus, Printer};

/// `kubectl capi completion <shell>`.
pub fn completion(shell: clap_complete::Shell, printer: &Printer) -> Result<ExitStatus> {
    let mut command = Cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut command, "kubectl-capi", &mut buffer);
    printer.data(&String::from_utf8_lossy(&buffer))?;
    Ok(ExitStatus::Success)
}

/// Runs `work` holding `leases` (when there are any) and releases them however `work` ends.
/// With leases, Ctrl-C is handled here so that they are released then too, as their stop says
/// ([`OnCtrlC`]): during a move's writes the first Ctrl-C asks them to stop at their next safe
/// point and a second ends the work at once; otherwise it ends at once (what it did is
/// journalled or idempotent), unless the work handles Ctrl-C itself. The command exits 130. A
/// work that failed after a lease was lost failed because of that loss: that is what is said.
pub async fn holding<T>(
    leases: Option<Leases>,
    printer: &Printer,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    let Some(leases) = leases else {
        return work.await;
    };
    for note in leases.notes() {
        printer.warn(note);
    }
    let stop = leases.stop().clone();
    let outcome = tokio::select! {
        outcome = work => outcome,
        () = interrupted(&stop, printer) => Err(Error::Interrupted),
    };
    leases.release().await;
    match (outcome, stop.lost()) {
        (Err(_), Some(why)) => Err(Error::LeaseLost(why)),
        (outcome, _) => outcome,
    }
}

/// Resolves when the work must end at once because of Ctrl-C (see [`holding`]).
async fn interrupted(stop: &Stop, printer: &Printer) {
    loop {
        if tokio::signal::ctrl_c().await.is_err() {
            // No signal handling here: the work runs to its end.
            return std::future::pending().await;
        }
        match stop.ctrl_c() {
            OnCtrlC::LeftToTheWork => continue,
            OnCtrlC::StopAfterWritesInFlight if !stop.requested() => {
                printer
                    .note("stopping after the requests in flight (Ctrl-C again to quit at once)");
                stop.request();
            }
            _ => return,
        }
    }
}
