//! One create in the target, with the move's mark, and what it does with an object of that name
//! already there; `--restore-status` after it.

use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::kube::Cluster;
use crate::kube::retry::retry_conflicts;
use crate::model::ObjectRef;
use crate::mover::addressing::{Writes, api, params};
use crate::mover::graph::discover::MoveType;
use crate::mover::write::mark::{Proof, appeared};
use crate::names::MOVED_BY_ANNOTATION;

/// What a create does when the target already has an object of that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenExisting {
    /// Keep it as is and use its UID: a global object (shared by design), a restored one.
    Reuse,
    /// It is this move's own copy (made by an earlier attempt, or by this create whose answer
    /// was lost): use its UID and finish it (managedFields).
    Adopt,
    /// `--overwrite-existing`: clusterctl's update (the target's UID and resourceVersion, then a
    /// full replace).
    Overwrite,
    /// It was there before this move: never touch it.
    Refuse,
}

/// clusterctl's update of an object already in the target: its UID and resourceVersion, then a
/// full replace; a conflict (a controller wrote meanwhile) reads it again, a few times.
pub(in crate::mover) async fn overwrite(
    target: &Cluster,
    api: &Api<DynamicObject>,
    object: DynamicObject,
    mut existing: DynamicObject,
    reference: &ObjectRef,
) -> Result<()> {
    let write = PostParams {
        field_manager: Some(crate::names::FIELD_MANAGER.into()),
        ..Default::default()
    };
    let failed = |e| {
        target.api_error(
            e,
            &format!("updating {} in the target", reference.kubectl_name()),
        )
    };
    retry_conflicts(async |attempt| {
        if attempt > 0 {
            existing = api.get(&reference.name).await?;
        }
        let mut replacement = object.clone();
        replacement.metadata.uid = existing.metadata.uid.clone();
        replacement.metadata.resource_version = existing.metadata.resource_version.clone();
        api.replace(&reference.name, &write, &replacement).await
    })
    .await
    .map(|_| ())
    .map_err(failed)
}

/// The refusal for an object that is in the target but not because of this move.
pub fn already_exists(reference: &ObjectRef) -> String {
    format!(
        "{} already exists in the target and was not created by this move; delete it there or pass --overwrite-existing",
        reference.kind_and_place()
    )
}

/// How one create came out: the copy's UID, whether this move made it, whether it carries the
/// move's mark (to be removed once its UID is recorded).
pub(in crate::mover) struct Outcome {
    pub uid: String,
    pub made: bool,
    pub marked: bool,
}

/// Creates one object in the target with this move's mark (an existing one as `when_existing`
/// says: one of that name is taken for this move's own only with proof).
pub(in crate::mover) async fn create_one(
    target: &Cluster,
    t: &MoveType,
    when_existing: WhenExisting,
    mut body: Value,
    proof: &Proof,
    reference: &ObjectRef,
) -> Result<Outcome> {
    let name = &reference.name;
    let namespace = if t.info.namespaced {
        reference.namespace.as_str()
    } else {
        ""
    };
    if !proof.mark.is_empty() {
        let meta = &mut body["metadata"];
        if !meta["annotations"].is_object() {
            meta["annotations"] = json!({});
        }
        meta["annotations"][MOVED_BY_ANNOTATION] = json!(proof.mark);
    }
    let writes = Writes::new(target, &t.resource, namespace);
    let write = PostParams {
        field_manager: Some(crate::names::FIELD_MANAGER.into()),
        ..Default::default()
    };
    match writes.create(&body, &write).await {
        Ok(created) => Ok(Outcome {
            uid: created.metadata.uid.unwrap_or_default(),
            made: true,
            marked: !proof.mark.is_empty(),
        }),
        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
            let target_api = api(target, &t.resource, namespace);
            let existing = target_api.get(name).await.map_err(|e| {
                target.api_error(
                    e,
                    &format!("reading {} in the target", reference.kubectl_name()),
                )
            })?;
            let uid = existing.metadata.uid.clone().unwrap_or_default();
            match when_existing {
                WhenExisting::Reuse => Ok(Outcome {
                    uid,
                    made: false,
                    marked: false,
                }),
                WhenExisting::Refuse => Err(Error::Refused(vec![already_exists(reference)])),
                WhenExisting::Adopt => match proof.proves(&existing, &body) {
                    (true, marked) => Ok(Outcome {
                        uid,
                        made: true,
                        marked,
                    }),
                    (false, _) => Err(Error::Refused(vec![appeared(reference)])),
                },
                WhenExisting::Overwrite => {
                    let object: DynamicObject = serde_json::from_value(body).expect("valid body");
                    overwrite(target, &target_api, object, existing, reference).await?;
                    Ok(Outcome {
                        uid,
                        made: false,
                        marked: !proof.mark.is_empty(),
                    })
                }
            }
        }
        Err(e) => Err(target.api_error(
            e,
            &format!("creating {} in the target", reference.kubectl_name()),
        )),
    }
}

/// `--restore-status`: replays an object's `.status` through the status subresource.
pub(in crate::mover) async fn restore_status(
    target: &Cluster,
    t: &MoveType,
    reference: &ObjectRef,
    namespace: &str,
    status: Value,
) -> Result<()> {
    Writes::new(target, &t.resource, namespace)
        .merge_patch_status(&reference.name, &json!({"status": status}), &params(false))
        .await
        .map_err(|e| {
            target.api_error(
                e,
                &format!("restoring the status of {}", reference.kubectl_name()),
            )
        })?;
    Ok(())
}
