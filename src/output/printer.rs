//! One place that decides where output goes and whether it is decorated: data on stdout;
//! progress, notes, warnings and errors on stderr. Every line a user sees is written here.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use indicatif::ProgressDrawTarget;
use serde::Serialize;

use crate::choices::{ColorChoice, OutputFormat};
use crate::error::{Error, Result};

/// How a command ended; mapped to the process exit code in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: done (for `ready`: every selected cluster can be moved).
    Success,
    /// 1: the answer is no (not ready, timed out, refused by preflight).
    Failure,
    /// 2: an error.
    Error,
    /// 130: interrupted.
    Interrupted,
    /// 141: stdout was closed (`| head`); ended quietly, as kubectl ends on SIGPIPE.
    BrokenPipe,
    /// 101: a bug — the plugin panicked (see [`report_panic`]).
    Bug,
}

impl ExitStatus {
    /// Every way a command ends, in the order help lists them.
    pub const ALL: [ExitStatus; 6] = [
        ExitStatus::Success,
        ExitStatus::Failure,
        ExitStatus::Error,
        ExitStatus::Bug,
        ExitStatus::Interrupted,
        ExitStatus::BrokenPipe,
    ];

    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
            ExitStatus::Bug => 101,
            ExitStatus::Interrupted => 130,
            ExitStatus::BrokenPipe => 141,
        }
    }

    /// What the code means for any command; help says it, and commands may say it their way.
    pub fn meaning(self) -> &'static str {
        match self {
            ExitStatus::Success => "success",
            ExitStatus::Failure => {
                "the answer is no: not ready, timed out, refused (nothing written), forbidden (403)"
            }
            ExitStatus::Error => {
                "error: bad input, API server unreachable or not Kubernetes, no Cluster API"
            }
            ExitStatus::Bug => "a bug: the plugin panicked (one line; please report it)",
            ExitStatus::Interrupted => "interrupted (Ctrl-C)",
            ExitStatus::BrokenPipe => "stdout was closed (`| head`): ended quietly, as kubectl",
        }
    }

    /// The "Exit codes:" section of a help text (each line within 100 columns, where clap
    /// would wrap it): every code, in the command's own words where `specific` gives them.
    pub fn help(specific: &[(u8, &str)]) -> String {
        let mut out = String::from("Exit codes:");
        for status in ExitStatus::ALL {
            let meaning = specific
                .iter()
                .find(|(code, _)| *code == status.code())
                .map_or(status.meaning(), |(_, m)| m);
            out.push_str(&format!("\n  {:<4} {meaning}", status.code()));
        }
        out
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(status.code())
    }
}

#[derive(Debug, Clone)]
pub struct Printer {
    pub format: OutputFormat,
    color: bool,
    progress: bool,
    pub verbosity: u8,
    /// Data goes to stderr: a step inside a bigger command (move --freeze), whose own data is
    /// the command's result.
    data_to_stderr: bool,
}

fn color_enabled(choice: ColorChoice, stream_is_tty: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
            let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
            let forced = std::env::var("CLICOLOR_FORCE").is_ok_and(|v| v != "0");
            let off = std::env::var("CLICOLOR").is_ok_and(|v| v == "0");
            !no_color && (forced || (stream_is_tty && !dumb && !off))
        }
    }
}

impl Printer {
    pub fn new(format: OutputFormat, color: ColorChoice, verbosity: u8) -> Printer {
        let stdout_tty = std::io::stdout().is_terminal();
        let stderr_tty = std::io::stderr().is_terminal();
        let color = !format.is_structured() && color_enabled(color, stdout_tty);
        console::set_colors_enabled(color);
        console::set_colors_enabled_stderr(color_enabled(ColorChoice::Auto, stderr_tty) && color);
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        Printer {
            format,
            color,
            progress: stderr_tty && !dumb && !format.is_structured() && verbosity == 0,
            verbosity,
            data_to_stderr: false,
        }
    }

    /// A printer for tests: no colour, no progress.
    pub fn plain(format: OutputFormat) -> Printer {
        Printer {
            format,
            color: false,
            progress: false,
            verbosity: 0,
            data_to_stderr: false,
        }
    }

    /// A plain printer that draws progress, for tests that draw to an in-memory terminal.
    #[cfg(test)]
    pub fn drawing(mut self) -> Printer {
        self.progress = true;
        self
    }

    /// Whether progress (spinners, bars) may be drawn: only on a TTY, only for tables.
    pub fn progress(&self) -> bool {
        self.progress
    }

    pub fn progress_target(&self) -> ProgressDrawTarget {
        if self.progress {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        }
    }

    /// The printer for a step of a composed command: human output, on stderr.
    pub fn step(&self) -> Printer {
        Printer {
            format: OutputFormat::Table,
            color: false,
            progress: self.progress,
            verbosity: self.verbosity,
            data_to_stderr: true,
        }
    }

    /// A help or version text, `styled` (with ANSI escapes) when colour is on: on stdout, or on
    /// stderr when it stands for a usage error (a command given without its subcommand).
    pub fn help_text(&self, plain: &str, styled: &str, on_stderr: bool) -> Result<()> {
        let text = match self.color {
            true => styled,
            false => plain,
        };
        match on_stderr {
            true => write_all(&mut std::io::stderr().lock(), text, false)
                .map_err(|e| Error::Output(e.to_string())),
            false => self.data(text),
        }
    }

    /// Writes data to stdout (a step's to stderr). A closed stdout (`| head`) ends the command
    /// quietly ([`Error::BrokenPipe`]); any other failure to write is an error.
    pub fn data(&self, text: &str) -> Result<()> {
        let newline = !text.ends_with('\n') && !text.is_empty();
        let written = if self.data_to_stderr {
            write_all(&mut std::io::stderr().lock(), text, newline)
        } else {
            write_all(&mut std::io::stdout().lock(), text, newline)
        };
        written.map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => Error::BrokenPipe,
            _ => Error::Output(e.to_string()),
        })
    }

    pub fn warn(&self, message: &str) {
        eprintln!("warning: {message}");
    }

    /// What the user must see whatever the output format: `error: …`.
    pub fn error(&self, message: &str) {
        eprintln!("error: {message}");
    }

    /// A refusal: every reason, one per line under a heading.
    pub fn refused(&self, heading: &str, reasons: &[String]) {
        self.error(heading);
        for reason in reasons {
            eprintln!("  {reason}");
        }
    }

    /// A line the user must see whatever the output format (a note about what was done).
    pub fn note(&self, message: &str) {
        eprintln!("{message}");
    }

    /// Where a layer below the commands writes its lines at verbosity `level` and above (a
    /// watch's errors at 4, each request at 6): handed down with the work, never reached for.
    pub fn log_at(&self, level: u8) -> Option<Log> {
        (self.verbosity >= level).then(Log::stderr)
    }

    pub fn info(&self, message: &str) {
        if !self.format.is_structured() || self.verbosity > 0 {
            eprintln!("{message}");
        }
    }

    /// Writes `report` on stdout in the form `-o` asks for: the one place the output format is
    /// decided. A document that cannot be serialised is an error, never an empty stdout.
    pub fn report<R: Render>(&self, report: &R) -> Result<()> {
        let text = match self.format {
            OutputFormat::Json | OutputFormat::Yaml => self.document(report)?,
            OutputFormat::Name => report.names(self),
            OutputFormat::Wide => report.wide(self),
            OutputFormat::Table => report.table(self),
        };
        self.data(&text)
    }

    /// Whether `-o` asks for a document (json, yaml): what a report says, and nothing else, on
    /// stdout, once.
    pub fn documents(&self) -> bool {
        self.format.is_document()
    }

    /// `value` as the chosen document format (yaml, else json).
    fn document<T: Serialize>(&self, value: &T) -> Result<String> {
        let text = match self.format {
            OutputFormat::Yaml => serde_saphyr::to_string(value).map_err(|e| e.to_string()),
            _ => serde_json::to_string_pretty(value)
                .map(|text| text + "\n")
                .map_err(|e| e.to_string()),
        };
        text.map_err(|e| {
            Error::Output(format!("cannot write the output as {:?}: {e}", self.format))
        })
    }

    /// Colours a status word when colour is on.
    pub fn status_word(&self, word: &str, good: bool) -> String {
        if !self.color {
            return word.to_string();
        }
        let style = if good {
            console::Style::new().green()
        } else {
            console::Style::new().yellow()
        };
        style.force_styling(true).apply_to(word).to_string()
    }
}

/// The lines a layer without a printer may write (requests at `-v 6`, a watch's errors at
/// `-v 4`): a sink handed to it, so what it writes is decided here and a test can collect it.
#[derive(Clone)]
pub struct Log(std::sync::Arc<dyn Fn(&str) + Send + Sync>);

impl Log {
    /// Lines on stderr, as kubectl's `-v`.
    pub fn stderr() -> Log {
        Log(std::sync::Arc::new(|line| eprintln!("{line}")))
    }

    /// Lines handed to `write` (tests).
    pub fn to(write: impl Fn(&str) + Send + Sync + 'static) -> Log {
        Log(std::sync::Arc::new(write))
    }

    pub fn line(&self, text: &str) {
        (self.0)(text);
    }
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Log")
    }
}

/// What a command reports, in every form `-o` offers: a document (its `Serialize`), a table,
/// a wide table and names. A new format is a variant of `OutputFormat` and an arm of
/// [`Printer::report`] (with a method here when reports say it their own way).
pub trait Render: Serialize {
    /// The human form (`-o` unset).
    fn table(&self, printer: &Printer) -> String;
    /// `-o wide`: the table with what only fits a wide terminal.
    fn wide(&self, printer: &Printer) -> String {
        self.table(printer)
    }
    /// `-o name`: `kind.group/name` lines of the objects the report is about.
    fn names(&self, printer: &Printer) -> String {
        self.table(printer)
    }
}

fn write_all(out: &mut dyn Write, text: &str, newline: bool) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    if newline {
        out.write_all(b"\n")?;
    }
    out.flush()
}
/// A panic is a bug: one line on stderr that says so (a backtrace only with `RUST_BACKTRACE`).
/// The binary's hook says it, then ends the process with [`ExitStatus::Bug`].
pub fn report_panic(info: &std::panic::PanicHookInfo<'_>) {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string());
    let place = info
        .location()
        .map(|l| format!(" ({}:{})", l.file(), l.line()))
        .unwrap_or_default();
    eprintln!(
        "error: kubectl-capi {} failed: {}{place}; this is a bug, please report it",
        env!("CARGO_PKG_VERSION"),
        message.lines().next().unwrap_or_default()
    );
    if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
        eprintln!("{}", std::backtrace::Backtrace::force_capture());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_codes_section_lists_every_code_within_a_line() {
        let help = ExitStatus::help(&[(1, "no")]);
        assert_eq!(help.lines().count(), ExitStatus::ALL.len() + 1);
        assert!(help.contains("\n  1    no\n  2    error:"), "{help}");
        for status in ExitStatus::ALL {
            assert!(status.meaning().len() + 7 <= 100, "{status:?}");
        }
    }

    /// A report whose document cannot be written.
    struct Unwritable;

    impl Serialize for Unwritable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> std::result::Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("a map key that is not a string"))
        }
    }

    impl Render for Unwritable {
        fn table(&self, _: &Printer) -> String {
            String::new()
        }
    }

    #[test]
    fn a_document_that_cannot_be_written_is_an_error_not_an_empty_stdout() {
        for format in [OutputFormat::Json, OutputFormat::Yaml] {
            let printer = Printer::plain(format);
            let error = printer.report(&Unwritable).unwrap_err();
            assert!(
                error.to_string().contains("a map key that is not a string"),
                "{format:?}: {error}"
            );
        }
    }
}
