//! Reads: LIST pages with continue tokens, and WATCH streams.

use super::parts::*;
use crate::apiserver::body::{self, Body};
use crate::apiserver::ops;
use crate::apiserver::shared::Shared;
use crate::apiserver::status::{ApiError, ApiResult};
use crate::apiserver::watch::{self, WatchSpec};
use bytes::Bytes;
use http::{HeaderMap, Response, header};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Continue tokens carry the list's resourceVersion and the last key served, as the real server's do.
pub(super) fn continue_token(rv: u64, namespace: &str, name: &str) -> String {
    use base64::Engine;
    let start = if namespace.is_empty() {
        format!("/{name}\u{0}")
    } else {
        format!("/{namespace}/{name}\u{0}")
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).to_string())
}

pub(super) fn parse_continue(token: &str) -> ApiResult<(u64, String, String)> {
    use base64::Engine;
    let invalid = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| invalid())?;
    let value: Value = serde_json::from_slice(&raw).map_err(|_| invalid())?;
    let start = value["start"]
        .as_str()
        .ok_or_else(invalid)?
        .trim_end_matches('\u{0}')
        .trim_start_matches('/')
        .to_string();
    let (ns, name) = match start.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), start),
    };
    Ok((value["rv"].as_u64().ok_or_else(invalid)?, ns, name))
}

/// Whether a LIST asks for metadata only (`Accept: application/json;as=PartialObjectMetadataList;
/// g=meta.k8s.io;v=v1`), as kubectl and kube-rs's `list_metadata` send.
pub(super) fn metadata_only(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .next()
        .is_some_and(|first| {
            let parameters: Vec<&str> = first.split(';').map(str::trim).collect();
            parameters.contains(&"as=PartialObjectMetadataList")
                && parameters.contains(&"g=meta.k8s.io")
                && parameters.contains(&"v=v1")
        })
}

/// LIST: a page of the objects (or, `metadata_only`, of their metadata, as the real apiserver
/// answers a `PartialObjectMetadataList`: each item's metadata, managedFields included).
pub(super) fn list(
    shared: &Shared,
    target: &Target,
    query: &Query,
    metadata_only: bool,
) -> ApiResult<Reply> {
    let def = &target.def;
    let (labels, fields) = selectors(def, query)?;
    let limit: usize = query
        .get("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let (candidates, rv) = {
        let state = shared.state.lock();
        match query.get("continue").filter(|c| !c.is_empty()) {
            Some(token) => {
                let (rv, ns, name) = parse_continue(token)?;
                (
                    state.list_after(&def.key(), target.namespace.as_deref(), &(ns, name)),
                    rv,
                )
            }
            None => (
                state.list(&def.key(), target.namespace.as_deref()),
                state.rv,
            ),
        }
    };
    let filtering = !labels.is_empty() || query.get("fieldSelector").is_some_and(|f| !f.is_empty());
    let mut items: Vec<Arc<Value>> = Vec::new();
    let mut more = false;
    let mut remaining = 0usize;
    for object in candidates.iter() {
        if !(labels.matches_object(object) && fields.matches_object(object)) {
            continue;
        }
        if items.len() == limit {
            more = true;
            if filtering {
                break;
            }
            remaining += 1;
            continue;
        }
        items.push(object.clone());
    }
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if more && let Some(last) = items.last() {
        let (ns, name) = ops::obj_key(last);
        metadata["continue"] = json!(continue_token(rv, &ns, &name));
        if !filtering {
            metadata["remainingItemCount"] = json!(remaining);
        }
    }
    let body = if metadata_only {
        metadata_list(&items, metadata)
    } else {
        serialised_list(target, &items, &metadata)
    };
    Ok(Reply::Raw(
        Response::builder()
            .status(200)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body::full(body))
            .expect("valid response"),
    ))
}

/// A metadata-only LIST's answer: each item's metadata as a `PartialObjectMetadata`.
fn metadata_list(items: &[Arc<Value>], metadata: Value) -> Vec<u8> {
    let items: Vec<Value> = items
        .iter()
        .map(|item| {
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": item["metadata"]})
        })
        .collect();
    let list = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata, "items": items});
    serde_json::to_vec(&list).expect("JSON")
}

/// A LIST's answer, serialised by hand so that 10,000 stored objects are not deep-copied to
/// rewrite their apiVersion.
fn serialised_list(target: &Target, items: &[Arc<Value>], metadata: &Value) -> Vec<u8> {
    let def = &target.def;
    let api_version = def.api_version(&target.version);
    let storage_matches = target.version == def.storage_version();
    let mut out = Vec::with_capacity(items.len() * 1024);
    out.extend_from_slice(b"{\"apiVersion\":");
    serde_json::to_writer(&mut out, &api_version).expect("JSON");
    out.extend_from_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if storage_matches {
            serde_json::to_writer(&mut out, item.as_ref()).expect("JSON");
        } else {
            serde_json::to_writer(&mut out, &ops::at_version(item, def, &target.version))
                .expect("JSON");
        }
    }
    out.extend_from_slice(b"],\"kind\":");
    serde_json::to_writer(&mut out, &def.list_kind).expect("JSON");
    out.extend_from_slice(b",\"metadata\":");
    serde_json::to_writer(&mut out, metadata).expect("JSON");
    out.push(b'}');
    out
}

pub(super) fn start_watch(
    shared: &Arc<Shared>,
    target: &Target,
    query: &Query,
) -> ApiResult<Reply> {
    let def = target.def.clone();
    let spec = watch_spec(shared, target, query)?;
    let send_initial = query.flag("sendInitialEvents");
    let (initial, last_rv, live) = {
        let state = shared.state.lock();
        let live = state.subscribe();
        let requested = query.get("resourceVersion").unwrap_or("");
        let mut lines = Vec::new();
        if requested.is_empty() || requested == "0" || send_initial {
            for object in state.list(&def.key(), target.namespace.as_deref()) {
                if spec.labels.matches_object(&object) && spec.fields.matches_object(&object) {
                    lines.push(WatchSpec::line(
                        "ADDED",
                        &ops::at_version(&object, &def, &spec.version),
                    ));
                }
            }
            if send_initial {
                lines.push(WatchSpec::line("BOOKMARK", &json!({"kind": def.kind, "apiVersion": def.api_version(&spec.version),
                    "metadata": {"resourceVersion": state.rv.to_string(), "annotations": {"k8s.io/initial-events-end": "true"}}})));
            }
            (lines, state.rv, live)
        } else {
            let rv: u64 = requested.parse().map_err(|_| {
                ApiError::bad_request(format!("invalid resource version: {requested}"))
            })?;
            match state.events_since(rv) {
                Some(events) => {
                    for event in events {
                        if let Some((kind, object)) = spec.translate(&event) {
                            lines.push(WatchSpec::line(kind.as_str(), &object));
                        }
                    }
                    (lines, state.rv, live)
                }
                None => {
                    let gone = ApiError::expired(format!(
                        "too old resource version: {rv} ({})",
                        state.compacted_rv + 1
                    ));
                    let line = WatchSpec::line("ERROR", &gone.to_status());
                    return Ok(Reply::Raw(stream_response(futures::stream::iter(vec![
                        Ok::<Bytes, std::io::Error>(line),
                    ]))));
                }
            }
        }
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    tokio::spawn(watch::run(
        spec,
        initial,
        last_rv,
        live,
        tx,
        shared.shutdown.subscribe(),
    ));
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    Ok(Reply::Raw(stream_response(futures::StreamExt::map(
        stream,
        Ok::<Bytes, std::io::Error>,
    ))))
}

/// What a watch sends, as its query asks: which objects, bookmarks, and for how long.
fn watch_spec(shared: &Shared, target: &Target, query: &Query) -> ApiResult<WatchSpec> {
    let (labels, fields) = selectors(&target.def, query)?;
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    Ok(WatchSpec {
        def: target.def.clone(),
        version: target.version.clone(),
        namespace: target.namespace.clone(),
        labels,
        fields,
        bookmarks: query.flag("allowWatchBookmarks"),
        timeout,
        bookmark_interval: shared.options.bookmark_interval,
    })
}

pub(super) fn stream_response<S>(stream: S) -> Response<Body>
where
    S: futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
{
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(body::stream(stream))
        .expect("valid response")
}
