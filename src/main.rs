//! The `kubectl-capi` binary: parses nothing itself, runs the library and maps its outcome to an exit code.
use std::process::ExitCode;

// One thread: the plugin mostly waits on API servers, and a second thread only added wake-ups
// between threads (half of a move's CPU time, measured by the move benchmark).
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    kubectl_capi::output::on_panic();
    kubectl_capi::run(std::env::args_os()).await.into()
}
