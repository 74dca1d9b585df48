//! Creating and updating an object in the store, in the real apiserver's order: admission,
//! shape, the write itself (and a CRD's establishment).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::apiserver::fields::{self, Scope, Writer};
use crate::apiserver::resources::{Flavor, ResourceDef};
use crate::apiserver::status::{ApiError, ApiResult, Cause};
use crate::apiserver::store::{ObjKey, State};

use super::admission::*;
use super::context::*;
use super::lease;
use super::lifecycle::*;
use super::shape::*;

/// POST: a new object. `keep_status` is for fixtures loaded by tests (a real create drops status).
pub fn create(
    state: &mut State,
    def: &ResourceDef,
    version: &str,
    namespace: Option<&str>,
    mut object: Value,
    ctx: &WriteCtx,
    keep_status: bool,
) -> ApiResult<Arc<Value>> {
    if !object.is_object() {
        return Err(ApiError::bad_request(
            "Object 'Kind' is missing in request body",
        ));
    }
    check_kind(def, version, &object)?;
    if lease::is_lease(def) {
        lease::decode(&mut object)?;
    }
    if object.get("metadata").is_none_or(|m| !m.is_object()) {
        object["metadata"] = json!({});
    }
    let name = create_name(def, namespace, &mut object)?;
    object["metadata"]["name"] = json!(name);
    if def.namespaced {
        admit_namespace(state, def, namespace.unwrap_or_default(), &name)?;
    }
    let causes = validate(def, &object, &name, false);
    if !causes.is_empty() {
        return Err(ApiError::invalid_kind(&def.names(), &name, causes));
    }
    prepare(def, &mut object, &name)?;

    let scope = scope_for(def, version, None);
    if scope == Scope::NoStatus
        && !keep_status
        && let Some(map) = object.as_object_mut()
    {
        map.remove("status");
    }
    server_fields(def, &mut object, &name, ctx);
    let mut entries = Vec::new();
    let empty = empty_object(def);
    fields::record_update(
        &mut entries,
        &ctx.writer(None),
        &fields::changed_fields(&empty, &object, scope),
    );
    if keep_status && scope == Scope::NoStatus {
        fields::record_update(
            &mut entries,
            &ctx.writer(Some("status")),
            &fields::changed_fields(&empty, &object, Scope::StatusOnly),
        );
    }
    fields::write_entries(&mut object, &entries);
    prepare_for_create(def, &mut object);
    check_stored_size(&object)?;

    let key = (
        object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        name.clone(),
    );
    if state.get(&def.key(), &key).is_some() {
        return Err(ApiError::already_exists(&def.names(), &name));
    }
    if ctx.dry_run {
        return Ok(Arc::new(object));
    }
    let stored = state.put(&def.key(), object);
    if def.flavor == Flavor::CustomResourceDefinition {
        establish_crd(state, &key, &ctx.time);
    }
    Ok(stored)
}

/// At most this many bytes of annotations, keys and values together.
const MAX_ANNOTATION_BYTES: usize = 256 * 1024;

/// What validation refuses of an object about to be stored: its metadata (annotations over
/// their limit are named once by a create, four times by an update: the real server validates
/// the metadata of an update that often), and a Lease's spec.
fn validate(def: &ResourceDef, object: &Value, name: &str, updating: bool) -> Vec<Cause> {
    let mut causes = validate_metadata(def, object, name);
    let annotations: usize = object["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, value)| key.len() + value.as_str().map_or(0, str::len))
        .sum();
    if annotations > MAX_ANNOTATION_BYTES {
        let cause = Cause::too_long("metadata.annotations", MAX_ANNOTATION_BYTES);
        causes.extend(std::iter::repeat_n(cause, if updating { 4 } else { 1 }));
    }
    if lease::is_lease(def) {
        causes.extend(lease::invalid(object));
    }
    causes
}

/// What the apiextensions controller does right after a CRD is written: accept its names,
/// mark it Established, record the stored version.
pub(super) fn establish_crd(state: &mut State, key: &ObjKey, time: &str) {
    let crd_key = (
        "apiextensions.k8s.io".to_string(),
        "customresourcedefinitions".to_string(),
    );
    let Some(current) = state.get(&crd_key, key) else {
        return;
    };
    let mut crd = (*current).clone();
    let names = crd["spec"]["names"].clone();
    let storage = storage_version_of_crd(&crd);
    let mut stored: Vec<Value> = crd["status"]["storedVersions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !stored.contains(&json!(storage)) {
        stored.push(json!(storage));
    }
    let existing_conditions = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let condition = |type_: &str, reason: &str, message: &str| {
        let previous = existing_conditions
            .iter()
            .find(|c| c["type"] == type_ && c["status"] == "True");
        json!({"type": type_, "status": "True",
            "lastTransitionTime": previous.map(|c| c["lastTransitionTime"].clone()).unwrap_or(json!(time)),
            "reason": reason, "message": message})
    };
    crd["status"] = json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": names,
        "storedVersions": stored,
    });
    if crd["status"] == current["status"] {
        return;
    }
    let mut entries = fields::read_entries(&crd);
    let writer = Writer {
        manager: "kube-apiserver",
        api_version: "apiextensions.k8s.io/v1",
        subresource: Some("status"),
        time,
    };
    fields::record_update(
        &mut entries,
        &writer,
        &fields::changed_fields(&current, &crd, Scope::StatusOnly),
    );
    fields::write_entries(&mut crd, &entries);
    state.put(&crd_key, crd);
}

/// The managedFields an update leaves: those the body set, none (an empty list, or one empty
/// entry, strips them and records nothing of this write, as a real server does), or the
/// stored ones with this write recorded.
fn record_fields(
    old: &Value,
    result: &mut Value,
    explicit: Option<Value>,
    scope: Scope,
    subresource: Option<&str>,
    ctx: &WriteCtx,
) {
    match explicit {
        // A real server strips them for an empty list, or one holding one empty entry, and
        // records nothing of this write.
        Some(mf) if mf == json!([{}]) || mf == json!([]) => {
            result["metadata"]
                .as_object_mut()
                .map(|m| m.remove("managedFields"));
        }
        Some(mf) if mf.as_array().is_some_and(|a| !a.is_empty()) => {
            result["metadata"]["managedFields"] = mf
        }
        _ => {
            let mut entries = fields::read_entries(old);
            fields::record_update(
                &mut entries,
                &ctx.writer(subresource.filter(|s| *s == "status")),
                &fields::changed_fields(old, result, scope),
            );
            fields::write_entries(result, &entries);
        }
    }
}

/// PUT or PATCH result `new` replacing `old` (at the request's subresource).
/// The server owns these metadata fields: the body of an update cannot change them.
fn keep_server_fields(old: &Value, result: &mut Value) {
    for system in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "resourceVersion",
        "managedFields",
    ] {
        match old["metadata"].get(system) {
            Some(v) => result["metadata"][system] = v.clone(),
            None => {
                result["metadata"].as_object_mut().map(|m| m.remove(system));
            }
        }
    }
}

/// Whether the update leaves an object being deleted without finalizers (it is then removed);
/// an empty finalizer list is dropped from it, as kube-apiserver drops it.
fn finalized(result: &mut Value) -> bool {
    let finalized = result["metadata"].get("deletionTimestamp").is_some()
        && result["metadata"]["finalizers"]
            .as_array()
            .is_none_or(|f| f.is_empty());
    if finalized
        && let Some(meta) = result["metadata"].as_object_mut()
        && meta
            .get("finalizers")
            .is_some_and(|f| f.as_array().is_some_and(|a| a.is_empty()))
    {
        meta.remove("finalizers");
    }
    finalized
}

pub fn update(
    state: &mut State,
    at: At,
    old: &Arc<Value>,
    mut new: Value,
    kind: UpdateKind,
    ctx: &WriteCtx,
) -> ApiResult<Arc<Value>> {
    let At {
        def,
        version,
        subresource,
    } = at;
    let name = obj_key(old).1;
    let names = def.names();
    check_update(def, version, old, &mut new, kind)?;
    if lease::is_lease(def) {
        lease::decode(&mut new)?;
    }

    let scope = scope_for(def, version, subresource);
    let explicit_managed_fields = new["metadata"]
        .get("managedFields")
        .filter(|mf| Some(*mf) != old["metadata"].get("managedFields"))
        .cloned();
    let mut result = merged(scope, old, new);
    drop_empty_maps(&mut result);
    keep_server_fields(old, &mut result);
    result["apiVersion"] = old["apiVersion"].clone();
    result["kind"] = json!(def.kind);
    if def.flavor == Flavor::Namespace && scope != Scope::StatusOnly {
        result["status"] = old["status"].clone();
        result["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
    }
    if scope != Scope::StatusOnly {
        prepare(def, &mut result, &name)?;
    }
    let causes = validate(def, &result, &name, true);
    if !causes.is_empty() {
        return Err(ApiError::invalid_kind(&names, &name, causes));
    }
    no_finalizers_added_while_deleting(old, &result, &names, &name)?;
    if def.has_generation() && spec_changed(old, &result, def.has_status_subresource(version)) {
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
        result["metadata"]["generation"] = json!(generation + 1);
    }
    record_fields(
        old,
        &mut result,
        explicit_managed_fields,
        scope,
        subresource,
        ctx,
    );
    check_stored_size(&result)?;

    let finalized = finalized(&mut result);
    if result == **old {
        return Ok(old.clone());
    }
    if ctx.dry_run {
        return Ok(Arc::new(result));
    }
    let key = obj_key(old);
    if finalized {
        // The answer is the object as the write left it (no finalizers), at the removal's
        // resourceVersion, as kube-apiserver answers.
        let removed = finish_removal(state, def, &key, Some(result.clone()));
        return Ok(removed.unwrap_or_else(|| Arc::new(result)));
    }
    let stored = state.put(&def.key(), result);
    if def.flavor == Flavor::CustomResourceDefinition {
        establish_crd(state, &key, &ctx.time);
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh store with namespace `ns`.
    fn state() -> State {
        let mut state = State::new(tokio::sync::broadcast::channel(16).0, 100);
        let namespaces = state.lookup("", "v1", "namespaces").unwrap();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}});
        create(&mut state, &namespaces, "v1", None, ns, &ctx(), false).unwrap();
        state
    }

    fn ctx() -> WriteCtx {
        WriteCtx {
            manager: "test".into(),
            api_version: "v1".into(),
            dry_run: false,
            time: "2026-01-01T00:00:00Z".into(),
        }
    }

    fn def(state: &State, group: &str, version: &str, plural: &str) -> Arc<ResourceDef> {
        state.lookup(group, version, plural).expect("served")
    }

    #[test]
    fn creates_answer_conflicts_and_invalid_names_as_the_apiserver_does() {
        let mut state = state();
        let roles = def(&state, "rbac.authorization.k8s.io", "v1", "roles");
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r1"}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        let created = create(
            &mut state,
            &roles,
            "v1",
            Some("ns"),
            role.clone(),
            &ctx(),
            false,
        )
        .unwrap();
        assert_eq!(
            created["rules"], role["rules"],
            "a built-in kind is stored as sent"
        );
        assert_eq!(created["metadata"]["namespace"], "ns");
        let again = create(&mut state, &roles, "v1", Some("ns"), role, &ctx(), false).unwrap_err();
        assert_eq!((again.code, again.reason), (409, "AlreadyExists"));
        let elsewhere = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r2"}});
        let missing = create(
            &mut state,
            &roles,
            "v1",
            Some("gone"),
            elsewhere,
            &ctx(),
            false,
        )
        .unwrap_err();
        assert_eq!((missing.code, missing.reason), (404, "NotFound"));
        let bad = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "Bad_Name"}});
        let invalid = create(&mut state, &roles, "v1", Some("ns"), bad, &ctx(), false).unwrap_err();
        assert_eq!((invalid.code, invalid.reason), (422, "Invalid"));
    }

    #[test]
    fn updates_with_a_stale_resource_version_or_another_uid_conflict() {
        let mut state = state();
        let leases = def(&state, "coordination.k8s.io", "v1", "leases");
        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l1"}});
        let old = create(&mut state, &leases, "v1", Some("ns"), lease, &ctx(), false).unwrap();
        let at = At {
            def: &leases,
            version: "v1",
            subresource: None,
        };
        let mut stale = (*old).clone();
        stale["metadata"]["resourceVersion"] = json!("1");
        let conflict = update(&mut state, at, &old, stale, UpdateKind::Patch, &ctx()).unwrap_err();
        assert_eq!((conflict.code, conflict.reason), (409, "Conflict"));
        let at = At {
            def: &leases,
            version: "v1",
            subresource: None,
        };
        let mut other = (*old).clone();
        other["metadata"]["uid"] = json!("someone-else");
        let immutable = update(
            &mut state,
            at,
            &old,
            other.clone(),
            UpdateKind::Patch,
            &ctx(),
        )
        .unwrap_err();
        assert_eq!(
            (immutable.code, immutable.message.as_str()),
            (
                422,
                "Lease.coordination.k8s.io \"l1\" is invalid: metadata.uid: Invalid value: \"someone-else\": field is immutable"
            ),
            "a patch naming another UID"
        );
        let precondition =
            update(&mut state, at, &old, other, UpdateKind::Put, &ctx()).unwrap_err();
        assert_eq!(precondition.code, 409);
        assert!(
            precondition.message.ends_with(&format!(
                "Key: /registry/leases/ns/l1, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: someone-else, UID in object meta: {}",
                old["metadata"]["uid"].as_str().unwrap()
            )),
            "a PUT naming another UID: {}",
            precondition.message
        );
    }

    #[test]
    fn only_kinds_with_a_closed_schema_report_unknown_top_level_fields() {
        let state = state();
        let object = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "bogus": 1}, "extra": true});
        let secrets = def(&state, "", "v1", "secrets");
        assert_eq!(
            unknown_fields(&secrets, &object),
            ["metadata.bogus", "extra"]
        );
        let pods = def(&state, "", "v1", "pods");
        assert_eq!(
            unknown_fields(&pods, &object),
            ["metadata.bogus"],
            "a generic built-in keeps what it is sent, but metadata is always checked"
        );
    }
}
