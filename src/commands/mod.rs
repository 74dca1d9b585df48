//! One module per subcommand; each returns how it ended. `dispatch` parses argv and runs the
//! one asked for; `holding` runs a command's work under its leases.

pub mod complete;
pub mod dispatch;
pub mod freeze;
pub mod holding;
pub mod mover;
pub mod ready;
pub mod reporter;
pub mod shell_completion;
pub mod verify;
pub mod version;
pub mod waiting;
