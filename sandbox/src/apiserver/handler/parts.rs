//! The parts of a request the verbs share: who sent it (`User`), what it addresses (`Target`),
//! its query, body and selectors, and the answers they build (`Reply`, JSON and text responses).

use crate::apiserver::body::{self, Body};
use crate::apiserver::ops::{self, WriteCtx};
use crate::apiserver::resources::{Flavor, ResourceDef};
use crate::apiserver::selector::{FieldSelector, LabelSelector};
use crate::apiserver::shared::Shared;
use crate::apiserver::status::{ApiError, ApiResult};
use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode, header};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Who is asking.
#[derive(Clone, Debug)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
    pub is_admin: bool,
}

impl User {
    /// What authorization rules may name: the user and `group:<g>` for each group.
    pub(super) fn subjects(&self) -> Vec<String> {
        std::iter::once(self.name.clone())
            .chain(self.groups.iter().map(|g| format!("group:{g}")))
            .collect()
    }
}

/// A request for a resource, once routed.
pub(super) struct Target {
    pub(super) def: Arc<ResourceDef>,
    pub(super) version: String,
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
    pub(super) subresource: Option<String>,
    pub(super) verb: &'static str,
}

pub(super) struct Query(pub(super) HashMap<String, Vec<String>>);

impl Query {
    pub(super) fn parse(raw: Option<&str>) -> Self {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            map.entry(k.into_owned()).or_default().push(v.into_owned());
        }
        Query(map)
    }
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.last()).map(String::as_str)
    }
    pub(super) fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true") | Some("1"))
    }
    pub(super) fn dry_run(&self) -> bool {
        self.0
            .get("dryRun")
            .is_some_and(|v| v.iter().any(|x| x == "All"))
    }
}

pub(super) fn json_response(
    code: u16,
    body: &Value,
    extra: &[(header::HeaderName, String)],
) -> Response<Body> {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json");
    for (name, value) in extra {
        builder = builder.header(name, value);
    }
    builder
        .body(body::full(serde_json::to_vec(body).expect("JSON")))
        .expect("valid response")
}

pub(super) fn text_response(code: u16, text: &str) -> Response<Body> {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(body::full(text.to_string()))
        .expect("valid response")
}

pub(super) fn parse_body(body: &Bytes, content_type: &str) -> ApiResult<Value> {
    if content_type.starts_with(crate::apiserver::protobuf::CONTENT_TYPE) {
        return crate::apiserver::protobuf::decode(body).map_err(|e| match e {
            crate::apiserver::protobuf::Undecodable::Kind(_) => {
                ApiError::unsupported_media_type(&["application/json", "application/yaml"])
            }
            crate::apiserver::protobuf::Undecodable::Malformed(e) => {
                ApiError::bad_request(format!("unable to decode protobuf body: {e}"))
            }
        });
    }
    if content_type.contains("yaml") {
        if let Ok(value) = serde_json::from_slice::<Value>(body) {
            return Ok(value);
        }
        let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
        return serde_saphyr::from_str::<Value>(text)
            .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })
}

/// `fieldValidation`: Strict refuses unknown fields, Warn (the default) reports them in
/// `Warning` headers, Ignore drops them silently.
pub(super) fn validate_fields(
    def: &ResourceDef,
    object: &mut Value,
    query: &Query,
    warnings: &mut Vec<String>,
) -> ApiResult<()> {
    let unknown = ops::unknown_fields(def, object);
    if unknown.is_empty() {
        return Ok(());
    }
    match query.get("fieldValidation").unwrap_or("Warn") {
        // Built-in kinds are decoded into typed structs, and the message says so.
        "Strict" if !def.is_custom() => Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            unknown
                .iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect::<Vec<_>>()
                .join(", "),
            kind = def.kind,
            version = def.storage_version(),
        ))),
        "Strict" => Err(ApiError::bad_request(format!(
            "strict decoding error: {}",
            unknown
                .iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        "Ignore" => {
            ops::drop_fields(object, &unknown);
            Ok(())
        }
        _ => {
            warnings.extend(unknown.iter().map(|f| format!("unknown field \"{f}\"")));
            // Decoding drops what the schema does not know.
            ops::drop_fields(object, &unknown);
            Ok(())
        }
    }
}

pub(super) enum Reply {
    Json(u16, Value),
    Raw(Response<Body>),
}

pub(super) fn write_ctx(
    shared: &Shared,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
) -> WriteCtx {
    let _ = shared;
    WriteCtx {
        manager: field_manager(query, headers),
        api_version: target.def.api_version(&target.version),
        dry_run: query.dry_run(),
        time: ops::now(),
    }
}

pub(super) fn field_selector_fields(def: &ResourceDef) -> &'static [&'static str] {
    match def.flavor {
        Flavor::Secret => &["type"],
        Flavor::Namespace => &["status.phase"],
        _ => &[],
    }
}

pub(super) fn selectors(
    def: &ResourceDef,
    query: &Query,
) -> ApiResult<(LabelSelector, FieldSelector)> {
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or(""))
        .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(
        query.get("fieldSelector").unwrap_or(""),
        field_selector_fields(def),
    )
    .map_err(ApiError::bad_request)?;
    Ok((labels, fields))
}

impl Target {
    /// Notes this write, applied under `state`, for the fencing check.
    pub(super) fn fence(
        &self,
        shared: &crate::apiserver::shared::Shared,
        state: &crate::apiserver::store::State,
        headers: &HeaderMap,
        dry_run: bool,
    ) {
        let path = [
            Some(self.def.plural.as_str()),
            self.namespace.as_deref(),
            self.name.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("/");
        let noted = crate::apiserver::fencing::note(
            state,
            headers,
            (self.verb, &self.def.group, path),
            dry_run,
        );
        shared.fences.lock().extend(noted);
    }

    /// The (namespace, name) the request addresses.
    pub(super) fn key(&self) -> (String, String) {
        (
            self.namespace.clone().unwrap_or_default(),
            self.name.clone().unwrap_or_default(),
        )
    }
}

pub(super) fn field_manager(query: &Query, headers: &HeaderMap) -> String {
    if let Some(manager) = query.get("fieldManager").filter(|m| !m.is_empty()) {
        return manager.to_string();
    }
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let prefix = agent.split('/').next().unwrap_or("").trim();
    if prefix.is_empty() {
        "unknown".to_string()
    } else {
        prefix.chars().take(128).collect()
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http::{HeaderMap, header};
    use serde_json::json;

    use super::*;
    use crate::apiserver::handler::reviews::rules_status;
    use crate::apiserver::handler::writes::delete_options;
    use crate::apiserver::server::ApiServer;

    #[test]
    fn the_field_manager_comes_from_the_query_else_the_user_agent_else_unknown() {
        let mut headers = HeaderMap::new();
        assert_eq!(field_manager(&Query::parse(None), &headers), "unknown");
        headers.insert(
            header::USER_AGENT,
            "kubectl/v1.33.1 (linux/amd64)".parse().unwrap(),
        );
        assert_eq!(field_manager(&Query::parse(None), &headers), "kubectl");
        let query = Query::parse(Some("fieldManager=capi"));
        assert_eq!(field_manager(&query, &headers), "capi");
    }

    #[test]
    fn bodies_kubectl_cannot_send_otherwise_are_415_and_broken_ones_400() {
        let protobuf = "application/vnd.kubernetes.protobuf";
        let unknown_kind = [b"k8s\0".as_slice(), &[0x0a, 0x06, 0x12, 0x04], b"Node"].concat();
        let unsupported = parse_body(&Bytes::from(unknown_kind), protobuf).unwrap_err();
        assert_eq!(
            (unsupported.code, unsupported.reason),
            (415, "UnsupportedMediaType")
        );
        let broken = parse_body(&Bytes::from_static(b"no envelope"), protobuf).unwrap_err();
        assert_eq!((broken.code, broken.reason), (400, "BadRequest"));
        let json = parse_body(&Bytes::from_static(b"{not json"), "application/json").unwrap_err();
        assert_eq!((json.code, json.reason), (400, "BadRequest"));
    }

    #[test]
    fn delete_options_read_preconditions_propagation_and_dry_run() {
        let body = Bytes::from_static(
            br#"{"kind":"DeleteOptions","propagationPolicy":"Foreground","preconditions":{"uid":"u1"},"dryRun":["All"]}"#,
        );
        let no_query = Query::parse(None);
        let dry_query = Query::parse(Some("dryRun=All"));
        let options = delete_options(&body, "application/json").unwrap();
        assert_eq!(options.0.propagation.as_deref(), Some("Foreground"));
        assert_eq!(options.0.precondition_uid.as_deref(), Some("u1"));
        assert!(options.dry_run(&no_query));
        let none = delete_options(&Bytes::new(), "application/json").unwrap();
        assert!(none.0.propagation.is_none() && !none.dry_run(&no_query));
        assert!(none.dry_run(&dry_query), "without a body the query decides");
        let real = Bytes::from_static(br#"{"kind":"DeleteOptions","preconditions":{"uid":"u1"}}"#);
        let options = delete_options(&real, "application/json").unwrap();
        assert!(
            !options.dry_run(&dry_query),
            "beside a body the query's dryRun is ignored: the delete is real"
        );
        let broken = delete_options(&Bytes::from_static(b"[1"), "application/json").unwrap_err();
        assert_eq!((broken.code, broken.reason), (400, "BadRequest"));
    }

    #[test]
    fn rules_reviews_list_what_a_user_was_granted() {
        let server = ApiServer::default();
        server.grant("nobody", "get", "", "secrets");
        let nobody = User {
            name: "nobody".into(),
            groups: vec![],
            is_admin: false,
        };
        let status = rules_status(&server.shared, &nobody);
        assert_eq!(
            status["resourceRules"],
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}])
        );
        assert_eq!(status["incomplete"], false);
        server.deny("delete", "secrets");
        assert_eq!(
            rules_status(&server.shared, &nobody)["incomplete"],
            true,
            "denials cannot be listed as rules"
        );
    }
}
