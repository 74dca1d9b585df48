//! The command line: what the user can type (`args`), what help says about it (`help`) and how
//! clap spells the choices (`values`). Nothing below reads these types; `settings` and each
//! command's request resolve them.

mod args;
mod help;
mod values;

pub use args::*;
pub use help::{EXAMPLES, EXIT_MEANINGS, with_exit_codes};
