//! A request to stop writing at the next safe point: Ctrl-C (writes in flight finish and are
//! journalled, no new one starts), or the loss of the lease that lets this command write.

use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// A request to stop at the next safe point (between writes).
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    requested: std::sync::atomic::AtomicBool,
    /// Why the lease was lost, once it was: another command may be writing now.
    lost: Mutex<Option<String>>,
    /// What Ctrl-C does now ([`OnCtrlC`] as a number).
    on_ctrl_c: std::sync::atomic::AtomicU8,
}

/// What Ctrl-C does to a command that holds a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum OnCtrlC {
    /// Ends the work at once (what it did is journalled or idempotent).
    EndAtOnce = 0,
    /// Asks the writes to stop at their next safe point (a move's writes); a second ends it.
    StopAfterWritesInFlight = 1,
    /// The work handles it itself (a verification says how to finish it later).
    LeftToTheWork = 2,
}

impl Stop {
    pub fn request(&self) {
        self.0
            .requested
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn requested(&self) -> bool {
        self.0.requested.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The lease was lost: no new write may start.
    pub fn lose(&self, why: String) {
        self.0.lost.lock().expect("not poisoned").get_or_insert(why);
        self.request();
    }

    /// Why the lease was lost, if it was.
    pub fn lost(&self) -> Option<String> {
        self.0.lost.lock().expect("not poisoned").clone()
    }

    /// Says what Ctrl-C does from now on.
    pub fn on_ctrl_c(&self, what: OnCtrlC) {
        self.0
            .on_ctrl_c
            .store(what as u8, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn ctrl_c(&self) -> OnCtrlC {
        match self.0.on_ctrl_c.load(std::sync::atomic::Ordering::SeqCst) {
            1 => OnCtrlC::StopAfterWritesInFlight,
            2 => OnCtrlC::LeftToTheWork,
            _ => OnCtrlC::EndAtOnce,
        }
    }

    /// `Err` once a stop was requested: the lost lease, else `Interrupted`.
    pub fn check(&self) -> Result<()> {
        if let Some(why) = self.lost() {
            return Err(Error::LeaseLost(why));
        }
        if self.requested() {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }
}
