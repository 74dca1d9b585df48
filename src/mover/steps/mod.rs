//! The move's steps, each over what every step reads (`context`): what earlier runs recorded
//! (`history`), an interrupted run rolled back or finished (`interrupted`), the plan
//! (`planning`), every check before the first write (`checking`), the writes under the journal
//! (`writing`) and `--to-directory` (`to_directory`). [`crate::mover::move_once`] takes them in
//! order.

pub mod checking;
pub mod context;
pub mod history;
pub mod interrupted;
pub mod planning;
pub mod to_directory;
pub mod writing;
