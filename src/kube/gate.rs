//! The write gate: every write a client sends passes it just before it goes out (below the
//! retry layer, so a retry is checked too). A cluster reached through a kubeconfig lets writes
//! through only while this process can prove it holds the cluster's lease — its last renewal
//! was sent less than the renew deadline ago, on a clock that counts suspended time and never
//! jumps ([`Stamp`]) — so a
//! holder that was stopped, slept or lost its lease sends nothing more. Reads, dry runs, access
//! reviews and the lease's own requests pass.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::stop::Stop;

/// A moment on a clock that never jumps and counts the time the machine was suspended or the
/// process stopped: `CLOCK_BOOTTIME` where the platform has it (Linux), else the monotonic
/// clock. A step of the wall clock (NTP, a VM resumed) changes nothing: neither a holder's
/// deadline nor a taker's "unchanged for a whole duration" is counted on it.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    since_boot: Duration,
}

impl Stamp {
    pub fn now() -> Stamp {
        Stamp {
            since_boot: since_boot(),
        }
    }

    pub fn elapsed(&self) -> Duration {
        since_boot().saturating_sub(self.since_boot)
    }

    /// Milliseconds since boot, as a Lease records a renewal's stamp for a taker on this host.
    pub fn millis(&self) -> u64 {
        u64::try_from(self.since_boot.as_millis()).unwrap_or(u64::MAX)
    }

    pub fn from_millis(millis: u64) -> Stamp {
        Stamp {
            since_boot: Duration::from_millis(millis),
        }
    }
}

/// Time since boot, suspended time included, where the platform tells it; else time on the
/// monotonic clock since this process first asked.
fn since_boot() -> Duration {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid timespec to write into.
        if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut now) } == 0 {
            return Duration::new(
                u64::try_from(now.tv_sec).unwrap_or_default(),
                u32::try_from(now.tv_nsec).unwrap_or_default(),
            );
        }
    }
    static FIRST: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    FIRST.get_or_init(Instant::now).elapsed()
}

/// Proof of holding one cluster's lease: when its last successful renewal was sent.
#[derive(Debug)]
pub struct Guard {
    url: String,
    /// The lease's `holderIdentity` this process wrote: what each guarded write names.
    identity: String,
    renewed: Mutex<Stamp>,
    /// How long after a renewal was sent it proves the lease held: well inside the lease's
    /// duration, so that whoever may take it over after a whole duration never meets a write.
    deadline: Duration,
    lost: Mutex<Option<String>>,
    stop: Stop,
}

impl Guard {
    /// Held as `identity` since `sent` (when the request that took it was sent).
    pub fn new(
        (url, identity): (&str, &str),
        sent: Stamp,
        deadline: Duration,
        stop: &Stop,
    ) -> Arc<Guard> {
        Arc::new(Guard {
            url: url.to_string(),
            identity: identity.to_string(),
            renewed: Mutex::new(sent),
            deadline,
            lost: Mutex::new(None),
            stop: stop.clone(),
        })
    }

    /// A renewal sent at `sent` was answered: the lease is proved held from then.
    pub fn renewed(&self, sent: Stamp) {
        *self.renewed.lock().expect("not poisoned") = sent;
    }

    /// How long since the last proof.
    pub fn age(&self) -> Duration {
        self.renewed.lock().expect("not poisoned").elapsed()
    }

    /// The stop the loss of this lease requests.
    pub fn stop(&self) -> Stop {
        self.stop.clone()
    }

    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The lease is lost for good (`why`), and the command's writes stop.
    pub fn lose(&self, why: String) {
        self.lost
            .lock()
            .expect("not poisoned")
            .get_or_insert(why.clone());
        self.stop.lose(why);
    }

    /// How long writes may still go out: what is left of the renew deadline (`Err` as
    /// [`check`](Self::check)).
    pub fn remaining(&self) -> Result<Duration, String> {
        self.check()?;
        Ok(self.deadline.saturating_sub(self.age()))
    }

    /// `Err(why)` once the lease cannot be proved held: lost, or the deadline passed since the
    /// last renewal was sent (then it is lost from now on, even if a renewal succeeds later).
    pub fn check(&self) -> Result<(), String> {
        if let Some(why) = self.lost.lock().expect("not poisoned").clone() {
            return Err(why);
        }
        let age = self.age();
        if age >= self.deadline {
            self.lose(format!(
                "lost the lease {}/{} of the cluster at {} at {}: it was last renewed {}s ago, past its renew deadline of {}s (was this process stopped, or the machine asleep?), so another command may have taken it over",
                crate::names::LEASE_NAMESPACE,
                crate::names::LEASE_NAME,
                self.url,
                now(),
                age.as_secs(),
                self.deadline.as_secs()
            ));
            return self.check();
        }
        Ok(())
    }
}

/// Now, to the second, as messages give times.
pub fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Whether writes to one cluster may go out.
#[derive(Debug, Clone)]
enum State {
    /// A client built around an existing one (in-process tests): not guarded.
    Unguarded,
    /// No lease held by this process: a write would be a bug.
    NotHeld,
    Held(Arc<Guard>),
}

/// The gate of one cluster's client, shared by every clone of it.
#[derive(Debug, Clone)]
pub struct WriteGate(Arc<Mutex<State>>);

impl WriteGate {
    /// Writes pass only while the lease is held.
    pub fn guarded() -> WriteGate {
        WriteGate(Arc::new(Mutex::new(State::NotHeld)))
    }

    pub fn unguarded() -> WriteGate {
        WriteGate(Arc::new(Mutex::new(State::Unguarded)))
    }

    pub fn hold(&self, guard: Arc<Guard>) {
        *self.0.lock().expect("not poisoned") = State::Held(guard);
    }

    /// The lease was given up: no more writes.
    pub fn release(&self) {
        let mut state = self.0.lock().expect("not poisoned");
        if !matches!(*state, State::Unguarded) {
            *state = State::NotHeld;
        }
    }

    /// `Err(why)` once this process held the lease and cannot prove it any more: what it writes
    /// locally for the move (its journal) is written only while its writes may go out.
    pub fn held(&self) -> Result<(), String> {
        let state = self.0.lock().expect("not poisoned").clone();
        match state {
            State::Held(guard) => guard.check(),
            State::Unguarded | State::NotHeld => Ok(()),
        }
    }

    /// Whether a request may be sent now, and for a guarded write how long its attempt may
    /// last: no longer than what is left of the renew deadline, so that no write admitted before
    /// the deadline lands after it (a taker waits a whole duration, more than the deadline).
    pub fn admit(
        &self,
        method: &http::Method,
        uri: &http::Uri,
    ) -> Result<Option<Admitted>, String> {
        if !is_write(method, uri) {
            return Ok(None);
        }
        let state = self.0.lock().expect("not poisoned").clone();
        match state {
            State::Unguarded => Ok(None),
            State::Held(guard) => guard.remaining().map(|left| {
                Some(Admitted {
                    left,
                    holder: guard.identity.clone(),
                })
            }),
            State::NotHeld => Err(format!(
                "{method} {} was not sent: this command holds no lease of that cluster (a bug in kubectl-capi; please report it)",
                uri.path()
            )),
        }
    }
}

/// A guarded write let through: how long its attempt may last, and the holder it names
/// ([`crate::names::LEASE_HOLDER_HEADER`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    pub left: Duration,
    pub holder: String,
}

/// A request that changes state: not a read, a dry run, an access review, or the lease's own.
fn is_write(method: &http::Method, uri: &http::Uri) -> bool {
    let reads = [http::Method::GET, http::Method::HEAD, http::Method::OPTIONS];
    if reads.contains(method) {
        return false;
    }
    // The lease's own group, and the reviews that only ask.
    let exempt = [
        crate::names::LEASE_GROUP,
        "authorization.k8s.io",
        "authentication.k8s.io",
    ];
    let group = uri
        .path()
        .strip_prefix("/apis/")
        .and_then(|rest| rest.split('/').next());
    if group.is_some_and(|group| exempt.contains(&group)) {
        return false;
    }
    // A real server ignores a DELETE's `dryRun` query beside a DeleteOptions body (the body's
    // own `dryRun` decides), so a DELETE is a write whatever its query says.
    let dry_run = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "dryRun=All"));
    !dry_run || method == http::Method::DELETE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(text: &str) -> http::Uri {
        text.parse().unwrap()
    }

    #[test]
    fn only_writes_are_gated() {
        let gate = WriteGate::guarded();
        let patch = http::Method::PATCH;
        assert!(
            gate.admit(&patch, &uri("/api/v1/namespaces/a/secrets/s"))
                .is_err()
        );
        assert!(
            gate.admit(&http::Method::GET, &uri("/api/v1/secrets"))
                .is_ok()
        );
        assert!(
            gate.admit(
                &http::Method::DELETE,
                &uri("/api/v1/namespaces/a/secrets/s?dryRun=All")
            )
            .is_err(),
            "a DELETE's dryRun query does not make it a dry run"
        );
        for free in [
            "/api/v1/namespaces/a/secrets?dryRun=All",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubectl-capi",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        ] {
            assert!(
                gate.admit(&http::Method::POST, &uri(free)).is_ok(),
                "{free}"
            );
        }
        assert!(
            WriteGate::unguarded()
                .admit(&patch, &uri("/api/v1/namespaces/a/secrets/s"))
                .is_ok()
        );
        let stop = Stop::default();
        let deadline = Duration::from_secs(40);
        gate.hold(Guard::new(
            ("https://a", "me"),
            Stamp::now(),
            deadline,
            &stop,
        ));
        let admitted = gate
            .admit(&patch, &uri("/api/v1/namespaces/a/secrets/s"))
            .unwrap()
            .expect("a guarded write");
        assert_eq!(
            admitted.holder, "me",
            "it names the holder it is sent under"
        );
        assert!(admitted.left <= deadline);
    }

    #[test]
    fn a_guard_past_its_deadline_is_lost_for_good_and_stops_the_writes() {
        let stop = Stop::default();
        let long_ago = Stamp {
            since_boot: since_boot().saturating_sub(Duration::from_secs(50)),
        };
        let guard = Guard::new(
            ("https://a", "me"),
            long_ago,
            Duration::from_secs(40),
            &stop,
        );
        let gate = WriteGate::guarded();
        gate.hold(guard.clone());
        let why = gate
            .admit(
                &http::Method::DELETE,
                &uri("/api/v1/namespaces/a/secrets/s"),
            )
            .unwrap_err();
        assert!(why.contains("past its renew deadline of 40s"), "{why}");
        assert!(stop.lost().is_some(), "the writes hear of it");
        guard.renewed(Stamp::now());
        assert!(
            guard.check().is_err(),
            "a late renewal does not bring it back"
        );
    }

    #[test]
    fn elapsed_time_is_on_a_clock_that_never_jumps() {
        let earlier = Stamp {
            since_boot: since_boot().saturating_sub(Duration::from_secs(120)),
        };
        assert!(earlier.elapsed() >= Duration::from_secs(120));
        // Nothing of it reads the wall clock: its steps (NTP, a VM resumed) cannot move it.
        let source = include_str!("gate.rs");
        let wall = ["System", "Time::"].concat();
        assert!(!source.contains(&wall), "the wall clock is not read");
        #[cfg(target_os = "linux")]
        {
            // CLOCK_BOOTTIME: never behind the monotonic clock (it adds suspended time).
            let boot = since_boot();
            let mut monotonic = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: a valid timespec to write into.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut monotonic) };
            assert!(boot.as_secs() >= u64::try_from(monotonic.tv_sec).unwrap());
        }
    }
}
