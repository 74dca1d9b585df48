//! A Machine's status as Cluster API writes it: its conditions, phase, initialization and node
//! reference, from its bootstrap, its infrastructure and its node.

use serde_json::{Value, json};

use super::context::Ctx;
use super::shape::{Cond, Shape};
use super::world::name;

/// A Machine's conditions as Cluster API sets them from its bootstrap, its infrastructure
/// and its node (`None`: none yet; else whether it is healthy).
fn machine_conditions(bootstrap: bool, infrastructure: bool, node: Option<bool>) -> Vec<Cond> {
    let has = node.is_some();
    let healthy = node.unwrap_or(false);
    vec![
        Cond::new(
            "BootstrapConfigReady",
            bootstrap,
            if bootstrap { "Ready" } else { "NotReady" },
            "",
        ),
        Cond::new(
            "InfrastructureReady",
            infrastructure,
            if infrastructure { "Ready" } else { "NotReady" },
            "",
        ),
        Cond::new(
            "NodeReady",
            healthy,
            if healthy {
                "NodeReady"
            } else if has {
                "NodeNotReady"
            } else {
                "NodeDoesNotExist"
            },
            "",
        ),
        Cond::new(
            "NodeHealthy",
            healthy,
            if healthy {
                "NodeHealthy"
            } else if has {
                "NodeNotHealthy"
            } else {
                "NodeDoesNotExist"
            },
            "",
        ),
        Cond::new(
            "Ready",
            healthy,
            if healthy { "Ready" } else { "NotReady" },
            "",
        ),
        Cond::new(
            "Available",
            healthy,
            if healthy { "Available" } else { "NotAvailable" },
            "",
        ),
        Cond::new("UpToDate", true, "UpToDate", ""),
        Cond::new("Deleting", false, "NotDeleting", ""),
    ]
}

pub(super) fn machine_status(
    ctx: &mut Ctx,
    machine: &Value,
    bootstrap: bool,
    infrastructure: bool,
    node: Option<bool>,
) {
    let shape = ctx.shape;
    let time = ctx.time.clone();
    let name_ = name(machine);
    let status = Shape::status_of(machine);
    let has = node.is_some();
    let conds = machine_conditions(bootstrap, infrastructure, node);
    let mut patch = shape.with_conditions(&status, &conds, &time);
    let phase = if has {
        "Running"
    } else if infrastructure {
        "Provisioned"
    } else {
        "Provisioning"
    };
    super::shape::merge(&mut patch, &json!({"phase": phase}));
    if shape.v2() {
        super::shape::merge(
            &mut patch,
            &json!({"initialization": {"bootstrapDataSecretCreated": bootstrap, "infrastructureProvisioned": infrastructure}}),
        );
        if has {
            super::shape::merge(&mut patch, &json!({"nodeRef": {"name": name_}}));
        }
    } else {
        super::shape::merge(
            &mut patch,
            &json!({"bootstrapReady": bootstrap, "infrastructureReady": infrastructure}),
        );
        if has {
            super::shape::merge(
                &mut patch,
                &json!({"nodeRef": {"apiVersion": "v1", "kind": "Node", "name": name_, "uid": format!("node-{name_}")}}),
            );
        }
    }
    ctx.status("Machine", machine, patch);
}
