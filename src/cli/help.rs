//! What each command's help says after its flags: the long texts, the examples and the exit codes.

use crate::names::{FROZEN_BY_ANNOTATION, PAUSED_ANNOTATION};
use crate::output::ExitStatus;

/// Each subcommand's examples, as kubectl ends its help: `# what` then the command.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "ready",
        "  # Can the Clusters of namespace prod be moved now, and if not, what blocks?
  kubectl capi ready -n prod

  # Every check of one Cluster
  kubectl capi ready prod-1 -n prod --details

  # Wait until it can be moved, at most 30 minutes
  kubectl capi ready prod-1 -n prod --wait --timeout 30m

  # Also check the target of a self-hosted pivot: the workload cluster prod-1 itself
  kubectl capi ready prod-1 -n prod --to-cluster prod-1",
    ),
    (
        "pause",
        "  # Freeze one Cluster's scaling, saying why, until its controllers acknowledge
  kubectl capi pause prod-1 -n prod --reason \"move to mgmt-2\" --wait

  # See what freezing every Cluster of the namespace would change, without changing it
  kubectl capi pause --all -n prod --dry-run",
    ),
    (
        "resume",
        "  # Release the freeze in the management cluster the Cluster now lives in
  kubectl capi resume prod-1 -n prod --context mgmt-2

  # Release every freeze kubectl-capi made in the namespace
  kubectl capi resume --all -n prod",
    ),
    (
        "move",
        "  # The plan: what would move, in which order
  kubectl capi move prod-1 -n prod --to-context mgmt-2 --dry-run

  # Every check against the target, nothing written
  kubectl capi move prod-1 -n prod --to-context mgmt-2 --dry-run=server

  # Freeze, wait until it can move, move, release the freeze and verify, in one command
  kubectl capi move prod-1 -n prod --to-context mgmt-2 --freeze --wait-ready --verify

  # Continue a move that stopped partway, or undo it
  kubectl capi move prod-1 -n prod --to-context mgmt-2 --resume
  kubectl capi move prod-1 -n prod --to-context mgmt-2 --rollback

  # Move a Cluster into itself (the quick start's self-hosted pivot)
  kubectl capi move prod-1 -n prod --to-cluster prod-1 --verify",
    ),
    (
        "verify",
        "  # Did the target adopt the Clusters moved into namespace prod? Wait until it did
  kubectl capi verify -n prod --context mgmt-2 --wait

  # Also check that nothing of prod-1 was left in the management cluster it left
  kubectl capi verify prod-1 -n prod --context mgmt-2 --from-context mgmt-1",
    ),
    (
        "version",
        "  # The plugin's version and the management cluster's Cluster API version
  kubectl capi version

  # The plugin's version only, without a cluster
  kubectl capi version --client",
    ),
];

/// What the exit codes mean for each command, where it says them its own way (the rest, and
/// the codes themselves, come from `output::ExitStatus`): `(command, code, meaning)`.
pub const EXIT_MEANINGS: &[(&str, u8, &str)] = &[
    (
        "",
        0,
        "success (for ready: every selected cluster can be moved)",
    ),
    ("ready", 0, "every selected cluster can be moved"),
    ("ready", 1, "at least one cannot (or --wait timed out)"),
    (
        "ready",
        2,
        "error: bad input, API error, no clusters matched",
    ),
    ("pause", 0, "done"),
    (
        "pause",
        1,
        "--wait timed out, another command holds the lease, or a permission is missing",
    ),
    ("resume", 0, "done"),
    (
        "resume",
        1,
        "--wait timed out, another command holds the lease, or a permission is missing",
    ),
    ("move", 0, "moved (and verified, with --verify)"),
    (
        "move",
        1,
        "refused by the preflight (nothing written), or --verify failed or timed out",
    ),
    ("verify", 0, "every Cluster verified"),
    (
        "verify",
        1,
        "a check failed, or checks are still pending (with --wait: when the timeout passed)",
    ),
    (
        "verify",
        2,
        "error: bad input, no record of a move, unreachable API server",
    ),
];

pub const COMPLETION_HELP: &str = "Examples:
  # Complete `kubectl capi <TAB>` in kubectl's own completion (kubectl >= 1.26), installed with krew
  # or not: put the completer in a directory on your PATH outside krew's
  mkdir -p ~/.local/bin
  kubectl capi completion kubectl > ~/.local/bin/kubectl_complete-capi
  chmod +x ~/.local/bin/kubectl_complete-capi

  # On Windows, a .cmd file in a directory on your PATH (kubectl finds it through PATHEXT)
  kubectl capi completion kubectl > %USERPROFILE%\\bin\\kubectl_complete-capi.cmd

  # A stand-alone script for the kubectl-capi executable itself
  kubectl-capi completion bash > /etc/bash_completion.d/kubectl-capi";

pub const READY_HELP: &str =
    "Checks, per Cluster: clusterctl move's own preflight (infrastructure provisioned, control
plane initialized, every Machine has a node — with clusterctl's messages), and what clusterctl
misses: Machines being deleted, scaling in progress (blocking until `kubectl capi pause` freezes
it), MachineHealthCheck remediation, paused Clusters/ClusterClasses, dangling owner references,
block-move annotations (information), node health and autoscaled groups (warnings).

Target-side checks (providers, CRDs and permissions in the destination) belong to
`kubectl capi move --dry-run=server`.";

pub const MOVE_HELP: &str =
    "Moves the named Clusters (default: every Cluster in the namespace; -A: all namespaces) and
what they own, with clusterctl move's object graph, order and checks. Every check runs before the
first write: clusterctl's preflight and ready's, paused Clusters/ClusterClasses, kinds served by
the target, the target's provider versions, permissions in both clusters (access reviews), and a
server-side dry-run create of every object in the target. Objects shared with Clusters that stay
are copied and kept in the source; objects that cannot move are listed with the reason.

--dry-run (=client) prints the plan; --dry-run=server also runs the whole preflight.

--verify then watches the target adopt the moved Clusters (see `kubectl capi verify --help`).";

pub const VERIFY_HELP: &str =
    "Run against the management cluster the Clusters were moved to. For each moved Cluster it
checks that the target adopted it: the same Machines with the same providerIDs as in the source
(a new Machine means the target's controllers are provisioning new infrastructure instead of
adopting; a missing one means something deleted it), infrastructure machines with the same
providerIDs, the control plane and MachineDeployments/MachinePools at the replicas they reported
before the move, and the Cluster healthy (Available; v1beta1: Ready). With --from-context or
--from-kubeconfig it also checks that nothing of the Clusters is left in the source.

What was moved comes from the record each move leaves next to its Cluster in the target
(ConfigMap kubectl-capi-moved-NAME, owned by the Cluster), or from a move's journal (--journal).";

/// What `pause --help` says after the flags.
pub fn pause_help() -> String {
    format!(
        "Puts {PAUSED_ANNOTATION} on exactly the objects that create or delete Machines: the
control plane object, every MachineDeployment and MachineSet, every MachinePool and its
infrastructure machine pool, and the Cluster's MachineHealthChecks (unless --keep-remediation).
Machines already being provisioned go on until they have their node. Never touches
Cluster.spec.paused, Machines, bootstrap configs or infrastructure machines. Each frozen object
also gets the {FROZEN_BY_ANNOTATION} marker (when, by whom, why); objects paused by someone else
are reported and left as they are."
    )
}

/// What `resume --help` says after the flags.
pub fn resume_help() -> String {
    format!(
        "Removes {PAUSED_ANNOTATION} and the {FROZEN_BY_ANNOTATION} marker from the objects that
carry the marker — only what `kubectl capi pause` froze. Works against the source after an aborted
move and against the target after a move (the annotations travel with the objects)."
    )
}

/// `command` (the plugin's, with its subcommands) with every help ending in its exit codes and
/// examples.
pub fn with_exit_codes(mut command: clap::Command) -> clap::Command {
    let for_command = |name: &str| -> Vec<(u8, &'static str)> {
        EXIT_MEANINGS
            .iter()
            .filter(|(c, _, _)| *c == name)
            .map(|(_, code, meaning)| (*code, *meaning))
            .collect()
    };
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .filter(|name| !matches!(name.as_str(), "version" | "completion" | "help"))
        .collect();
    for name in names {
        command = command.mut_subcommand(&name, |sub| {
            let text = sub
                .get_after_help()
                .map(|h| format!("{h}\n\n"))
                .unwrap_or_default();
            let codes = ExitStatus::help(&for_command(&name));
            sub.after_help(format!("{text}{codes}"))
        });
    }
    // kubectl's help ends with its examples.
    for (name, examples) in EXAMPLES {
        command = command.mut_subcommand(name, |sub| {
            let text = sub
                .get_after_help()
                .map(|h| format!("{h}\n\n"))
                .unwrap_or_default();
            sub.after_help(format!("{text}Examples:\n{examples}"))
        });
    }
    command.after_help(ExitStatus::help(&for_command("")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exit_meaning_is_a_code_the_plugin_returns_within_a_line() {
        for (command, code, meaning) in EXIT_MEANINGS {
            assert!(
                ExitStatus::ALL.iter().any(|s| s.code() == *code),
                "{command}: {code} is a code the plugin returns"
            );
            assert!(meaning.len() + 7 <= 100, "{meaning}: clap would wrap it");
        }
    }
}
