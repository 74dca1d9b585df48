//! One request: authenticate, route, authorize, inject faults, execute, log.

pub mod dispatch;
mod identity;
mod non_resource;
mod parts;
mod reads;
mod reviews;
mod verbs;
mod writes;

pub use dispatch::*;
