//! `kubectl capi completion <shell>`: clap's stand-alone completion script for `kubectl-capi`.

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
