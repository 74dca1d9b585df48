//! Helpers shared by the sandbox tests.

use capi_sandbox::crds::{self, Dialect};
use capi_sandbox::{ApiServer, ServerOptions};
use http::Request;
use http_body_util::BodyExt;
use serde_json::Value;

/// A server with the Cluster API CRDs of `dialect`, and an in-process client for it.
pub fn capi_server(dialect: Dialect) -> (ApiServer, kube::Client) {
    let server = ApiServer::new(ServerOptions::default());
    crds::install(&server, dialect).expect("CRDs install");
    let client = server.client();
    (server, client)
}

/// The answer to one raw request: status code, headers and body (JSON when it parses).
pub struct Answer {
    pub code: u16,
    pub headers: http::HeaderMap,
    pub body: Value,
    pub text: String,
}

/// Sends a request as is, so tests see exact status codes and Status bodies.
pub async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> Answer {
    raw_with(
        client,
        method,
        path,
        &[("content-type", content_type)],
        body,
    )
    .await
}

/// [`raw`] with the request's headers given.
pub async fn raw_with(
    client: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(body.as_bytes().to_vec()).unwrap();
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .expect("request sent");
    let code = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Answer {
        code,
        headers,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    }
}

pub async fn get(client: &kube::Client, path: &str) -> Answer {
    raw(client, "GET", path, "application/json", "").await
}

pub async fn post(client: &kube::Client, path: &str, body: &Value) -> Answer {
    raw(client, "POST", path, "application/json", &body.to_string()).await
}

pub const WIDGETS: &str = "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters";

pub use capi_sandbox::wait_until;

/// The types of the events of a watch answered whole (`ADDED`, `MODIFIED`, …), in order.
pub fn event_types(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}
