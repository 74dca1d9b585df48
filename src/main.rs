//! The `kubectl-capi` binary: parses nothing itself, runs the library and maps its outcome to an exit code.
use std::process::ExitCode;

use kubectl_capi::output::ExitStatus;

// One thread: the plugin mostly waits on API servers, and a second thread only added wake-ups
// between threads (half of a move's CPU time, measured by the move benchmark).
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // A panic is a bug: said in one line, then exit 101 at once — also when a background task
    // panics, which would otherwise leave the command going on with half a client. Journals and
    // the lease are written so that a process ended at any point is resumed or taken over.
    std::panic::set_hook(Box::new(|info| {
        kubectl_capi::output::report_panic(info);
        std::process::exit(ExitStatus::Bug.code().into());
    }));
    kubectl_capi::run(std::env::args_os()).await.into()
}
