//! `metadata.managedFields`: which field manager set which fields.
//!
//! Field paths use the `fieldsV1` element syntax (`f:name`, `k:{"uid":..}`, `v:"x"`). Lists are
//! atomic except `metadata.ownerReferences` (keyed by uid) and `metadata.finalizers` (a set), as in
//! the built-in schemas; that is all the exactness the plugin's uses need.

mod apply;
mod entries;
mod paths;
#[cfg(test)]
mod tests;

pub use apply::{ApplyConflict, apply, dotted};
pub use entries::{Entry, Writer, read_entries, record_update, write_entries};
pub use paths::{
    Change, FieldPath, FieldSet, SYSTEM_METADATA, Scope, changed_fields, fields_of, from_fields_v1,
    members_of, to_fields_v1, value_at,
};
