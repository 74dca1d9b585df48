//! What every write shares: its context (`WriteCtx`), where it writes (`At`), its kind and
//! options, the limits of a real apiserver and etcd, and small readings of an object.

use crate::apiserver::fields::{Scope, Writer};
use crate::apiserver::resources::ResourceDef;
use crate::apiserver::store::ObjKey;
use rand::Rng;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Largest ConfigMap/Secret payload.
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

/// etcd's `--max-request-bytes` default: larger objects fail in storage.
pub const MAX_STORED_BYTES: usize = 1536 * 1024;

/// etcd client's gRPC send limit, quoted in the real error for larger objects.
pub(super) const GRPC_SEND_LIMIT: usize = 2 * 1024 * 1024;

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
    pub(super) fn writer<'a>(&'a self, subresource: Option<&'a str>) -> Writer<'a> {
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

pub(super) const NAME_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

pub(super) fn generated_name(prefix: &str) -> String {
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

pub(super) fn scope_for(def: &ResourceDef, version: &str, subresource: Option<&str>) -> Scope {
    match subresource {
        Some("status") => Scope::StatusOnly,
        _ if def.has_status_subresource(version) => Scope::NoStatus,
        _ => Scope::Whole,
    }
}

pub(super) fn meta_str<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object["metadata"][key].as_str().filter(|s| !s.is_empty())
}

pub(super) fn storage_version_of_crd(crd: &Value) -> String {
    crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["storage"].as_bool() == Some(true))
        .and_then(|v| v["name"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Where a write lands: a resource at the version the request used, and maybe a subresource.
#[derive(Clone, Copy, Debug)]
pub struct At<'a> {
    pub def: &'a ResourceDef,
    pub version: &'a str,
    pub subresource: Option<&'a str>,
}

/// A real server stores metadata maps `omitempty`: one emptied by a patch is gone.
pub(super) fn drop_empty_maps(object: &mut Value) {
    if let Some(meta) = object["metadata"].as_object_mut() {
        for map in ["annotations", "labels"] {
            if meta
                .get(map)
                .is_some_and(|m| m.as_object().is_some_and(|m| m.is_empty()))
            {
                meta.remove(map);
            }
        }
    }
}

/// How an update names its precondition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateKind {
    /// PUT: custom resources must carry `metadata.resourceVersion`.
    Put,
    /// PATCH: a resourceVersion in the patched object is a precondition, none is fine.
    Patch,
}

/// Did anything outside metadata (and status, when it has its own subresource) change?
pub(super) fn spec_changed(old: &Value, new: &Value, status_subresource: bool) -> bool {
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
