//! Applying a freeze or its release: minimal merge patches that add or remove only the two
//! annotation keys, with the object's resourceVersion as precondition (a 409 re-reads and decides
//! again), and — for a freeze — passes until no unfrozen scaler is left (a rollout may create a
//! MachineSet between listing and patching).

use std::collections::BTreeSet;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde::Serialize;
use serde_json::{Value, json};

use super::plan::{Action, Target, freeze_action, resume_action, state_of, targets};
use crate::error::{Error, Result};
use crate::kube::retry::{is_conflict, retry_conflicts};
use crate::kube::{Catalog, Cluster};
use crate::model::ObjectRef;
use crate::names::{FROZEN_BY_ANNOTATION, PAUSED_ANNOTATION};
use crate::snapshot::{Fetch, Snapshot};

/// Passes of a freeze before giving up on objects that keep appearing.
const MAX_PASSES: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Freeze,
    Resume,
}

pub use crate::settings::DryRun;

pub struct Request {
    pub mode: Mode,
    pub clusters: Vec<(String, String)>,
    pub keep_remediation: bool,
    pub dry_run: DryRun,
    /// The marker annotation's value: when, by whom, why.
    pub marker: String,
    /// Only these objects (a release of exactly what one command froze); `None`: all.
    pub only: Option<BTreeSet<ObjectRef>>,
}

/// What happened to one object.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub object: ObjectRef,
    pub action: Action,
    /// The `Paused` condition: true/false, or null when the controller reports none.
    pub acknowledged: Option<bool>,
    #[serde(skip)]
    pub autoscaled: bool,
}

/// The marker annotation value.
pub fn marker(identity: &str, reason: Option<&str>, time: &str) -> String {
    let mut value = json!({"at": time, "by": identity});
    if let Some(reason) = reason {
        value["reason"] = json!(reason);
    }
    value.to_string()
}

fn decide(mode: Mode, target: &Target) -> Action {
    match mode {
        Mode::Freeze => freeze_action(target),
        Mode::Resume => resume_action(target),
    }
}

fn annotations_patch(mode: Mode, marker: &str, resource_version: &str) -> Value {
    let annotations = match mode {
        Mode::Freeze => json!({PAUSED_ANNOTATION: "", FROZEN_BY_ANNOTATION: marker}),
        Mode::Resume => json!({PAUSED_ANNOTATION: null, FROZEN_BY_ANNOTATION: null}),
    };
    json!({"metadata": {"resourceVersion": resource_version, "annotations": annotations}})
}

fn api_for(cluster: &Cluster, catalog: &Catalog, object: &ObjectRef) -> Result<Api<DynamicObject>> {
    let info = catalog
        .kind(object.group(), &object.kind)
        .ok_or_else(|| Error::Api {
            context: "patching".into(),
            message: format!("{} is not served", object.kind),
        })?;
    Ok(Api::namespaced_with(
        cluster.client.clone(),
        &object.namespace,
        &info.resource,
    ))
}

/// Patches one object, re-reading and deciding again on conflicts. Returns the action taken.
async fn patch_one(
    cluster: &Cluster,
    catalog: &Catalog,
    request: &Request,
    target: &Target,
) -> Result<Action> {
    let api = api_for(cluster, catalog, &target.object)?;
    let mut params = PatchParams {
        field_manager: Some(crate::names::FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    params.dry_run = request.dry_run == DryRun::Server;
    let name = &target.object.name;
    let mut current = target.clone();
    let written = retry_conflicts(async |attempt| {
        if attempt > 0 {
            let fresh = api.get(name).await?;
            current = Target {
                state: state_of(&fresh),
                resource_version: fresh.metadata.resource_version.clone().unwrap_or_default(),
                ..target.clone()
            };
        }
        let action = decide(request.mode, &current);
        if action.writes() {
            let patch = annotations_patch(request.mode, &request.marker, &current.resource_version);
            api.patch(name, &params, &Patch::Merge(&patch)).await?;
        }
        Ok(action)
    })
    .await;
    written.map_err(|e| match e {
        e if is_conflict(&e) => Error::Api {
            context: format!("patching {}", target.object.kubectl_name()),
            message: "conflicts persisted; try again".into(),
        },
        kube::Error::Api(status) if status.code == 404 => Error::Api {
            context: format!("patching {}", target.object.kubectl_name()),
            message: "it is gone (deleted, or moved to another management cluster, while this command ran); run the command again to act on what is there now".into(),
        },
        e => cluster.api_error(e, &format!("patching {}", target.object.kubectl_name())),
    })
}

/// Runs the freeze or release; every object concerned appears once in the result.
pub async fn run(
    cluster: &Cluster,
    catalog: &Catalog,
    fetch: &Fetch,
    request: &Request,
    listed: Snapshot,
) -> Result<Vec<Outcome>> {
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut seen: BTreeSet<ObjectRef> = BTreeSet::new();
    let mut listed = Some(listed);
    for pass in 0..MAX_PASSES {
        // The first pass works on what the command listed; later ones list again.
        let snapshot = match listed.take() {
            Some(snapshot) => snapshot,
            None => Snapshot::fetch_with(cluster, catalog, fetch).await?,
        };
        let mut wrote = false;
        for (namespace, name) in &request.clusters {
            for target in targets(&snapshot, namespace, name, request.keep_remediation) {
                if seen.contains(&target.object)
                    || request
                        .only
                        .as_ref()
                        .is_some_and(|only| !only.contains(&target.object))
                {
                    continue;
                }
                let action = if request.dry_run == DryRun::Client {
                    decide(request.mode, &target)
                } else {
                    patch_one(cluster, catalog, request, &target).await?
                };
                wrote |= action.writes();
                seen.insert(target.object.clone());
                // A state just written is not acknowledged yet (unless the controller reports no
                // Paused condition at all: then it never will be).
                let acknowledged = if action.writes() {
                    target.paused_condition.map(|_| false)
                } else {
                    target.paused_condition
                };

                outcomes.push(Outcome {
                    object: target.object.clone(),
                    action,
                    acknowledged,
                    autoscaled: target.autoscaled,
                });
            }
        }
        // Dry runs and releases need one pass; a freeze repeats until a pass changes nothing.
        if request.mode == Mode::Resume
            || request.dry_run != DryRun::None
            || !wrote
            || pass + 1 == MAX_PASSES
        {
            break;
        }
    }
    Ok(outcomes)
}
