use std::process::ExitCode;

fn main() -> ExitCode {
    // The command-line interface arrives with the plugin foundation (issue 3); until then the
    // binary only identifies itself.
    println!("kubectl-capi {}", kubectl_capi::VERSION);
    ExitCode::SUCCESS
}
