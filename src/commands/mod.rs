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
use crate::error::Result;
use crate::output::{ExitStatus, Printer};

/// `kubectl capi completion <shell>`.
pub fn completion(shell: clap_complete::Shell, printer: &Printer) -> Result<ExitStatus> {
    let mut command = Cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut command, "kubectl-capi", &mut buffer);
    printer.data(&String::from_utf8_lossy(&buffer))?;
    Ok(ExitStatus::Success)
}

/// `namespace ns`, or `any namespace` with -A.
pub fn scope_shown(scope: &crate::snapshot::ListScope) -> String {
    match scope {
        crate::snapshot::ListScope::Namespace(ns) => format!("namespace {ns}"),
        crate::snapshot::ListScope::AllNamespaces => "any namespace".into(),
    }
}
