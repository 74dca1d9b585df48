//! Small typed-free helpers to create and patch objects through a server's API, as `kubectl`
//! would: the sandbox's own tooling never writes around the API.

use anyhow::{Context, bail};
use http::Request;
use serde_json::Value;

use crate::crds;

/// The plural of a kind the sandbox serves.
pub fn plural(kind: &str) -> String {
    match kind {
        "Namespace" => "namespaces".into(),
        "Secret" => "secrets".into(),
        "ConfigMap" => "configmaps".into(),
        "Provider" => "providers".into(),
        _ => crds::KINDS
            .iter()
            .find(|k| k.kind == kind)
            .map(|k| k.plural.to_string())
            .unwrap_or_else(|| format!("{}s", kind.to_lowercase())),
    }
}

/// The collection path of an object (namespaced unless it is a Namespace).
fn collection(api_version: &str, kind: &str, namespace: Option<&str>) -> String {
    let prefix = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    match namespace {
        Some(ns) if kind != "Namespace" => format!("{prefix}/namespaces/{ns}/{}", plural(kind)),
        _ => format!("{prefix}/{}", plural(kind)),
    }
}

async fn send(client: &kube::Client, request: Request<Vec<u8>>) -> anyhow::Result<Value> {
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let status = response.status();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await?
        .to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if !status.is_success() {
        bail!("{}", body["message"].as_str().unwrap_or(status.as_str()));
    }
    Ok(body)
}

pub async fn create(client: &kube::Client, object: &Value) -> anyhow::Result<Value> {
    let api_version = object["apiVersion"]
        .as_str()
        .context("object without apiVersion")?;
    let kind = object["kind"].as_str().context("object without kind")?;
    let namespace = object["metadata"]["namespace"].as_str().or(Some("default"));
    let request = Request::post(collection(api_version, kind, namespace))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(object)?)?;
    send(client, request)
        .await
        .with_context(|| format!("creating {kind} {}", object["metadata"]["name"]))
}

/// A JSON merge patch of one object.
pub async fn merge_patch(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    patch: &Value,
) -> anyhow::Result<Value> {
    let path = format!("{}/{name}", collection(api_version, kind, Some(namespace)));
    let request = Request::patch(path)
        .header("content-type", "application/merge-patch+json")
        .body(serde_json::to_vec(patch)?)?;
    send(client, request)
        .await
        .with_context(|| format!("patching {kind} {namespace}/{name}"))
}

/// A JSON merge patch of `object` (at `subresource`, if any) written as field manager `manager`.
pub async fn patch_as(
    client: &kube::Client,
    object: &Value,
    subresource: Option<&str>,
    manager: &str,
    patch: &Value,
) -> anyhow::Result<Value> {
    let api_version = object["apiVersion"]
        .as_str()
        .context("object without apiVersion")?;
    let kind = object["kind"].as_str().context("object without kind")?;
    let namespace = object["metadata"]["namespace"].as_str();
    let name = object["metadata"]["name"]
        .as_str()
        .context("object without name")?;
    let mut path = format!("{}/{name}", collection(api_version, kind, namespace));
    if let Some(subresource) = subresource {
        path.push_str(&format!("/{subresource}"));
    }
    path.push_str(&format!("?fieldManager={manager}"));
    let request = Request::patch(path)
        .header("content-type", "application/merge-patch+json")
        .body(serde_json::to_vec(patch)?)?;
    send(client, request)
        .await
        .with_context(|| format!("patching {kind} {name} as {manager}"))
}

pub async fn delete(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Value> {
    let path = format!("{}/{name}", collection(api_version, kind, Some(namespace)));
    let request = Request::delete(path).body(Vec::new())?;
    send(client, request)
        .await
        .with_context(|| format!("deleting {kind} {namespace}/{name}"))
}
