//! `kubectl_complete-capi`: kubectl runs it to complete `kubectl capi <TAB>`; it prints the
//! candidates for the words it is given (see `commands::complete`).
use kubectl_capi::output::Printer;
use kubectl_capi::settings::OutputFormat;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let answer = kubectl_capi::commands::complete::answer(&args).await;
    // A closed pipe is the shell giving up; nothing to say about it.
    let _ = Printer::plain(OutputFormat::Table).data(&answer);
}
