//! Paths outside the resource tree: discovery documents, /version, health checks and the
//! index of paths.

use super::parts::*;
use crate::apiserver::body::{self, Body};
use crate::apiserver::discovery;
use crate::apiserver::resources::ResourceDef;
use crate::apiserver::shared::Shared;
use crate::apiserver::status::{ApiError, ApiResult};
use http::{HeaderMap, Method, Response, header};
use serde_json::{Value, json};
use std::sync::Arc;

pub(super) fn non_resource(
    shared: &Shared,
    method: &Method,
    headers: &HeaderMap,
    segments: &[&str],
) -> ApiResult<Response<Body>> {
    if method != Method::GET {
        return Err(ApiError::page_not_found());
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let defs: Vec<Arc<ResourceDef>> = shared.state.lock().resources().cloned().collect();
    Ok(match segments {
        ["version"] => json_response(200, &version(), &[]),
        ["healthz"] | ["readyz"] | ["livez"] => text_response(200, "ok"),
        ["api"] if discovery::wants_aggregated(accept) => aggregated(&defs, true),
        ["api"] => json_response(200, &discovery::api_versions(&shared.server_address()), &[]),
        ["apis"] if discovery::wants_aggregated(accept) => aggregated(&defs, false),
        ["apis"] => json_response(200, &discovery::api_group_list(&defs), &[]),
        ["apis", group] => json_response(
            200,
            &discovery::api_group(&defs, group).ok_or_else(ApiError::page_not_found)?,
            &[],
        ),
        ["api", version] => json_response(
            200,
            &discovery::api_resource_list(&defs, "", version)
                .ok_or_else(ApiError::page_not_found)?,
            &[],
        ),
        ["apis", group, version] => json_response(
            200,
            &discovery::api_resource_list(&defs, group, version)
                .ok_or_else(ApiError::page_not_found)?,
            &[],
        ),
        // A real server answers its OpenAPI index as text/plain.
        ["openapi", "v3"] => {
            let index = discovery::openapi_index(&discovery::openapi_documents(&defs));
            http::Response::builder()
                .status(200)
                .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
                .body(body::full(serde_json::to_vec(&index).expect("JSON")))
                .expect("valid response")
        }
        ["openapi", "v3", rest @ ..] => {
            let docs = discovery::openapi_documents(&defs);
            json_response(
                200,
                docs.get(&rest.join("/"))
                    .ok_or_else(ApiError::page_not_found)?,
                &[],
            )
        }
        [] => json_response(
            200,
            &json!({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v3", "/readyz", "/version"]}),
            &[],
        ),
        _ => return Err(ApiError::page_not_found()),
    })
}

/// `/version`: the recorded server's own answer, which the sandbox stands for.
fn version() -> Value {
    json!({
    "major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36",
    "minCompatibilityMajor": "1", "minCompatibilityMinor": "35", "gitVersion": "v1.36.2",
    "gitCommit": "98b35193b2ac7a23a673325f5e9b830ecd5ba406", "gitTreeState": "clean",
    "buildDate": "2026-12-07T11:12:05Z", "goVersion": "go1.27.3-X:nojsonv2", "compiler": "gc",
    "platform": "linux/amd64"})
}

/// Aggregated discovery (`/api` with `core`, else `/apis`), as a client that asks for it gets it.
fn aggregated(defs: &[Arc<ResourceDef>], core: bool) -> Response<Body> {
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, discovery::AGGREGATED_CONTENT_TYPE)
        .header(header::VARY, "Accept")
        .body(body::full(
            serde_json::to_vec(&discovery::aggregated(defs, core)).expect("JSON"),
        ))
        .expect("valid response")
}
