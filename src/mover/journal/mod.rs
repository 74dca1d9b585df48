//! The move's journal: the plan and how far the move got, written before the first write and at
//! every step, so that an interrupted move can be resumed (or, before deletion started, rolled
//! back) by this tool. It names objects and UIDs only — never their contents, so no Secret data.
//!
//! Its path is derived from what is moved (source server, target server, namespace, Cluster
//! names), so that running the same command again finds it.

pub mod copy;
pub mod document;
pub mod file;
pub mod kept;
mod local;
mod move_id;

pub use local::{
    FINISHED_RECORDS_KEPT, SET_ASIDE_PREFIX, check_writable, default_dir, finished_pivot,
    prune_finished, save_text, set_aside,
};

pub use document::*;
pub use file::{JournalCopy, JournalFile};
pub use move_id::{MoveId, new_move_id};
