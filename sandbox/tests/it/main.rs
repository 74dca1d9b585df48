//! The sandbox's own test binary: conformance of the in-memory API server with the real
//! kube-apiserver's answers, through kube-rs (in-process and over HTTP) and through real kubectl.

mod answers;
mod common;
mod controllers;
mod kube_rs;
mod kubectl;
mod metadata_lists;
mod semantics;
mod server;
