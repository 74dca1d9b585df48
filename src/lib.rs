//! kubectl-capi: Cluster API operator tooling — can these clusters be moved now (`ready`), freeze
//! their scaling while in-flight Machines finish (`pause`/`resume`), and a clusterctl-compatible,
//! resumable `move`.
//!
//! The binary (`src/main.rs`) only parses arguments and maps the outcome to an exit code; the
//! logic lives here so tests and benchmarks call it directly.

/// The plugin's version, as `kubectl capi version` reports it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
