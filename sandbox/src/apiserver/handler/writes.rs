//! Writes' own parsing: PATCH bodies by patch type, DELETE options.

use super::parts::*;
use crate::apiserver::ops::{self, DeleteOptions, UpdateKind};
use crate::apiserver::patch::{self, PatchKind};
use crate::apiserver::shared::Shared;
use crate::apiserver::status::{ApiError, ApiResult};
use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;

/// A DELETE's options: its body when it has one (the query's `dryRun` is then ignored, as a
/// real server ignores it), else its query.
#[derive(Debug)]
pub(super) struct Options(pub DeleteOptions, Option<bool>);

impl Options {
    pub(super) fn dry_run(&self, query: &Query) -> bool {
        self.1.unwrap_or_else(|| query.dry_run())
    }
}

pub(super) fn delete_options(body: &Bytes, content_type: &str) -> ApiResult<Options> {
    if body.is_empty() {
        return Ok(Options(DeleteOptions::default(), None));
    }
    let value: Value = if content_type.starts_with(crate::apiserver::protobuf::CONTENT_TYPE) {
        parse_body(body, content_type)?
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?
    };
    let dry_run = value["dryRun"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == "All"));
    Ok(Options(
        DeleteOptions {
            propagation: value["propagationPolicy"].as_str().map(str::to_string),
            precondition_uid: value["preconditions"]["uid"].as_str().map(str::to_string),
            precondition_rv: value["preconditions"]["resourceVersion"]
                .as_str()
                .map(str::to_string),
        },
        Some(dry_run),
    ))
}

/// An apply patch names its field manager, as kube-apiserver requires (422 otherwise).
fn require_field_manager(query: &Query) -> ApiResult<()> {
    if query.get("fieldManager").is_none_or(str::is_empty) {
        return Err(ApiError::invalid(
            "PatchOptions.meta.k8s.io",
            "PatchOptions",
            "meta.k8s.io",
            "",
            vec![crate::apiserver::status::Cause::required(
                "fieldManager",
                "is required for apply patch",
            )],
        ));
    }
    Ok(())
}

/// A JSON, merge or strategic merge patch applied to `working` (an apply patch is not one).
fn apply_patch(kind: PatchKind, working: &mut Value, body: &Bytes) -> ApiResult<()> {
    let decoded = || {
        serde_json::from_slice::<Value>(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
    };
    match kind {
        PatchKind::Json => patch::json(working, body)?,
        PatchKind::Merge => patch::merge(working, &decoded()?),
        PatchKind::Strategic => patch::strategic(working, &decoded()?)?,
        PatchKind::Apply => unreachable!("an apply patch is applied by server_side_apply"),
    }
    Ok(())
}

pub(super) fn patch(
    shared: &Shared,
    target: &Target,
    headers: &HeaderMap,
    query: &Query,
    content_type: &str,
    body: &Bytes,
    warnings: &mut Vec<String>,
) -> ApiResult<Reply> {
    let def = &target.def;
    let version = target.version.as_str();
    let kind = PatchKind::from_content_type(content_type, def.accepts_strategic_merge())?;
    let ctx = write_ctx(shared, target, query, headers);
    let name = target.name.clone().unwrap_or_default();
    let key = (target.namespace.clone().unwrap_or_default(), name.clone());
    let sub = target.subresource.as_deref().filter(|s| *s == "status");
    let mut state = shared.state.lock();
    if kind == PatchKind::Apply {
        require_field_manager(query)?;
        let mut applied = parse_body(body, "application/yaml")?;
        validate_fields(def, &mut applied, query, warnings)?;
        let at = ops::At {
            def,
            version,
            subresource: sub,
        };
        let (object, created) =
            ops::server_side_apply(&mut state, at, &key, applied, query.flag("force"), &ctx)?;
        target.fence(shared, &state, headers, ctx.dry_run);
        let mut answer = ops::at_version(&object, def, version);
        if ctx.dry_run
            && created
            && let Some(meta) = answer["metadata"].as_object_mut()
        {
            meta.remove("resourceVersion");
        }
        return Ok(Reply::Json(if created { 201 } else { 200 }, answer));
    }
    let old = state
        .get(&def.key(), &key)
        .ok_or_else(|| ApiError::not_found(&def.names(), &name))?;
    let is_scale = target.subresource.as_deref() == Some("scale");
    let mut working = if is_scale {
        ops::scale_of(def, version, &old).ok_or_else(ApiError::page_not_found)?
    } else {
        ops::at_version(&old, def, version)
    };
    apply_patch(kind, &mut working, body)?;
    if !is_scale {
        validate_fields(def, &mut working, query, warnings)?;
    }
    if is_scale {
        working =
            ops::apply_scale(def, version, &old, &working).ok_or_else(ApiError::page_not_found)?;
    }
    let at = ops::At {
        def,
        version,
        subresource: sub,
    };
    let updated = ops::update(&mut state, at, &old, working, UpdateKind::Patch, &ctx)?;
    target.fence(shared, &state, headers, ctx.dry_run);
    if is_scale {
        return Ok(Reply::Json(
            200,
            ops::scale_of(def, version, &updated).unwrap_or_default(),
        ));
    }
    Ok(Reply::Json(200, ops::at_version(&updated, def, version)))
}
