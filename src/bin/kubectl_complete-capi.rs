//! `kubectl_complete-capi`: kubectl runs it to complete `kubectl capi <TAB>`; it prints the
//! candidates for the words it is given (see `commands::complete`).
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    kubectl_capi::commands::complete::print_answer(&args).await;
}
