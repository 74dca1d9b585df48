//! The verbs on one object or collection: get, create, update, delete, delete a collection.

use super::parts::*;
use super::reviews::*;
use super::writes::*;
use crate::apiserver::ops::{self, Deleted, UpdateKind};
use crate::apiserver::resources::Flavor;
use crate::apiserver::shared::Shared;
use crate::apiserver::status::{ApiError, ApiResult, success_status};
use bytes::Bytes;
use http::HeaderMap;
use serde_json::{Value, json};
use std::sync::Arc;

/// What one request carries into the verb that serves it.
pub(super) struct Call<'a> {
    pub(super) shared: &'a Arc<Shared>,
    pub(super) user: &'a User,
    pub(super) target: &'a Target,
    pub(super) headers: &'a HeaderMap,
    pub(super) query: &'a Query,
    pub(super) content_type: &'a str,
    pub(super) body: &'a Bytes,
}

/// GET: the object at the version asked for, or its scale.
pub(super) fn get(call: &Call<'_>) -> ApiResult<Reply> {
    let Call { shared, target, .. } = call;
    let (def, version) = (&target.def, target.version.as_str());
    let object = shared
        .state
        .lock()
        .get(&def.key(), &target.key())
        .ok_or_else(|| ApiError::not_found(&def.names(), target.name.as_deref().unwrap_or("")))?;
    if target.subresource.as_deref() == Some("scale") {
        return Ok(Reply::Json(
            200,
            ops::scale_of(def, version, &object).ok_or_else(ApiError::page_not_found)?,
        ));
    }
    Ok(Reply::Json(200, ops::at_version(&object, def, version)))
}

/// POST: a create (or an access review, answered at once).
pub(super) fn create(call: &Call<'_>, warnings: &mut Vec<String>) -> ApiResult<Reply> {
    let Call {
        shared,
        user,
        target,
        headers,
        query,
        content_type,
        body,
        ..
    } = call;
    let (def, version) = (&target.def, target.version.as_str());
    let mut object = parse_body(body, content_type)?;
    validate_fields(def, &mut object, query, warnings)?;
    if def.flavor == Flavor::Review {
        let ctx = write_ctx(shared, target, query, headers);
        return Ok(Reply::Json(201, review(shared, user, def, object, &ctx)));
    }
    let ctx = write_ctx(shared, target, query, headers);
    let mut state = shared.state.lock();
    let created = ops::create(
        &mut state,
        def,
        version,
        target.namespace.as_deref(),
        object,
        &ctx,
        false,
    )?;
    target.fence(shared, &state, headers, ctx.dry_run);
    drop(state);
    let mut answer = ops::at_version(&created, def, version);
    if ctx.dry_run
        && let Some(meta) = answer["metadata"].as_object_mut()
    {
        meta.remove("resourceVersion");
    }
    Ok(Reply::Json(201, answer))
}

/// PUT: an update of the object, its status or its scale.
pub(super) fn update(call: &Call<'_>, warnings: &mut Vec<String>) -> ApiResult<Reply> {
    let Call {
        shared,
        target,
        headers,
        query,
        content_type,
        body,
        ..
    } = call;
    let (def, version) = (&target.def, target.version.as_str());
    let mut new = parse_body(body, content_type)?;
    validate_fields(def, &mut new, query, warnings)?;
    let ctx = write_ctx(shared, target, query, headers);
    let mut state = shared.state.lock();
    let old = state
        .get(&def.key(), &target.key())
        .ok_or_else(|| ApiError::not_found(&def.names(), target.name.as_deref().unwrap_or("")))?;
    let new = if target.subresource.as_deref() == Some("scale") {
        ops::apply_scale(def, version, &old, &new).ok_or_else(ApiError::page_not_found)?
    } else {
        new
    };
    let sub = target.subresource.as_deref().filter(|s| *s == "status");
    let at = ops::At {
        def,
        version,
        subresource: sub,
    };
    let updated = ops::update(&mut state, at, &old, new, UpdateKind::Put, &ctx)?;
    target.fence(shared, &state, headers, ctx.dry_run);
    if target.subresource.as_deref() == Some("scale") {
        return Ok(Reply::Json(
            200,
            ops::scale_of(def, version, &updated).unwrap_or_default(),
        ));
    }
    Ok(Reply::Json(200, ops::at_version(&updated, def, version)))
}

/// DELETE: removed at once, or marked for deletion while finalizers remain.
pub(super) fn delete(call: &Call<'_>) -> ApiResult<Reply> {
    let Call {
        shared,
        target,
        headers,
        query,
        content_type,
        body,
        ..
    } = call;
    let (def, version) = (&target.def, target.version.as_str());
    let options = delete_options(body, content_type)?;
    let dry_run = options.dry_run(query);
    let mut state = shared.state.lock();
    let deleted = ops::delete(
        &mut state,
        def,
        &target.key(),
        &options.0,
        dry_run,
        &ops::now(),
    )?;
    target.fence(shared, &state, headers, dry_run);
    match deleted {
        Deleted::Removed(object) => Ok(Reply::Json(
            200,
            success_status(
                &def.names(),
                target.name.as_deref().unwrap_or(""),
                object["metadata"]["uid"].as_str().unwrap_or(""),
            ),
        )),
        Deleted::Pending(object) => Ok(Reply::Json(200, ops::at_version(&object, def, version))),
    }
}

/// DELETE of a collection: every object the selectors match.
pub(super) fn delete_collection(call: &Call<'_>) -> ApiResult<Reply> {
    let Call {
        shared,
        target,
        headers,
        query,
        content_type,
        body,
        ..
    } = call;
    let (def, version) = (&target.def, target.version.as_str());
    let (labels, fields) = selectors(def, query)?;
    let options = delete_options(body, content_type)?;
    let dry_run = options.dry_run(query);
    let mut state = shared.state.lock();
    let matching: Vec<Arc<Value>> = state
        .list(&def.key(), target.namespace.as_deref())
        .into_iter()
        .filter(|o| labels.matches_object(o) && fields.matches_object(o))
        .collect();
    let time = ops::now();
    let mut items = Vec::new();
    for object in matching {
        let k = ops::obj_key(&object);
        if ops::delete(&mut state, def, &k, &options.0, dry_run, &time).is_ok() {
            items.push(ops::at_version(&object, def, version));
        }
    }
    if !items.is_empty() {
        target.fence(shared, &state, headers, dry_run);
    }
    Ok(Reply::Json(
        200,
        json!({"apiVersion": def.api_version(version), "items": items, "kind": def.list_kind,
        "metadata": {"continue": "", "resourceVersion": state.rv.to_string()}}),
    ))
}
