//! A move's writes, each journalled, in the order clusterctl's `move()` gives them
//! (`execute`): pause, create, delete, unpause; the namespaces
//! it makes, the mark on its copies and the verification records it leaves in the target.

pub mod create;
pub mod delete;
pub mod execute;
pub mod mark;
pub mod namespaces;
pub mod pause;
pub mod record;
