//! Who holds a lease, as people read it and as this machine can check it: a holder that ran on
//! this boot of this machine, in this PID namespace, is known to be gone when its process is
//! (or its PID now belongs to a process started at another time). Anything less certain — another
//! machine, another namespace, a platform without `/proc` — is judged by waiting instead.

use serde::{Deserialize, Serialize};

/// The holder annotation ([`crate::names::LEASE_HOLDER_ANNOTATION`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Holder {
    pub host: String,
    pub pid: u32,
    /// What it runs (`kubectl capi move -n ns1 --rollback`).
    pub command: String,
    /// When it took the Lease (RFC 3339).
    pub since: String,
    /// This boot of the machine (`/proc/sys/kernel/random/boot_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The PID namespace the PID is of (`/proc/self/ns/pid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_namespace: Option<String>,
    /// When the process started, in clock ticks since boot (`/proc/PID/stat`), so that a PID
    /// reused by another process is told apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<u64>,
}

impl Holder {
    /// This process, running `command`.
    pub fn this_process(command: &str) -> Holder {
        let pid = std::process::id();
        Holder {
            host: hostname::get()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "an unknown host".into()),
            pid,
            command: command.to_string(),
            since: super::gate::now(),
            boot_id: machine::boot_id(),
            pid_namespace: machine::pid_namespace(),
            start_time: machine::start_time(pid),
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "`{}` (process {} on {}, since {})",
            self.command, self.pid, self.host, self.since
        )
    }

    /// Why this holder is certainly gone, when it ran on this boot of this machine in this PID
    /// namespace and its process is no longer there; `None` when that cannot be told here.
    pub fn gone_from_this_machine(&self) -> Option<String> {
        let (Some(boot), Some(namespace), Some(started)) =
            (&self.boot_id, &self.pid_namespace, self.start_time)
        else {
            return None;
        };
        if Some(boot) != machine::boot_id().as_ref()
            || Some(namespace) != machine::pid_namespace().as_ref()
        {
            return None;
        }
        let now = machine::start_time(self.pid);
        let exists = match now {
            Some(_) => Some(true),
            None => machine::exists(self.pid),
        };
        verdict(self.pid, started, now, exists, || {
            machine::is_zombie(self.pid)
        })
    }
}

/// Whether process `pid`, started at `started` (clock ticks since boot), has ended: `now` is
/// its start time as `/proc` shows it (`None`: not shown), `exists` the kernel's answer to
/// `kill(pid, 0)`. `/proc` may hide another user's processes (`hidepid=2` on shared hosts):
/// only the kernel's answer that no such process exists says it ended.
fn verdict(
    pid: u32,
    started: u64,
    now: Option<u64>,
    exists: Option<bool>,
    zombie: impl Fn() -> bool,
) -> Option<String> {
    match now {
        None if exists == Some(false) => Some(format!("process {pid} has ended")),
        None => None,
        Some(now) if now != started => Some(format!(
            "process {pid} has ended (its PID now belongs to another process)"
        )),
        Some(_) if zombie() => Some(format!("process {pid} has ended")),
        Some(_) => None,
    }
}

/// What `/proc` tells of this machine (Linux); `None` elsewhere.
mod machine {
    pub fn boot_id() -> Option<String> {
        let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        Some(text.trim().to_string()).filter(|t| !t.is_empty())
    }

    pub fn pid_namespace() -> Option<String> {
        let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
        Some(link.to_string_lossy().into_owned())
    }

    /// The fields of `/proc/PID/stat` after the command name (which may hold spaces and ')').
    fn stat_fields(pid: u32) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after_name = &text[text.rfind(')')? + 1..];
        Some(after_name.split_whitespace().map(str::to_string).collect())
    }

    /// Field 22, `starttime` (the third field is the first after the name).
    pub fn start_time(pid: u32) -> Option<u64> {
        stat_fields(pid)?.get(19)?.parse().ok()
    }

    /// Whether a process of this PID exists, as `kill(pid, 0)` tells: ESRCH is no; success or
    /// EPERM (another user's) is yes; `None` where it cannot be asked.
    pub fn exists(pid: u32) -> Option<bool> {
        #[cfg(unix)]
        {
            let pid = libc::pid_t::try_from(pid).ok()?;
            // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
            let answer = unsafe { libc::kill(pid, 0) };
            if answer == 0 {
                return Some(true);
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::ESRCH) => Some(false),
                Some(libc::EPERM) => Some(true),
                _ => None,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = pid;
            None
        }
    }

    /// Ended but not yet reaped by its parent.
    pub fn is_zombie(pid: u32) -> bool {
        stat_fields(pid).is_some_and(|f| f.first().is_some_and(|state| state == "Z"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_not_gone_and_a_dead_one_on_this_machine_is() {
        let me = Holder::this_process("kubectl capi move");
        if me.boot_id.is_none() {
            // No /proc here: nothing can be told, and nothing is.
            assert_eq!(me.gone_from_this_machine(), None);
            return;
        }
        assert_eq!(me.gone_from_this_machine(), None, "{me:?}");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let started = machine::start_time(pid);
        child.wait().unwrap();
        let dead = Holder {
            pid,
            start_time: started.or(Some(1)),
            ..me.clone()
        };
        assert!(
            dead.gone_from_this_machine()
                .is_some_and(|why| why.contains(&format!("process {pid} has ended"))),
            "{dead:?}"
        );
        let reused = Holder {
            start_time: me.start_time.map(|t| t + 1),
            ..me.clone()
        };
        assert!(reused.gone_from_this_machine().is_some(), "a reused PID");
        let elsewhere = Holder {
            boot_id: Some("another-boot".into()),
            ..dead.clone()
        };
        assert_eq!(
            elsewhere.gone_from_this_machine(),
            None,
            "another machine: wait"
        );
        let older = Holder {
            boot_id: None,
            ..dead
        };
        assert_eq!(
            older.gone_from_this_machine(),
            None,
            "an older holder: wait"
        );
        assert_eq!(machine::exists(1), Some(true), "PID 1 always exists");
        assert_eq!(machine::exists(pid), Some(false), "the reaped child");
    }

    #[test]
    fn a_process_proc_does_not_show_is_gone_only_when_the_kernel_says_so() {
        let zombie = || false;
        // hidepid=2: another user's live process is not in /proc, but it exists (EPERM).
        assert_eq!(verdict(7, 100, None, Some(true), zombie), None);
        // Cannot tell at all: wait.
        assert_eq!(verdict(7, 100, None, None, zombie), None);
        assert!(
            verdict(7, 100, None, Some(false), zombie).is_some(),
            "ESRCH"
        );
        assert!(
            verdict(7, 100, Some(200), Some(true), zombie).is_some(),
            "a reused PID"
        );
        assert!(
            verdict(7, 100, Some(100), Some(true), || true).is_some(),
            "a zombie"
        );
        assert_eq!(verdict(7, 100, Some(100), Some(true), zombie), None);
    }
}
