//! Output discipline: data on stdout, progress and warnings on stderr.

pub mod printer;
pub mod table;

pub use printer::{ExitStatus, Log, Printer, Render, report_panic};
