//! A request to stop a move at its next safe point (Ctrl-C): writes in flight finish and are
//! journalled, no new one starts.

use std::sync::Arc;

use crate::error::{Error, Result};

/// A request to stop at the next safe point (between writes).
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<std::sync::atomic::AtomicBool>);

impl Stop {
    pub fn request(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn requested(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// `Err(Interrupted)` once a stop was requested.
    pub fn check(&self) -> Result<()> {
        if self.requested() {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }
}
