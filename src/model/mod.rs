//! One normalised read model of Cluster API objects in either API dialect (v1beta1 ≤ CAPI 1.10,
//! v1beta2 ≥ 1.11), read from raw JSON. No typed CRD structs: providers and versions vary.

pub mod cluster;
pub mod conditions;
pub mod kinds;
pub mod machine;
pub mod object;
pub mod scalers;
pub mod status_read;

pub use cluster::{ClusterClassView, ClusterView};
pub use machine::MachineView;
pub use scalers::{HealthCheckView, ScalerKind, ScalerView};

pub use object::*;
