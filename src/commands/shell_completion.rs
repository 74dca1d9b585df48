//! `kubectl capi completion <shell>`: clap's stand-alone completion script for `kubectl-capi`, or
//! the completer kubectl runs for `kubectl capi <TAB>` (`completion kubectl`).

use clap::CommandFactory;

use crate::cli::{Cli, CompletionFor};
use crate::error::Result;
use crate::output::{ExitStatus, Printer};

/// The completer `completion kubectl` prints: a script, not a copy of the binary, so that it asks
/// whichever kubectl-capi kubectl finds — krew's next version after an upgrade, nothing (and no
/// error) after an uninstall — and lives outside krew's directories, which krew manages alone.
#[cfg(not(windows))]
const KUBECTL_COMPLETER: &str = "#!/bin/sh
# kubectl runs this for `kubectl capi <TAB>` (kubectl >= 1.26): it asks the kubectl-capi kubectl
# finds now, so it keeps working across `kubectl krew upgrade` and completes nothing once the
# plugin is uninstalled. Made by `kubectl capi completion kubectl`.
exec kubectl capi __complete \"$@\" 2>/dev/null
";
#[cfg(windows)]
const KUBECTL_COMPLETER: &str = "@REM kubectl runs this for `kubectl capi <TAB>` (kubectl >= 1.26). Made by `kubectl capi completion kubectl`.\r
@kubectl capi __complete %* 2>NUL\r
";

/// `kubectl capi completion <shell>`.
pub fn completion(shell: CompletionFor, printer: &Printer) -> Result<ExitStatus> {
    let shell = match shell {
        CompletionFor::Kubectl => {
            printer.data(KUBECTL_COMPLETER)?;
            return Ok(ExitStatus::Success);
        }
        CompletionFor::Bash => clap_complete::Shell::Bash,
        CompletionFor::Zsh => clap_complete::Shell::Zsh,
        CompletionFor::Fish => clap_complete::Shell::Fish,
        CompletionFor::Elvish => clap_complete::Shell::Elvish,
        CompletionFor::Powershell => clap_complete::Shell::PowerShell,
    };
    let mut command = Cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut command, "kubectl-capi", &mut buffer);
    printer.data(&String::from_utf8_lossy(&buffer))?;
    Ok(ExitStatus::Success)
}
