//! `kubectl capi pause` / `resume`: freeze scaling (so no new Machines appear) while in-flight
//! Machines finish, and undo exactly that.

pub mod apply;
pub mod plan;
pub mod request;
