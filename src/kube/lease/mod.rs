//! One writer at a time: a `coordination.k8s.io/v1` Lease (`kube-system/kubectl-capi`) that every
//! command writing for a move takes in every cluster it writes to, before its first write, and
//! holds to its end.
//!
//! Taken and kept as client-go's leader election does it, so that no clock but the holder's own
//! decides anything: a free Lease is created (or a released one taken, conditional on the
//! resourceVersion read). One held by another command is watched: if its record changes (its
//! holder renewed it) that command is alive and this one is refused, naming it; if it stays the
//! same for a whole duration as this command watches it, its holder is gone and it is taken
//! over — never by comparing another host's `renewTime` with the local clock. A holder on this
//! machine whose process is gone is taken over at once ([`Holder::gone_from_this_machine`]).
//!
//! The holder renews every twelfth of the duration and proves the Lease held only until its
//! renew deadline (two thirds of the duration) after its last successful renewal was *sent*,
//! measured on a clock that counts suspended time; past it, the Lease is lost for good and the
//! write gate ([`super::gate`]) lets no write of this command out — a third of the duration
//! before anyone may take it over.

mod found;
mod held;
mod leases;
mod record;

pub use super::holder::Holder;
pub use found::{Tell, ensure_free};
pub use held::{Held, take};
pub use leases::Leases;
pub use record::refusal;
