//! The shape of the crates, held as tests: how the guard reads them (`reading`), imports that
//! point down at every folder level (`imports`), rules of the code's shape (`rules`), files and
//! functions that stay readable (`limits`), and the one list of what may break a rule, with the
//! reason (`exceptions`).

mod exceptions;
mod imports;
mod limits;
mod reading;
mod rules;

pub(crate) use reading::{code, modules_under, skip_literal};
