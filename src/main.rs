//! The `kubectl-capi` binary: parses nothing itself, runs the library and maps its outcome to an exit code.
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    kubectl_capi::run(std::env::args_os()).await.into()
}
