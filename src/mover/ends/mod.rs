//! The two clusters of a move: connected, discovered and identified once (`both`), never one
//! cluster twice (`same_cluster`), and a workload cluster reached through its kubeconfig Secret
//! for a self-hosted pivot (`workload`).

pub mod both;
pub mod same_cluster;
pub mod workload;
