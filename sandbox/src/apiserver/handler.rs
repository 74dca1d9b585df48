//! One request: authenticate, route, authorize, inject faults, execute, log.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Shared;
use super::body::{self, Body};
use super::control::{FaultAction, RequestRecord};
use super::discovery;
use super::ops::{self, DeleteOptions, Deleted, UpdateKind, WriteCtx};
use super::patch::{self, PatchKind};
use super::resources::{Flavor, ResourceDef};
use super::selector::{FieldSelector, LabelSelector};
use super::status::{ApiError, ApiResult, success_status};
use super::watch::{self, WatchSpec};

/// The largest request body the apiserver reads.
pub const MAX_REQUEST_BYTES: usize = 3 * 1024 * 1024;

enum Outcome {
    Respond(Response<Body>),
    /// Close the connection without an answer.
    Drop,
    /// Answer, but only after this delay (the request is logged before it).
    Late(Response<Body>, Duration),
}

/// Who is asking.
#[derive(Clone, Debug)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
    pub is_admin: bool,
}

impl User {
    /// What authorization rules may name: the user and `group:<g>` for each group.
    fn subjects(&self) -> Vec<String> {
        std::iter::once(self.name.clone())
            .chain(self.groups.iter().map(|g| format!("group:{g}")))
            .collect()
    }
}

/// A request for a resource, once routed.
struct Target {
    def: Arc<ResourceDef>,
    version: String,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
    verb: &'static str,
}

struct Query(HashMap<String, Vec<String>>);

impl Query {
    fn parse(raw: Option<&str>) -> Self {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            map.entry(k.into_owned()).or_default().push(v.into_owned());
        }
        Query(map)
    }
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.last()).map(String::as_str)
    }
    fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true") | Some("1"))
    }
    fn dry_run(&self) -> bool {
        self.0
            .get("dryRun")
            .is_some_and(|v| v.iter().any(|x| x == "All"))
    }
}

fn json_response(
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

fn text_response(code: u16, text: &str) -> Response<Body> {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(body::full(text.to_string()))
        .expect("valid response")
}

pub fn error_response(err: &ApiError) -> Response<Body> {
    if err.plain_text {
        return text_response(err.code, &err.message);
    }
    let mut extra = Vec::new();
    if let Some(seconds) = err.retry_after {
        extra.push((header::RETRY_AFTER, seconds.to_string()));
    }
    json_response(err.code, &err.to_status(), &extra)
}

fn field_manager(query: &Query, headers: &HeaderMap) -> String {
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

fn authenticate(shared: &Shared, headers: &HeaderMap) -> ApiResult<User> {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if let Some(user) = presented.and_then(|t| shared.options.user_tokens.get(t)) {
        // Not an admin: it may not impersonate, and has only what it is granted.
        if let Some(wanted) = headers.get("impersonate-user") {
            let wanted = wanted.to_str().unwrap_or_default();
            return Err(ApiError::forbidden(
                format!(
                    "users \"{wanted}\" is forbidden: User \"{user}\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
                ),
                json!({"name": wanted, "kind": "users"}),
            ));
        }
        return Ok(User {
            name: user.clone(),
            groups: vec!["system:authenticated".to_string()],
            is_admin: false,
        });
    }
    if let Some(expected) = &shared.options.token
        && presented != Some(expected.as_str())
    {
        return Err(ApiError::unauthorized());
    }
    let admin = shared.options.admin_user.clone();
    let groups: Vec<String> = headers
        .get_all("impersonate-group")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect();
    match headers
        .get("impersonate-user")
        .and_then(|v| v.to_str().ok())
    {
        Some(user) if user != admin => Ok(User {
            name: user.to_string(),
            groups,
            is_admin: false,
        }),
        _ => Ok(User {
            name: admin,
            groups: vec!["system:masters".to_string()],
            is_admin: true,
        }),
    }
}

fn forbidden(user: &User, target: &Target) -> ApiError {
    let resource = match &target.subresource {
        Some(sub) => format!("{}/{sub}", target.def.plural),
        None => target.def.plural.clone(),
    };
    let subject = match &target.name {
        Some(name) => format!("{} \"{name}\"", target.def.names().qualified_resource()),
        None => target.def.names().qualified_resource(),
    };
    let scope = match &target.namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    let mut details = json!({"group": target.def.group, "kind": target.def.plural});
    if let Some(name) = &target.name {
        details["name"] = json!(name);
    }
    ApiError::forbidden(
        format!(
            "{subject} is forbidden: User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
            user.name, target.verb, target.def.group
        ),
        details,
    )
}

/// Routes a resource path. `Ok(None)` means "not a resource path".
fn route(
    shared: &Shared,
    method: &Method,
    segments: &[&str],
    query: &Query,
) -> ApiResult<Option<Target>> {
    let (group, version, rest) = match segments {
        ["api", version, rest @ ..] if !rest.is_empty() => ("", *version, rest),
        ["apis", group, version, rest @ ..] if !rest.is_empty() => (*group, *version, rest),
        _ => return Ok(None),
    };
    let (namespace, plural, name, subresource) = match rest {
        ["namespaces", ns, sub] if group.is_empty() && (*sub == "status" || *sub == "finalize") => {
            (None, "namespaces", Some(*ns), Some(*sub))
        }
        ["namespaces", ns, plural] => (Some(*ns), *plural, None, None),
        ["namespaces", ns, plural, name] => (Some(*ns), *plural, Some(*name), None),
        ["namespaces", ns, plural, name, sub] => (Some(*ns), *plural, Some(*name), Some(*sub)),
        [plural] => (None, *plural, None, None),
        [plural, name] => (None, *plural, Some(*name), None),
        [plural, name, sub] => (None, *plural, Some(*name), Some(*sub)),
        _ => return Err(ApiError::page_not_found()),
    };
    let def = shared
        .state
        .lock()
        .lookup(group, version, plural)
        .ok_or_else(ApiError::page_not_found)?;
    // A cluster-scoped kind has no namespaced path; a namespaced one is reachable without a
    // namespace only for list and watch across all namespaces.
    if namespace.is_some() && !def.namespaced {
        return Err(ApiError::page_not_found());
    }
    if namespace.is_none() && def.namespaced && name.is_some() {
        return Err(ApiError::page_not_found());
    }
    if let Some(sub) = subresource {
        let v = def.version(version).expect("lookup checked the version");
        let known = (sub == "status" && v.status)
            || (sub == "scale" && v.scale.is_some())
            || (sub == "finalize" && def.flavor == Flavor::Namespace);
        if !known {
            return Err(ApiError::page_not_found());
        }
    }
    let verb = match (method.as_str(), name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) if query.flag("watch") => "watch",
        ("GET", false) => "list",
        ("POST", false) => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        (other, _) => return Err(ApiError::method_not_allowed(&other.to_lowercase())),
    };
    if !def.verbs.contains(&verb) {
        return Err(ApiError::method_not_allowed(verb));
    }
    Ok(Some(Target {
        def,
        version: version.to_string(),
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
        subresource: subresource.map(str::to_string),
        verb,
    }))
}

fn parse_body(body: &Bytes, content_type: &str) -> ApiResult<Value> {
    if content_type.starts_with(super::protobuf::CONTENT_TYPE) {
        return super::protobuf::decode(body).map_err(|e| match e {
            super::protobuf::Undecodable::Kind(_) => {
                ApiError::unsupported_media_type(&["application/json", "application/yaml"])
            }
            super::protobuf::Undecodable::Malformed(e) => {
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
fn validate_fields(
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

fn deprecation_warning(target: &Target) -> Vec<(header::HeaderName, String)> {
    let Some(v) = target.def.version(&target.version) else {
        return Vec::new();
    };
    if !v.deprecated {
        return Vec::new();
    }
    let text = v.deprecation_warning.clone().unwrap_or_else(|| {
        format!(
            "{} {} is deprecated",
            target.def.api_version(&target.version),
            target.def.kind
        )
    });
    vec![(
        header::HeaderName::from_static("warning"),
        format!("299 - \"{}\"", text.replace('"', "'")),
    )]
}

/// When a request's headers arrived, before its body was read.
#[derive(Clone, Copy)]
pub struct Arrived(pub std::time::Instant);

/// Serves one request and logs it; `None` when an injected fault drops the connection.
pub async fn handle(shared: Arc<Shared>, request: Request<Bytes>) -> Option<Response<Body>> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query = Query::parse(parts.uri.query());
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let mut record = RequestRecord {
        verb: parts.method.as_str().to_lowercase(),
        group: String::new(),
        resource: String::new(),
        namespace: None,
        name: None,
        subresource: None,
        code: 0,
        dry_run: query.dry_run(),
        user: String::new(),
        path: path.clone(),
        version: String::new(),
        agent: parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        precondition_uid: (parts.method == Method::DELETE)
            .then(|| serde_json::from_slice::<Value>(&body).ok())
            .flatten()
            .and_then(|options| options["preconditions"]["uid"].as_str().map(str::to_string)),
        started: shared.tick(),
        finished: 0,
        arrived: parts
            .extensions
            .get::<Arrived>()
            .map_or_else(std::time::Instant::now, |a| a.0),
        answered: std::time::Instant::now(),
    };

    let outcome = serve(
        &shared,
        &parts.method,
        &parts.headers,
        &segments,
        &query,
        body,
        &mut record,
    )
    .await;
    record.finished = shared.tick();
    record.answered = std::time::Instant::now();
    record.code = match &outcome {
        Outcome::Respond(response) | Outcome::Late(response, _) => response.status().as_u16(),
        Outcome::Drop => 0,
    };
    shared.log.lock().push(record);
    match outcome {
        Outcome::Respond(response) => Some(response),
        Outcome::Late(response, delay) => {
            shared.answers_held.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(delay).await;
            shared.answers_held.fetch_sub(1, Ordering::SeqCst);
            Some(response)
        }
        Outcome::Drop => None,
    }
}

async fn serve(
    shared: &Arc<Shared>,
    method: &Method,
    headers: &HeaderMap,
    segments: &[&str],
    query: &Query,
    body: Bytes,
    record: &mut RequestRecord,
) -> Outcome {
    let user = match authenticate(shared, headers) {
        Ok(user) => user,
        Err(err) => return Outcome::Respond(error_response(&err)),
    };
    record.user = user.name.clone();
    if body.len() > MAX_REQUEST_BYTES {
        return Outcome::Respond(error_response(&ApiError::request_too_large(
            MAX_REQUEST_BYTES,
        )));
    }
    let target = match route(shared, method, segments, query) {
        Ok(Some(target)) => target,
        Ok(None) => {
            return Outcome::Respond(match non_resource(shared, method, headers, segments) {
                Ok(response) => response,
                Err(err) => error_response(&err),
            });
        }
        Err(err) => return Outcome::Respond(error_response(&err)),
    };
    record.verb = target.verb.to_string();
    record.group = target.def.group.clone();
    record.resource = target.def.plural.clone();
    record.version = target.version.clone();
    record.namespace = target.namespace.clone();
    record.name = target.name.clone();
    record.subresource = target.subresource.clone();

    let allowed = shared.policy.lock().allows(
        &user.subjects(),
        user.is_admin,
        target.verb,
        &target.def.group,
        &match &target.subresource {
            Some(sub) => format!("{}/{sub}", target.def.plural),
            None => target.def.plural.clone(),
        },
    );
    // Everyone may ask about themselves (Kubernetes' system:basic-user role).
    let self_review =
        target.def.flavor == Flavor::Review && target.def.kind.starts_with("SelfSubject");
    if !allowed && !self_review {
        return Outcome::Respond(error_response(&forbidden(&user, &target)));
    }

    let actions = shared.faults.lock().take(
        target.verb,
        query.dry_run(),
        &target.def.plural,
        target.name.as_deref(),
        &record.agent,
    );
    let mut drop_after = false;
    let mut stall_after = None;
    for action in actions {
        match action {
            FaultAction::Latency(delay) => tokio::time::sleep(delay).await,
            FaultAction::Fail { code, retry_after } => {
                let err = match code {
                    429 => ApiError::too_many_requests(retry_after.unwrap_or(1)),
                    409 => ApiError::conflict(
                        &target.def.names(),
                        target.name.as_deref().unwrap_or(""),
                    ),
                    _ => ApiError::injected(code, format!("injected failure ({code})")),
                };
                return Outcome::Respond(error_response(&err));
            }
            FaultAction::Drop => return Outcome::Drop,
            FaultAction::ApplyThenDrop => drop_after = true,
            FaultAction::ApplyThenStall(delay) => stall_after = Some(delay),
        }
    }

    let is_write = matches!(
        target.verb,
        "create" | "update" | "patch" | "delete" | "deletecollection"
    );
    if is_write && !query.dry_run() && target.def.flavor != Flavor::Review {
        let latency = shared.write_latency();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
    }
    let mut warnings = deprecation_warning(&target);
    let mut field_warnings = Vec::new();
    let result = execute(
        shared,
        &user,
        &target,
        headers,
        query,
        body,
        &mut field_warnings,
    )
    .await;
    warnings.extend(field_warnings.into_iter().map(|w| {
        (
            header::HeaderName::from_static("warning"),
            format!("299 - \"{}\"", w.replace('"', "\\\"")),
        )
    }));
    if is_write {
        shared.gc_wanted();
    }
    if drop_after {
        return Outcome::Drop;
    }
    if let (Ok(Reply::Json(_, created)), None, "create") = (&result, &record.name, target.verb) {
        // A create names its object in the body; the log names what it created.
        record.name = created["metadata"]["name"].as_str().map(str::to_string);
    }
    let response = match result {
        Ok(Reply::Json(code, value)) => json_response(code, &value, &warnings),
        Ok(Reply::Raw(response)) => response,
        Err(err) => error_response(&err),
    };
    match stall_after {
        Some(delay) => Outcome::Late(response, delay),
        None => Outcome::Respond(response),
    }
}

enum Reply {
    Json(u16, Value),
    Raw(Response<Body>),
}

fn non_resource(
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
    let aggregated = |core: bool| {
        Response::builder()
            .status(200)
            .header(header::CONTENT_TYPE, discovery::AGGREGATED_CONTENT_TYPE)
            .header(header::VARY, "Accept")
            .body(body::full(
                serde_json::to_vec(&discovery::aggregated(&defs, core)).expect("JSON"),
            ))
            .expect("valid response")
    };
    Ok(match segments {
        ["version"] => json_response(
            200,
            &json!({
            "major": "1", "minor": "33", "gitVersion": "v1.33.0-capi-sandbox", "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"}),
            &[],
        ),
        ["healthz"] | ["readyz"] | ["livez"] => text_response(200, "ok"),
        ["api"] if discovery::wants_aggregated(accept) => aggregated(true),
        ["api"] => json_response(200, &discovery::api_versions(&shared.server_address()), &[]),
        ["apis"] if discovery::wants_aggregated(accept) => aggregated(false),
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
        ["openapi", "v3"] => json_response(
            200,
            &discovery::openapi_index(&discovery::openapi_documents(&defs)),
            &[],
        ),
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

fn write_ctx(shared: &Shared, target: &Target, query: &Query, headers: &HeaderMap) -> WriteCtx {
    let _ = shared;
    WriteCtx {
        manager: field_manager(query, headers),
        api_version: target.def.api_version(&target.version),
        dry_run: query.dry_run(),
        time: ops::now(),
    }
}

fn field_selector_fields(def: &ResourceDef) -> &'static [&'static str] {
    match def.flavor {
        Flavor::Secret => &["type"],
        Flavor::Namespace => &["status.phase"],
        _ => &[],
    }
}

fn selectors(def: &ResourceDef, query: &Query) -> ApiResult<(LabelSelector, FieldSelector)> {
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or(""))
        .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(
        query.get("fieldSelector").unwrap_or(""),
        field_selector_fields(def),
    )
    .map_err(ApiError::bad_request)?;
    Ok((labels, fields))
}

async fn execute(
    shared: &Arc<Shared>,
    user: &User,
    target: &Target,
    headers: &HeaderMap,
    query: &Query,
    body: Bytes,
    warnings: &mut Vec<String>,
) -> ApiResult<Reply> {
    let def = &target.def;
    let version = target.version.as_str();
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let key = || {
        (
            target.namespace.clone().unwrap_or_default(),
            target.name.clone().unwrap_or_default(),
        )
    };
    match target.verb {
        "get" => {
            let object = shared.state.lock().get(&def.key(), &key()).ok_or_else(|| {
                ApiError::not_found(&def.names(), target.name.as_deref().unwrap_or(""))
            })?;
            if target.subresource.as_deref() == Some("scale") {
                return Ok(Reply::Json(
                    200,
                    ops::scale_of(def, version, &object).ok_or_else(ApiError::page_not_found)?,
                ));
            }
            Ok(Reply::Json(200, ops::at_version(&object, def, version)))
        }
        "list" => list(shared, target, query),
        "watch" => start_watch(shared, target, query),
        "create" => {
            let mut object = parse_body(&body, content_type)?;
            validate_fields(def, &mut object, query, warnings)?;
            if def.flavor == Flavor::Review {
                let ctx = write_ctx(shared, target, query, headers);
                return Ok(Reply::Json(201, review(shared, user, def, object, &ctx)));
            }
            let ctx = write_ctx(shared, target, query, headers);
            let created = ops::create(
                &mut shared.state.lock(),
                def,
                version,
                target.namespace.as_deref(),
                object,
                &ctx,
                false,
            )?;
            let mut answer = ops::at_version(&created, def, version);
            if ctx.dry_run
                && let Some(meta) = answer["metadata"].as_object_mut()
            {
                meta.remove("resourceVersion");
            }
            Ok(Reply::Json(201, answer))
        }
        "update" => {
            let mut new = parse_body(&body, content_type)?;
            validate_fields(def, &mut new, query, warnings)?;
            let ctx = write_ctx(shared, target, query, headers);
            let mut state = shared.state.lock();
            let old = state.get(&def.key(), &key()).ok_or_else(|| {
                ApiError::not_found(&def.names(), target.name.as_deref().unwrap_or(""))
            })?;
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
            if target.subresource.as_deref() == Some("scale") {
                return Ok(Reply::Json(
                    200,
                    ops::scale_of(def, version, &updated).unwrap_or_default(),
                ));
            }
            Ok(Reply::Json(200, ops::at_version(&updated, def, version)))
        }
        "patch" => patch(
            shared,
            target,
            headers,
            query,
            content_type,
            &body,
            warnings,
        ),
        "delete" => {
            let options = delete_options(&body, content_type)?;
            let dry_run = query.dry_run() || options.1;
            let mut state = shared.state.lock();
            match ops::delete(&mut state, def, &key(), &options.0, dry_run, &ops::now())? {
                Deleted::Removed(object) => Ok(Reply::Json(
                    200,
                    success_status(
                        &def.names(),
                        target.name.as_deref().unwrap_or(""),
                        object["metadata"]["uid"].as_str().unwrap_or(""),
                    ),
                )),
                Deleted::Pending(object) => {
                    Ok(Reply::Json(200, ops::at_version(&object, def, version)))
                }
            }
        }
        "deletecollection" => {
            let (labels, fields) = selectors(def, query)?;
            let options = delete_options(&body, content_type)?;
            let dry_run = query.dry_run() || options.1;
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
            Ok(Reply::Json(
                200,
                json!({"apiVersion": def.api_version(version), "items": items, "kind": def.list_kind,
                "metadata": {"continue": "", "resourceVersion": state.rv.to_string()}}),
            ))
        }
        _ => Err(ApiError::method_not_allowed(target.verb)),
    }
}

fn delete_options(body: &Bytes, content_type: &str) -> ApiResult<(DeleteOptions, bool)> {
    if body.is_empty() {
        return Ok((DeleteOptions::default(), false));
    }
    let value: Value = if content_type.starts_with(super::protobuf::CONTENT_TYPE) {
        parse_body(body, content_type)?
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?
    };
    let dry_run = value["dryRun"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == "All"));
    Ok((
        DeleteOptions {
            propagation: value["propagationPolicy"].as_str().map(str::to_string),
            precondition_uid: value["preconditions"]["uid"].as_str().map(str::to_string),
            precondition_rv: value["preconditions"]["resourceVersion"]
                .as_str()
                .map(str::to_string),
        },
        dry_run,
    ))
}

/// The answer to a review: the request as sent, with the status the server decides and the
/// managedFields entry a real server records for the fields sent (its `spec` is a struct, not a
/// pointer, so it carries no `.` of its own). Nothing is stored.
fn review(
    shared: &Shared,
    user: &User,
    def: &ResourceDef,
    mut review: Value,
    ctx: &WriteCtx,
) -> Value {
    let spec = &review["spec"];
    let status = match def.kind.as_str() {
        "SelfSubjectAccessReview" => access_status(shared, user.subjects(), user.is_admin, spec),
        "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            let mut subjects: Vec<String> = spec["user"]
                .as_str()
                .map(str::to_string)
                .into_iter()
                .collect();
            subjects.extend(fields_strings(&spec["groups"]).map(|g| format!("group:{g}")));
            access_status(shared, subjects, false, spec)
        }
        "SelfSubjectRulesReview" => rules_status(shared, user),
        "SelfSubjectReview" => json!({"userInfo": {"username": user.name, "groups": user.groups}}),
        _ => json!({}),
    };
    let sent = json!({"spec": review["spec"]});
    let mut fields = super::fields::to_fields_v1(&super::fields::fields_of(
        &sent,
        super::fields::Scope::Whole,
    ));
    if let Some(spec) = fields["f:spec"].as_object_mut() {
        spec.remove(".");
    }
    review["apiVersion"] = json!(def.api_version("v1"));
    review["kind"] = json!(def.kind);
    review["metadata"] = json!({"managedFields": [{
        "manager": ctx.manager, "operation": "Update", "apiVersion": ctx.api_version,
        "time": ctx.time, "fieldsType": "FieldsV1", "fieldsV1": fields}]});
    if review["spec"].as_object().is_none_or(|s| s.is_empty()) {
        // Nothing sent, nothing managed.
        review["metadata"] = json!({});
    }
    review["status"] = status;
    review
}

fn fields_strings(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `allowed` for an access review's resource attributes.
fn access_status(shared: &Shared, subjects: Vec<String>, is_admin: bool, spec: &Value) -> Value {
    let attrs = &spec["resourceAttributes"];
    let resource = match attrs["subresource"].as_str().filter(|s| !s.is_empty()) {
        Some(sub) => format!("{}/{sub}", attrs["resource"].as_str().unwrap_or("")),
        None => attrs["resource"].as_str().unwrap_or("").to_string(),
    };
    let allowed = shared.policy.lock().allows(
        &subjects,
        is_admin,
        attrs["verb"].as_str().unwrap_or(""),
        attrs["group"].as_str().unwrap_or(""),
        &resource,
    );
    json!({"allowed": allowed})
}

/// The rules a user has, as `kubectl auth can-i --list` reads them.
fn rules_status(shared: &Shared, user: &User) -> Value {
    let (rules, incomplete) = shared
        .policy
        .lock()
        .rules_for(&user.subjects(), user.is_admin);
    let resource_rules: Vec<Value> = rules
        .iter()
        .map(|(verb, group, resource)| json!({"verbs": [verb], "apiGroups": [group], "resources": [resource]}))
        .collect();
    let non_resource_rules: Vec<Value> = if user.is_admin {
        vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})]
    } else {
        vec![
            json!({"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"]}),
        ]
    };
    json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": incomplete})
}

/// Continue tokens carry the list's resourceVersion and the last key served, as the real server's do.
fn continue_token(rv: u64, namespace: &str, name: &str) -> String {
    use base64::Engine;
    let start = if namespace.is_empty() {
        format!("/{name}\u{0}")
    } else {
        format!("/{namespace}/{name}\u{0}")
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).to_string())
}

fn parse_continue(token: &str) -> ApiResult<(u64, String, String)> {
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

fn list(shared: &Shared, target: &Target, query: &Query) -> ApiResult<Reply> {
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
    // Serialise by hand so that 10,000 stored objects are not deep-copied to rewrite apiVersion.
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
    serde_json::to_writer(&mut out, &metadata).expect("JSON");
    out.push(b'}');
    Ok(Reply::Raw(
        Response::builder()
            .status(200)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body::full(out))
            .expect("valid response"),
    ))
}

fn start_watch(shared: &Arc<Shared>, target: &Target, query: &Query) -> ApiResult<Reply> {
    let def = target.def.clone();
    let (labels, fields) = selectors(&def, query)?;
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    let spec = WatchSpec {
        def: def.clone(),
        version: target.version.clone(),
        namespace: target.namespace.clone(),
        labels,
        fields,
        bookmarks: query.flag("allowWatchBookmarks"),
        timeout,
        bookmark_interval: shared.options.bookmark_interval,
    };
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

fn stream_response<S>(stream: S) -> Response<Body>
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

fn patch(
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
        if query.get("fieldManager").is_none_or(str::is_empty) {
            return Err(ApiError::invalid(
                "PatchOptions.meta.k8s.io",
                "PatchOptions",
                "meta.k8s.io",
                "",
                vec![super::status::Cause::required(
                    "fieldManager",
                    "is required for apply patch",
                )],
            ));
        }
        let mut applied = parse_body(body, "application/yaml")?;
        validate_fields(def, &mut applied, query, warnings)?;
        let at = ops::At {
            def,
            version,
            subresource: sub,
        };
        let (object, created) =
            ops::server_side_apply(&mut state, at, &key, applied, query.flag("force"), &ctx)?;
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
    match kind {
        PatchKind::Json => patch::json(&mut working, body)?,
        PatchKind::Merge => {
            let value: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            patch::merge(&mut working, &value);
        }
        PatchKind::Strategic => {
            let value: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            patch::strategic(&mut working, &value)?;
        }
        PatchKind::Apply => unreachable!("handled above"),
    }
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
    if is_scale {
        return Ok(Reply::Json(
            200,
            ops::scale_of(def, version, &updated).unwrap_or_default(),
        ));
    }
    Ok(Reply::Json(200, ops::at_version(&updated, def, version)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApiServer;

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
        let (options, dry_run) = delete_options(&body, "application/json").unwrap();
        assert_eq!(options.propagation.as_deref(), Some("Foreground"));
        assert_eq!(options.precondition_uid.as_deref(), Some("u1"));
        assert!(dry_run);
        let (none, dry_run) = delete_options(&Bytes::new(), "application/json").unwrap();
        assert!(none.propagation.is_none() && !dry_run);
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
