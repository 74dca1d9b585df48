//! Where every command starts: argv parsed (help, version and usage errors answered as kubectl
//! plugins do), the flags resolved into settings, the command run, and its outcome mapped to an
//! exit status.

use clap::{CommandFactory, FromArgMatches};

use crate::cli::{self, Cli, Command};
use crate::error::Error;
use crate::freeze::request::FreezeRequest;
use crate::output::{ExitStatus, Printer};
use crate::ready::request::ReadyRequest;
use crate::settings::{OutputFormat, Settings};
use crate::verify::request::VerifyRequest;

/// Parses `args` (argv including the program name) and runs the command.
pub async fn run<I, T>(args: I) -> ExitStatus
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    // The completer `completion kubectl` prints asks here: `kubectl capi __complete WORDS…`.
    if args.get(1).is_some_and(|first| first == "__complete") {
        let words: Vec<String> = args[2..]
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        super::complete::print_answer(&words).await;
        return ExitStatus::Success;
    }
    let command = cli::with_exit_codes(Cli::command());
    let cli = match command
        .try_get_matches_from(args)
        .and_then(|matches| Cli::from_arg_matches(&matches))
    {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    let settings = match Settings::from_args(&cli.global).and_then(|settings| {
        for (name, flag) in cluster_names(&cli.command) {
            crate::validate::cluster_name(name, flag).map_err(Error::Usage)?;
        }
        crate::kube::lease_timing::duration_from_env().map_err(Error::Usage)?;
        Ok(settings)
    }) {
        Ok(settings) => settings,
        Err(error) => {
            Printer::plain(cli.global.output).error(&error.to_string());
            return ExitStatus::Error;
        }
    };
    let printer = Printer::new(settings.output, settings.color, settings.verbosity);
    let outcome = match &cli.command {
        Command::Version(args) => super::version::run(args, &settings, &printer).await,
        Command::Completion { shell } => super::shell_completion::completion(*shell, &printer),
        Command::Ready(args) => {
            super::ready::run(&ReadyRequest::resolve(args), &settings, &printer).await
        }

        Command::Pause(args) => {
            super::freeze::command(&FreezeRequest::pause(args), &settings, &printer).await
        }
        Command::Resume(args) => {
            super::freeze::command(&FreezeRequest::resume(args), &settings, &printer).await
        }

        Command::Move(args) => super::mover::run(args, &settings, &printer).await,
        Command::Verify(args) => {
            let request = VerifyRequest::resolve(args, &settings);
            super::verify::run(&request, &settings, &printer).await
        }
    };
    exit_status(outcome, &printer)
}

/// How a command's outcome ends the process, said once through `printer`: a refusal, a missing
/// permission or a lost lease is an answer (exit 1), an interruption 130, any other error 2.
fn exit_status(outcome: crate::error::Result<ExitStatus>, printer: &Printer) -> ExitStatus {
    match outcome {
        Ok(status) => status,
        Err(Error::Interrupted) => ExitStatus::Interrupted,
        Err(Error::BrokenPipe) => ExitStatus::BrokenPipe,
        // A permission missing is an answer like a refusal: exit 1, the permission named.
        // A holder that lost its lease stopped writing: exit 1, saying so.
        Err(error @ (Error::Forbidden { .. } | Error::LeaseLost(_))) => {
            printer.error(&error.to_string());
            ExitStatus::Failure
        }
        Err(Error::AlreadyDone(what)) => {
            printer.info(&what);
            ExitStatus::Success
        }
        Err(Error::Refused(reasons)) => {
            match reasons.as_slice() {
                [reason] => printer.error(reason),
                _ => printer.refused("refused, nothing was written:", &reasons),
            }
            ExitStatus::Failure
        }
        Err(error) => {
            printer.error(&error.to_string());
            ExitStatus::Error
        }
    }
}

/// The Cluster names a command was given, each with the flag that gave it (none: positional).
fn cluster_names(command: &Command) -> Vec<(&str, Option<&'static str>)> {
    let (names, to_cluster): (&[String], Option<&String>) = match command {
        Command::Ready(args) => (&args.clusters, args.to_cluster.as_ref()),
        Command::Pause(args) => (&args.selection.clusters, None),
        Command::Resume(args) => (&args.selection.clusters, None),
        Command::Move(args) => (&args.clusters, args.to_cluster.as_ref()),
        Command::Verify(args) => (&args.clusters, None),
        Command::Version(_) | Command::Completion { .. } => (&[], None),
    };
    names
        .iter()
        .map(|name| (name.as_str(), None))
        .chain(to_cluster.map(|name| (name.as_str(), Some("--to-cluster"))))
        .collect()
}

/// Help and version go to stdout with exit 0; every other clap error becomes one `error:` line.
fn usage_error(error: clap::Error) -> ExitStatus {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let on_stderr = error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand;
            let printer = Printer::new(OutputFormat::Table, crate::choices::ColorChoice::Auto, 0);
            // A closed pipe (`--help | head`) is not worth a word.
            let text = error.render();
            let _ = printer.help_text(&text.to_string(), &text.ansi().to_string(), on_stderr);
            if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitStatus::Error
            } else {
                ExitStatus::Success
            }
        }
        _ => {
            let rendered = error.render().to_string();

            let mut lines = rendered.lines().map(str::trim).filter(|l| {
                !l.is_empty()
                    && !l.starts_with("For more information")
                    && !l.starts_with("Usage:")
                    // "use '-- -5'" fails when pasted: no Cluster name starts with '-'.
                    && !l.starts_with("tip: to pass")
            });
            let first = lines
                .next()
                .unwrap_or("error: invalid arguments")
                .trim_start_matches("error: ")
                .to_string();
            let rest: Vec<&str> = lines.collect();
            let detail = match (rest.is_empty(), first.ends_with(':')) {
                (true, _) => String::new(),
                // "the following required arguments were not provided:" and the list.
                (false, true) => format!(" {}", rest.join(", ")),
                (false, false) => format!(" ({})", rest.join("; ")),
            };
            Printer::plain(OutputFormat::Table)
                .error(&format!("{first}{detail}; see 'kubectl capi --help'"));
            ExitStatus::Error
        }
    }
}
