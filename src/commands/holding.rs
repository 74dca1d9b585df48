//! Running a command's work while it holds the leases of the clusters it writes to: released
//! however the work ends, Ctrl-C handled as the leases' stop says.

use crate::error::{Error, Result};
use crate::kube::lease::Leases;
use crate::kube::stop::{OnCtrlC, Stop};
use crate::output::Printer;

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
