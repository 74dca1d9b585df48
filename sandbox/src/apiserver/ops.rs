//! What each write does to the store, with the real apiserver's validation order and answers.
//! Pure over `State`: the HTTP layer parses, calls these under the store lock, and answers.

use std::sync::Arc;

use base64::Engine;
use rand::Rng;
use serde_json::{Map, Value, json};

use super::fields::{self, SYSTEM_METADATA, Scope, Writer};
use super::resources::{Flavor, ResKey, ResourceDef, default_crd};
use super::status::{ApiError, ApiResult, Cause};
use super::store::{ObjKey, State, owner_uids, uid_of};
use super::validation::{self, DNS1123_LABEL_MSG, DNS1123_SUBDOMAIN_MSG};

/// Largest ConfigMap/Secret payload.
pub const MAX_DATA_BYTES: usize = 1024 * 1024;
/// etcd's `--max-request-bytes` default: larger objects fail in storage.
pub const MAX_STORED_BYTES: usize = 1536 * 1024;
/// etcd client's gRPC send limit, quoted in the real error for larger objects.
const GRPC_SEND_LIMIT: usize = 2 * 1024 * 1024;

/// Who writes, at which version, and whether anything is kept.
#[derive(Clone, Debug)]
pub struct WriteCtx {
    pub manager: String,
    /// The API version of the request (managedFields record it).
    pub api_version: String,
    pub dry_run: bool,
    pub time: String,
}

impl WriteCtx {
    fn writer<'a>(&'a self, subresource: Option<&'a str>) -> Writer<'a> {
        Writer {
            manager: &self.manager,
            api_version: &self.api_version,
            subresource,
            time: &self.time,
        }
    }
}

pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

const NAME_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn generated_name(prefix: &str) -> String {
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| NAME_CHARS[rng.random_range(0..NAME_CHARS.len())] as char)
        .collect();
    format!("{prefix}{suffix}")
}

/// Returns `object` at the requested served version (no schema conversion, as with strategy None).
pub fn at_version(object: &Value, def: &ResourceDef, version: &str) -> Value {
    let mut out = object.clone();
    out["apiVersion"] = json!(def.api_version(version));
    out["kind"] = json!(def.kind);
    out
}

fn scope_for(def: &ResourceDef, version: &str, subresource: Option<&str>) -> Scope {
    match subresource {
        Some("status") => Scope::StatusOnly,
        _ if def.has_status_subresource(version) => Scope::NoStatus,
        _ => Scope::Whole,
    }
}

fn meta_str<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object["metadata"][key].as_str().filter(|s| !s.is_empty())
}

/// Checks every write makes of metadata: name format, owner references.
fn validate_metadata(def: &ResourceDef, object: &Value, name: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name_ok = match def.flavor {
        Flavor::Namespace => validation::is_dns_label(name),
        _ => validation::is_dns_subdomain(name),
    };
    if !name_ok {
        let msg = if def.flavor == Flavor::Namespace {
            DNS1123_LABEL_MSG
        } else {
            DNS1123_SUBDOMAIN_MSG
        };
        causes.push(Cause::invalid("metadata.name", &format!("\"{name}\""), msg));
    }
    let refs = object["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (i, owner) in refs.iter().enumerate() {
        for field in ["apiVersion", "kind", "name", "uid"] {
            if owner[field].as_str().is_none_or(str::is_empty) {
                causes.push(Cause::required(
                    &format!("metadata.ownerReferences[{i}].{field}"),
                    &format!("{field} must not be empty"),
                ));
            }
        }
    }
    let controllers: Vec<String> = refs
        .iter()
        .filter(|r| r["controller"].as_bool() == Some(true))
        .map(|r| {
            format!(
                "{}/{}",
                r["kind"].as_str().unwrap_or(""),
                r["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    if controllers.len() > 1 {
        causes.push(Cause::invalid(
            "metadata.ownerReferences",
            "[...]",
            &format!("Only one reference can have Controller set to true. Found \"true\" in references for {}", controllers.join(" and ")),
        ));
    }
    for map in ["labels", "annotations"] {
        if let Some(m) = object["metadata"][map].as_object() {
            for (k, v) in m {
                if !v.is_string() {
                    causes.push(Cause::invalid(
                        &format!("metadata.{map}.{k}"),
                        &v.to_string(),
                        "must be a string",
                    ));
                }
            }
        }
    }
    if let Some(labels) = object["metadata"]["labels"].as_object() {
        for (k, v) in labels {
            if let Some(v) = v.as_str()
                && !validation::is_label_value(v)
            {
                causes.push(Cause::invalid(
                    &format!("metadata.labels.{k}"),
                    &format!("\"{v}\""),
                    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                ));
            }
        }
    }
    causes
}

/// Flavor-specific normalisation and validation (Secret stringData, size limits, CRD spec).
fn prepare(def: &ResourceDef, object: &mut Value, name: &str) -> ApiResult<()> {
    match def.flavor {
        Flavor::Secret => {
            if let Some(Value::Object(string_data)) =
                object.as_object_mut().and_then(|o| o.remove("stringData"))
            {
                let data = object["data"].as_object().cloned().unwrap_or_default();
                let mut data = data;
                for (k, v) in string_data {
                    let text = v.as_str().unwrap_or_default();
                    data.insert(
                        k,
                        json!(base64::engine::general_purpose::STANDARD.encode(text)),
                    );
                }
                object["data"] = Value::Object(data);
            }
            if object.get("type").is_none() {
                object["type"] = json!("Opaque");
            }
            let size = data_size(&object["data"], true);
            if size > MAX_DATA_BYTES {
                return Err(ApiError::invalid(
                    "Secret",
                    "Secret",
                    "",
                    name,
                    vec![Cause {
                        reason: "FieldValueTooLong",
                        message: format!("Too long: may not be more than {MAX_DATA_BYTES} bytes"),
                        field: "data".into(),
                    }],
                ));
            }
        }
        Flavor::ConfigMap => {
            let size = data_size(&object["data"], false) + data_size(&object["binaryData"], true);
            if size > MAX_DATA_BYTES {
                return Err(ApiError::invalid(
                    "ConfigMap",
                    "ConfigMap",
                    "",
                    name,
                    vec![Cause::too_long("[]", MAX_DATA_BYTES)],
                ));
            }
        }
        Flavor::CustomResourceDefinition => {
            default_crd(object);
            let causes = validate_crd(object, name);
            if !causes.is_empty() {
                return Err(ApiError::invalid_kind(&def.names(), name, causes));
            }
        }
        _ => {}
    }
    Ok(())
}

fn data_size(data: &Value, base64: bool) -> usize {
    data.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let s = v.as_str().unwrap_or_default();
                    k.len()
                        + if base64 {
                            base64::engine::general_purpose::STANDARD
                                .decode(s)
                                .map(|b| b.len())
                                .unwrap_or(s.len())
                        } else {
                            s.len()
                        }
                })
                .sum()
        })
        .unwrap_or(0)
}

fn validate_crd(crd: &Value, name: &str) -> Vec<Cause> {
    let spec = &crd["spec"];
    let mut causes = Vec::new();
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    if group.is_empty() {
        causes.push(Cause::required("spec.group", ""));
    }
    if plural.is_empty() {
        causes.push(Cause::required("spec.names.plural", ""));
    }
    if spec["names"]["kind"].as_str().is_none_or(str::is_empty) {
        causes.push(Cause::required("spec.names.kind", ""));
    }
    if !matches!(spec["scope"].as_str(), Some("Namespaced") | Some("Cluster")) {
        causes.push(Cause {
            reason: "FieldValueNotSupported",
            message: format!(
                "Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"",
                spec["scope"]
            ),
            field: "spec.scope".into(),
        });
    }
    if name != format!("{plural}.{group}") {
        causes.push(Cause::invalid(
            "metadata.name",
            &format!("\"{name}\""),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::invalid(
            "spec.versions",
            "null",
            "must have exactly one version marked as storage version",
        ));
    } else if versions
        .iter()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .count()
        != 1
    {
        causes.push(Cause::invalid(
            "spec.versions",
            "[...]",
            "must have exactly one version marked as storage version",
        ));
    }
    causes
}

fn check_stored_size(object: &Value) -> ApiResult<()> {
    let size = serde_json::to_vec(object).map(|b| b.len()).unwrap_or(0);
    if size > GRPC_SEND_LIMIT {
        return Err(ApiError::internal(format!(
            "rpc error: code = ResourceExhausted desc = trying to send message larger than max ({size} vs. {GRPC_SEND_LIMIT})"
        )));
    }
    if size > MAX_STORED_BYTES {
        return Err(ApiError::internal("etcdserver: request is too large"));
    }
    Ok(())
}

/// Metadata a client may set; with the server's own ([`SYSTEM_METADATA`]) all that is known.
const CLIENT_METADATA: &[&str] = &[
    "generateName",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
];

/// Fields the server's schema does not know. Metadata is always checked; the top level only for
/// kinds with a closed schema (custom resources here keep unknown fields).
pub fn unknown_fields(def: &ResourceDef, object: &Value) -> Vec<String> {
    let mut unknown: Vec<String> = object["metadata"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| {
            ![SYSTEM_METADATA, CLIENT_METADATA]
                .concat()
                .contains(&k.as_str())
        })
        .map(|(k, _)| format!("metadata.{k}"))
        .collect();
    let top: &[&str] = match def.flavor {
        // No schema: what is not metadata is kept as sent.
        Flavor::Custom | Flavor::Generic => return unknown,
        Flavor::Secret => &[
            "apiVersion",
            "kind",
            "metadata",
            "data",
            "stringData",
            "type",
            "immutable",
        ],
        Flavor::ConfigMap => &[
            "apiVersion",
            "kind",
            "metadata",
            "data",
            "binaryData",
            "immutable",
        ],
        Flavor::Namespace | Flavor::CustomResourceDefinition => {
            &["apiVersion", "kind", "metadata", "spec", "status"]
        }
        Flavor::Review => &["apiVersion", "kind", "metadata", "spec", "status"],
    };
    unknown.extend(
        object
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !top.contains(&k.as_str()))
            .map(|(k, _)| k.clone()),
    );
    unknown
}

/// Removes fields named as `unknown_fields` reports them.
pub fn drop_fields(object: &mut Value, fields: &[String]) {
    for field in fields {
        match field.strip_prefix("metadata.") {
            Some(meta) => {
                object["metadata"].as_object_mut().map(|m| m.remove(meta));
            }
            None => {
                object.as_object_mut().map(|m| m.remove(field));
            }
        }
    }
}

/// Namespace admission: the namespace must exist and not be terminating.
fn admit_namespace(state: &State, def: &ResourceDef, namespace: &str, name: &str) -> ApiResult<()> {
    let ns_key = (String::new(), "namespaces".to_string());
    match state.get(&ns_key, &(String::new(), namespace.to_string())) {
        None => Err(ApiError::namespace_not_found(namespace)),
        Some(ns) if ns["metadata"].get("deletionTimestamp").is_some() => {
            let mut details = json!({"name": name, "kind": def.plural,
                "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {namespace} is being terminated"), "field": "metadata.namespace"}]});
            if !def.group.is_empty() {
                details["group"] = json!(def.group);
            }
            Err(ApiError::forbidden(
                format!(
                    "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                    def.names().qualified_resource()
                ),
                details,
            ))
        }
        Some(_) => Ok(()),
    }
}

fn check_kind(def: &ResourceDef, version: &str, object: &Value) -> ApiResult<()> {
    if let Some(kind) = object["kind"].as_str()
        && !kind.is_empty()
        && kind != def.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind of the provided object ({kind}) does not match the kind of the resource ({})",
            def.kind
        )));
    }
    if let Some(api_version) = object["apiVersion"].as_str()
        && !api_version.is_empty()
        && api_version != def.api_version(version)
        && def
            .version(api_version.rsplit('/').next().unwrap_or_default())
            .is_none()
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            def.api_version(version)
        )));
    }
    Ok(())
}

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
    if object.get("metadata").is_none_or(|m| !m.is_object()) {
        object["metadata"] = json!({});
    }
    // Namespace: from the URL for namespaced kinds, cleared for cluster-scoped ones.
    if def.namespaced {
        let url_ns = namespace.ok_or_else(|| ApiError::method_not_allowed("create"))?;
        match meta_str(&object, "namespace") {
            Some(ns) if ns != url_ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => object["metadata"]["namespace"] = json!(url_ns),
        }
    } else if let Some(meta) = object["metadata"].as_object_mut() {
        meta.remove("namespace");
    }
    if meta_str(&object, "resourceVersion").is_some() {
        return Err(ApiError::internal(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let name = match (meta_str(&object, "name"), meta_str(&object, "generateName")) {
        (Some(name), _) => name.to_string(),
        (None, Some(prefix)) => generated_name(prefix),
        (None, None) => {
            return Err(ApiError::invalid_kind(
                &def.names(),
                "",
                vec![Cause::required(
                    "metadata.name",
                    "name or generateName is required",
                )],
            ));
        }
    };
    object["metadata"]["name"] = json!(name);
    if def.namespaced {
        admit_namespace(state, def, namespace.unwrap_or_default(), &name)?;
    }
    let causes = validate_metadata(def, &object, &name);
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
    match def.flavor {
        Flavor::Namespace => {
            object["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
            object["spec"] = json!({"finalizers": ["kubernetes"]});
            object["status"] = json!({"phase": "Active"});
        }
        Flavor::CustomResourceDefinition => {
            object["status"] = json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""},
                "storedVersions": [storage_version_of_crd(&object)]});
        }
        _ => {}
    }
    {
        let meta = object["metadata"]
            .as_object_mut()
            .expect("metadata is an object");
        for system in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(system);
        }
    }
    object["apiVersion"] = json!(def.api_version(def.storage_version()));
    object["kind"] = json!(def.kind);
    object["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
    object["metadata"]["creationTimestamp"] = json!(ctx.time);
    if def.has_generation() {
        object["metadata"]["generation"] = json!(1);
    }
    let mut entries = Vec::new();
    fields::record_update(
        &mut entries,
        &ctx.writer(None),
        &fields::Change::all(fields::fields_of(&object, scope)),
    );
    if keep_status && scope == Scope::NoStatus {
        fields::record_update(
            &mut entries,
            &ctx.writer(Some("status")),
            &fields::Change::all(fields::fields_of(&object, Scope::StatusOnly)),
        );
    }
    fields::write_entries(&mut object, &entries);
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

fn storage_version_of_crd(crd: &Value) -> String {
    crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["storage"].as_bool() == Some(true))
        .and_then(|v| v["name"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// What the apiextensions controller does right after a CRD is written: accept its names,
/// mark it Established, record the stored version.
fn establish_crd(state: &mut State, key: &ObjKey, time: &str) {
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

/// Where a write lands: a resource at the version the request used, and maybe a subresource.
#[derive(Clone, Copy, Debug)]
pub struct At<'a> {
    pub def: &'a ResourceDef,
    pub version: &'a str,
    pub subresource: Option<&'a str>,
}

/// How an update names its precondition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateKind {
    /// PUT: custom resources must carry `metadata.resourceVersion`.
    Put,
    /// PATCH: a resourceVersion in the patched object is a precondition, none is fine.
    Patch,
}

/// PUT or PATCH result `new` replacing `old` (at the request's subresource).
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
    let name = old["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let names = def.names();
    if !new.is_object() {
        return Err(ApiError::bad_request(
            "Object 'Kind' is missing in request body",
        ));
    }
    check_kind(def, version, &new)?;
    if new.get("metadata").is_none_or(|m| !m.is_object()) {
        new["metadata"] = json!({});
    }
    if let Some(body_name) = meta_str(&new, "name")
        && body_name != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if def.namespaced
        && let Some(ns) = meta_str(&new, "namespace")
        && Some(ns) != old["metadata"]["namespace"].as_str()
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if let Some(uid) = meta_str(&new, "uid")
        && uid != uid_of(old)
    {
        return Err(ApiError::conflict_with(
            &names,
            &name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                uid_of(old)
            ),
        ));
    }
    match meta_str(&new, "resourceVersion") {
        Some(rv) if Some(rv) != old["metadata"]["resourceVersion"].as_str() => {
            return Err(ApiError::conflict(&names, &name));
        }
        None if kind == UpdateKind::Put && def.is_custom() => {
            return Err(ApiError::invalid(
                &names.qualified_resource(),
                &def.plural,
                &def.group,
                &name,
                vec![Cause::invalid(
                    "metadata.resourceVersion",
                    "0",
                    "must be specified for an update",
                )],
            ));
        }
        _ => {}
    }

    let scope = scope_for(def, version, subresource);
    let explicit_managed_fields = new["metadata"]
        .get("managedFields")
        .filter(|mf| Some(*mf) != old["metadata"].get("managedFields"))
        .cloned();
    let mut result = match scope {
        Scope::StatusOnly => {
            let mut result = (**old).clone();
            match new.get("status") {
                Some(status) => result["status"] = status.clone(),
                None => {
                    result.as_object_mut().map(|m| m.remove("status"));
                }
            }
            result
        }
        Scope::NoStatus => {
            let mut result = new;
            match old.get("status") {
                Some(status) => result["status"] = status.clone(),
                None => {
                    result.as_object_mut().map(|m| m.remove("status"));
                }
            }
            result
        }
        Scope::Whole => new,
    };
    // The server owns these; the body cannot change them.
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
    result["apiVersion"] = old["apiVersion"].clone();
    result["kind"] = json!(def.kind);
    if def.flavor == Flavor::Namespace && scope != Scope::StatusOnly {
        result["status"] = old["status"].clone();
        result["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
    }
    if scope != Scope::StatusOnly {
        prepare(def, &mut result, &name)?;
    }
    let causes = validate_metadata(def, &result, &name);
    if !causes.is_empty() {
        return Err(ApiError::invalid_kind(&names, &name, causes));
    }
    if old["metadata"].get("deletionTimestamp").is_some() {
        let before: Vec<Value> = old["metadata"]["finalizers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let added: Vec<String> = result["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| !before.contains(f))
            .map(|f| format!("{f}"))
            .collect();
        if !added.is_empty() {
            let detail = format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                added.join(", ")
            );
            return Err(ApiError::invalid_kind(
                &names,
                &name,
                vec![
                    Cause::forbidden("metadata.finalizers", &detail),
                    Cause::forbidden("metadata.finalizers", &detail),
                ],
            ));
        }
    }
    if def.has_generation() && spec_changed(old, &result, def.has_status_subresource(version)) {
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
        result["metadata"]["generation"] = json!(generation + 1);
    }
    match explicit_managed_fields {
        Some(mf) if mf.as_array().is_some_and(|a| !a.is_empty()) => {
            result["metadata"]["managedFields"] = mf
        }
        _ => {
            let mut entries = fields::read_entries(old);
            fields::record_update(
                &mut entries,
                &ctx.writer(subresource.filter(|s| *s == "status")),
                &fields::changed_fields(old, &result, scope),
            );
            fields::write_entries(&mut result, &entries);
        }
    }
    check_stored_size(&result)?;

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

/// Did anything outside metadata (and status, when it has its own subresource) change?
fn spec_changed(old: &Value, new: &Value, status_subresource: bool) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        let mut m = v.as_object().cloned().unwrap_or_default();
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if status_subresource {
            m.remove("status");
        }
        m
    };
    strip(old) != strip(new)
}

pub fn obj_key(object: &Value) -> ObjKey {
    (
        object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

/// The last step of a deletion: the object leaves storage; a CRD takes its objects with it.
fn finish_removal(
    state: &mut State,
    def: &ResourceDef,
    key: &ObjKey,
    last: Option<Value>,
) -> Option<Arc<Value>> {
    if def.flavor == Flavor::CustomResourceDefinition
        && let Some(crd) = state.get(&def.key(), key)
        && let (Some(group), Some(plural)) = (
            crd["spec"]["group"].as_str(),
            crd["spec"]["names"]["plural"].as_str(),
        )
    {
        state.drop_resource(&(group.to_string(), plural.to_string()));
    }
    state.remove_as(&def.key(), key, last)
}

/// DeleteOptions that matter here.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    pub propagation: Option<String>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

pub enum Deleted {
    /// Gone from storage (answered with a Success Status).
    Removed(Arc<Value>),
    /// Still there with a deletionTimestamp (answered with the object).
    Pending(Arc<Value>),
}

pub fn delete(
    state: &mut State,
    def: &ResourceDef,
    key: &ObjKey,
    options: &DeleteOptions,
    dry_run: bool,
    time: &str,
) -> ApiResult<Deleted> {
    let names = def.names();
    let old = state
        .get(&def.key(), key)
        .ok_or_else(|| ApiError::not_found(&names, &key.1))?;
    if let Some(uid) = &options.precondition_uid
        && uid != uid_of(&old)
    {
        return Err(ApiError::conflict_with(
            &names,
            &key.1,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                uid_of(&old)
            ),
        ));
    }
    if let Some(rv) = &options.precondition_rv
        && Some(rv.as_str()) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(ApiError::conflict_with(
            &names,
            &key.1,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                old["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
            ),
        ));
    }
    if old["metadata"].get("deletionTimestamp").is_some() {
        return Ok(Deleted::Pending(old));
    }
    let mut finalizers: Vec<Value> = old["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let policy_finalizer = match options.propagation.as_deref() {
        Some("Orphan") => Some("orphan"),
        Some("Foreground") => Some("foregroundDeletion"),
        _ => None,
    };
    if let Some(f) = policy_finalizer
        && !finalizers.contains(&json!(f))
    {
        finalizers.push(json!(f));
    }
    if def.flavor == Flavor::Namespace || !finalizers.is_empty() {
        let mut pending = (*old).clone();
        pending["metadata"]["deletionTimestamp"] = json!(time);
        // Namespaces are finalized through spec.finalizers and carry no grace period.
        if def.flavor != Flavor::Namespace {
            pending["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        }
        if !finalizers.is_empty() {
            pending["metadata"]["finalizers"] = Value::Array(finalizers);
        }
        if def.has_generation() {
            pending["metadata"]["generation"] =
                json!(old["metadata"]["generation"].as_i64().unwrap_or(1) + 1);
        }
        if def.flavor == Flavor::Namespace {
            pending["status"]["phase"] = json!("Terminating");
        }
        if dry_run {
            return Ok(Deleted::Pending(Arc::new(pending)));
        }
        let stored = state.put(&def.key(), pending);
        if def.flavor == Flavor::Namespace {
            terminate_namespace(state, &key.1, time);
        }
        return Ok(Deleted::Pending(stored));
    }
    if dry_run {
        return Ok(Deleted::Removed(old));
    }
    Ok(Deleted::Removed(
        finish_removal(state, def, key, None).unwrap_or(old),
    ))
}

/// The namespace controller: delete everything in a terminating namespace, then the namespace.
pub fn terminate_namespace(state: &mut State, namespace: &str, time: &str) {
    let ns_res: ResKey = (String::new(), "namespaces".to_string());
    let ns_key = (String::new(), namespace.to_string());
    let Some(ns) = state.get(&ns_res, &ns_key) else {
        return;
    };
    if ns["metadata"].get("deletionTimestamp").is_none() {
        return;
    }
    for (res, key) in state.namespace_contents(namespace) {
        if let Some(def) = state.resource(&res).cloned() {
            let _ = delete(state, &def, &key, &DeleteOptions::default(), false, time);
        }
    }
    if state.namespace_contents(namespace).is_empty() {
        state.remove(&ns_res, &ns_key);
    }
}

/// One pass of kube-controller-manager's garbage collector (background propagation, orphaning,
/// foreground deletion) and namespace controller over the objects that changed.
pub fn collect_garbage(state: &mut State, time: &str) {
    while let Some((res, key)) = state.gc_candidates.pop() {
        let Some(object) = state.get(&res, &key) else {
            continue;
        };
        let Some(def) = state.resource(&res).cloned() else {
            continue;
        };
        let deleting = object["metadata"].get("deletionTimestamp").is_some();
        let finalizers: Vec<String> = object["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect();
        let uid = uid_of(&object).to_string();
        if deleting && finalizers.iter().any(|f| f == "orphan") {
            for (dep_res, dep_key) in state.dependents_of(&uid) {
                if let Some(dep) = state.get(&dep_res, &dep_key) {
                    let mut freed = (*dep).clone();
                    if let Some(refs) = freed["metadata"]["ownerReferences"].as_array_mut() {
                        refs.retain(|r| r["uid"] != uid.as_str());
                    }
                    state.put(&dep_res, freed);
                }
            }
            remove_finalizer(state, &def, &res, &key, "orphan");
            continue;
        }
        if deleting && finalizers.iter().any(|f| f == "foregroundDeletion") {
            let dependents = state.dependents_of(&uid);
            if dependents.is_empty() {
                remove_finalizer(state, &def, &res, &key, "foregroundDeletion");
            } else {
                for (dep_res, dep_key) in dependents {
                    if let Some(dep_def) = state.resource(&dep_res).cloned() {
                        let _ = delete(
                            state,
                            &dep_def,
                            &dep_key,
                            &DeleteOptions::default(),
                            false,
                            time,
                        );
                    }
                }
            }
            continue;
        }
        let owners = owner_uids(&object);
        if owners.is_empty() || deleting {
            continue;
        }
        let any_owner_present = object["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| owner_present(state, r, &key.0));
        if !any_owner_present {
            let _ = delete(state, &def, &key, &DeleteOptions::default(), false, time);
        }
    }
    // Namespaces whose last object just went.
    let ns_res: ResKey = (String::new(), "namespaces".to_string());
    let terminating: Vec<String> = state
        .list(&ns_res, None)
        .iter()
        .filter(|ns| ns["metadata"].get("deletionTimestamp").is_some())
        .map(|ns| {
            ns["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    for ns in terminating {
        terminate_namespace(state, &ns, time);
    }
}

fn owner_present(state: &State, reference: &Value, namespace: &str) -> bool {
    let Some(uid) = reference["uid"].as_str() else {
        return false;
    };
    let Some((res, key)) = state.by_uid(uid) else {
        return false;
    };
    let kind_matches = state
        .resource(&res)
        .is_some_and(|d| Some(d.kind.as_str()) == reference["kind"].as_str());
    kind_matches
        && Some(key.1.as_str()) == reference["name"].as_str()
        && (key.0.is_empty() || key.0 == namespace)
}

fn remove_finalizer(
    state: &mut State,
    def: &ResourceDef,
    res: &ResKey,
    key: &ObjKey,
    finalizer: &str,
) {
    let Some(object) = state.get(res, key) else {
        return;
    };
    let mut next = (*object).clone();
    if let Some(list) = next["metadata"]["finalizers"].as_array_mut() {
        list.retain(|f| f != finalizer);
        if list.is_empty() {
            if let Some(meta) = next["metadata"].as_object_mut() {
                meta.remove("finalizers");
            }
            finish_removal(state, def, key, Some(next));
            return;
        }
    }
    state.put(res, next);
}

/// The autoscaling/v1 Scale view of an object with a scale subresource.
pub fn scale_of(def: &ResourceDef, version: &str, object: &Value) -> Option<Value> {
    let scale = def.version(version)?.scale.clone()?;
    let read = |path: &str| pointer_of(path).and_then(|p| object.pointer(&p).cloned());
    let mut status = json!({"replicas": read(&scale.status_replicas_path).unwrap_or(json!(0))});
    if let Some(selector) = scale.label_selector_path.as_deref().and_then(read) {
        status["selector"] = selector;
    }
    Some(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "uid": object["metadata"]["uid"],
            "resourceVersion": object["metadata"]["resourceVersion"],
            "creationTimestamp": object["metadata"]["creationTimestamp"],
        },
        "spec": {"replicas": read(&scale.spec_replicas_path).unwrap_or(json!(0))},
        "status": status,
    }))
}

/// Writes a Scale's `spec.replicas` back into the object at the CRD's spec path.
pub fn apply_scale(
    def: &ResourceDef,
    version: &str,
    object: &Value,
    scale: &Value,
) -> Option<Value> {
    let path = pointer_of(&def.version(version)?.scale.as_ref()?.spec_replicas_path)?;
    let mut out = object.clone();
    let replicas = scale["spec"]["replicas"].clone();
    set_pointer(&mut out, &path, replicas);
    if let Some(rv) = scale["metadata"]["resourceVersion"].as_str() {
        out["metadata"]["resourceVersion"] = json!(rv);
    }
    Some(out)
}

fn pointer_of(json_path: &str) -> Option<String> {
    let trimmed = json_path.strip_prefix('.')?;
    Some(format!("/{}", trimmed.replace('.', "/")))
}

fn set_pointer(target: &mut Value, pointer: &str, value: Value) {
    let mut current = target;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        if i == parts.len() - 1 {
            current[*part] = value;
            return;
        }
        if current.get(*part).is_none() {
            current[*part] = json!({});
        }
        current = current.get_mut(*part).expect("just inserted");
    }
}

/// Server-side apply (PATCH with application/apply-patch+yaml).
pub fn server_side_apply(
    state: &mut State,
    at: At,
    key: &ObjKey,
    applied: Value,
    force: bool,
    ctx: &WriteCtx,
) -> ApiResult<(Arc<Value>, bool)> {
    let At {
        def,
        version,
        subresource,
    } = at;
    let (namespace, name) = (
        Some(key.0.as_str()).filter(|ns| !ns.is_empty()),
        key.1.as_str(),
    );
    check_kind(def, version, &applied)?;
    if applied["metadata"]["name"]
        .as_str()
        .is_some_and(|n| n != name)
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            applied["metadata"]["name"].as_str().unwrap_or_default()
        )));
    }
    let scope = scope_for(def, version, subresource);
    let writer = ctx.writer(subresource.filter(|s| *s == "status"));
    match state.get(&def.key(), key) {
        None => {
            if subresource.is_some() {
                return Err(ApiError::not_found(&def.names(), name));
            }
            let mut entries = Vec::new();
            let merged = fields::apply(&json!({}), &applied, &mut entries, &writer, scope, true)
                .expect("nothing to conflict with");
            let mut object = merged;
            object["metadata"]["name"] = json!(name);
            let created = create(state, def, version, namespace, object, ctx, false)?;
            // create() recorded an Update entry; an apply records Apply instead.
            let mut fixed = (*created).clone();
            for entry in fixed["metadata"]["managedFields"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                entry["operation"] = json!("Apply");
            }
            if ctx.dry_run {
                return Ok((Arc::new(fixed), true));
            }
            let stored = state.put(&def.key(), fixed);
            Ok((stored, true))
        }
        Some(live) => {
            let mut entries = fields::read_entries(&live);
            let merged = fields::apply(&live, &applied, &mut entries, &writer, scope, force)
                .map_err(|conflicts| {
                    let message = format!(
                        "Apply failed with {} conflict{}: {}",
                        conflicts.len(),
                        if conflicts.len() == 1 { "" } else { "s" },
                        conflicts
                            .iter()
                            .map(|c| format!(
                                "conflict with \"{}\" using {}: {}",
                                c.manager, c.api_version, c.field
                            ))
                            .collect::<Vec<_>>()
                            .join("\n")
                    );
                    let mut err = ApiError::conflict_with(&def.names(), name, "");
                    err.message = message;
                    err.details = Some(json!({"causes": conflicts.iter().map(|c| json!({
                    "reason": "FieldManagerConflict",
                    "message": format!("conflict with \"{}\" using {}", c.manager, c.api_version),
                    "field": c.field})).collect::<Vec<_>>()}));
                    err
                })?;
            let mut merged = merged;
            fields::write_entries(&mut merged, &entries);
            let updated = update(state, at, &live, merged, UpdateKind::Patch, ctx)?;
            Ok((updated, false))
        }
    }
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
        let precondition =
            update(&mut state, at, &old, other, UpdateKind::Patch, &ctx()).unwrap_err();
        assert_eq!(precondition.code, 409);
        assert!(
            precondition
                .message
                .contains("Precondition failed: UID in precondition")
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
