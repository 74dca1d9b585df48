//! What each write does to the store, with the real apiserver's validation order and answers.
//! Pure over `State`: the HTTP layer parses, calls these under the store lock, and answers.

mod admission;
mod apply;
pub mod context;
mod lease;
mod lifecycle;
mod shape;
pub mod writes;

pub use admission::*;
pub use apply::*;
pub use context::*;
pub use lifecycle::*;
pub use writes::*;
