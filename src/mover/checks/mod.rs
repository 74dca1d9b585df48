//! Every check a move runs before its first write: the preflight (`preflight`: clusterctl's
//! checks, the target's kinds and providers, permissions, server-side dry runs) and what it
//! finds (`findings`).

pub mod access;
pub mod dry_runs;
pub mod findings;
pub mod preflight;
pub mod providers;
