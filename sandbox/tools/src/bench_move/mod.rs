//! `capi-sandbox bench-move`: how fast kubectl-capi moves about 10,000 objects between two
//! sandbox servers over loopback, with a per-write latency standing in for etcd's commit; the
//! same move with one write at a time (clusterctl's way); and the servers' own ceiling for
//! parallel creates and deletes of the same objects with no planning. Figures, not assertions.

mod ceiling;
mod measures;
mod report;
mod servers;
mod timed;

pub use report::run;
pub use servers::{MoveOptions, load_fixture};
pub use timed::{MoveRun, measure_move};
