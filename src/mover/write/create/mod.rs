//! Creating a move's objects in the target, each once its owners exist there: the body (`body`:
//! owners rebuilt with the target's UIDs), one create and what to do with an object already there
//! (`one`), what is still to send (`fresh`, `job`), and all of them in order (`groups`).

mod body;
mod fresh;
mod groups;
mod job;
mod one;
mod terms;

pub use body::target_body;
pub use fresh::Fresh;
pub use groups::create_groups;
pub use one::already_exists;
pub use terms::{Created, Creating};
