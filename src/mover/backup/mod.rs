//! `move --to-directory` and `--from-directory`: a clusterctl-compatible backup of a move's
//! objects (`directory`) and its restore into a cluster (`restore`).

pub mod directory;
pub mod restore;
