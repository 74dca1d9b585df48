//! kubectl-capi's integration tests: the real binary and the library against the sandbox.

mod agreement;
mod catalog;
mod cli;
mod common;
mod demo;
mod freeze;
mod krew;
mod kubectl_plugin;
mod layout;
mod move_checks;
mod move_history;
mod move_safety;
mod move_scenarios;
mod move_without_clusters;
mod moving;
pub mod one_writer;
mod package_script;
mod packaging;
mod pivot;
mod ready;
mod selection;
mod shared_objects;
mod snapshot;
mod verify;
mod workflows;
