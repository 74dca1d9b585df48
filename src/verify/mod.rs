//! Proof that a move took: the moved Clusters as the source had them (names and IDs only), and a
//! pure evaluation of the target and the source against that record. The watch that drives it
//! and the command that prints it are the imperative shell; this is the functional core.

pub mod checks;
pub mod record;
pub mod report;
pub mod request;

pub use checks::ClusterVerification;
pub use record::*;
pub use report::*;
