//! Errors users see: one line that names the problem and the fix (`message`), about a cluster
//! named as messages name it (`server`), with what came back instead of an answer (`answers`)
//! and how a kube error is classified (`classify`).

mod answers;
mod classify;
mod message;
mod server;

pub use answers::{Denials, ForeignAnswer, NOT_A_STATUS, NoAnswer, NotHeld};
pub use message::{Error, Result, yaml_problem};
pub use server::{End, Server, TlsFault};
