use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    kubectl_capi::run(std::env::args_os()).await.into()
}
