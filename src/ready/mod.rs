//! `kubectl capi ready`: can these clusters be moved now, and if not, exactly what blocks.

pub mod evaluate;
mod next_steps;
pub mod render;
pub mod report;
pub mod request;
mod scaling;
mod scope;
pub mod wait;

pub use evaluate::{CheckId, CheckStatus, Options, evaluate};
