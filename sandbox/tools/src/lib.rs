//! capi-sandbox-tools: what is built on the sandbox rather than part of it — the demo, the two
//! benchmarks (the API server's capacity, the move against its 4-write ceiling) and the
//! `capi-sandbox` binary that runs them and serves sandboxes by hand.

pub mod bench;
pub mod bench_move;
pub mod demo;
