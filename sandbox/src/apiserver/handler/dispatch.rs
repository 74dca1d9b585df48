//! One request from arrival to answer: authenticate, route, authorize, inject faults, execute,
//! log; the verbs, reads, writes and reviews it dispatches to are its siblings.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, header};
use serde_json::Value;

use crate::apiserver::body::Body;
use crate::apiserver::control::{FaultAction, RequestRecord};
use crate::apiserver::resources::Flavor;
use crate::apiserver::shared::Shared;
use crate::apiserver::status::{ApiError, ApiResult};

use super::parts::*;
use super::reads::*;

use super::writes::*;

use super::identity::*;

use super::non_resource::*;

use super::verbs::*;

/// The largest request body the apiserver reads.
pub const MAX_REQUEST_BYTES: usize = 3 * 1024 * 1024;

enum Outcome {
    Respond(Response<Body>),
    /// Close the connection without an answer.
    Drop,
    /// Answer, but only after this delay (the request is logged before it).
    Late(Response<Body>, Duration),
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

/// The request came over a connection whose client presented the admin's certificate.
#[derive(Clone, Copy)]
pub struct ClientCertificate;

/// When a request's headers arrived, before its body was read.
#[derive(Clone, Copy)]
pub struct Arrived(pub std::time::Instant);

/// Serves one request and logs it; `None` when an injected fault drops the connection.
pub async fn handle(shared: Arc<Shared>, request: Request<Bytes>) -> Option<Response<Body>> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query = Query::parse(parts.uri.query());
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let delete_options = (parts.method == Method::DELETE && !body.is_empty())
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten();
    let mut record = RequestRecord {
        verb: parts.method.as_str().to_lowercase(),
        group: String::new(),
        resource: String::new(),
        namespace: None,
        name: None,
        subresource: None,
        code: 0,
        // A DELETE with options is a dry run by its body only, as a real server reads it.
        dry_run: match &delete_options {
            Some(options) => options["dryRun"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == "All")),
            None => query.dry_run(),
        },
        dry_run_query: query.dry_run(),
        user: String::new(),
        path: path.clone(),
        version: String::new(),
        agent: parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        precondition_uid: delete_options
            .as_ref()
            .and_then(|options| options["preconditions"]["uid"].as_str().map(str::to_string)),
        metadata_only: super::reads::metadata_only(&parts.headers),
        started: shared.tick(),
        finished: 0,
        arrived: parts
            .extensions
            .get::<Arrived>()
            .map_or_else(std::time::Instant::now, |a| a.0),
        answered: std::time::Instant::now(),
    };

    let by_certificate = parts.extensions.get::<ClientCertificate>().is_some();
    let outcome = serve(
        &shared,
        &parts.method,
        (&parts.headers, by_certificate),
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

/// Whether the policy lets `user` do what `target` asks; everyone may ask about themselves
/// (Kubernetes' system:basic-user role).
fn authorized(shared: &Shared, user: &User, target: &Target) -> bool {
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
    let self_review =
        target.def.flavor == Flavor::Review && target.def.kind.starts_with("SelfSubject");
    allowed || self_review
}

/// A `Warning` header as kube-apiserver sends one (code 299, the text quoted).
fn warning_header(text: &str) -> (header::HeaderName, String) {
    (
        header::HeaderName::from_static("warning"),
        format!("299 - \"{}\"", text.replace('"', "\\\"")),
    )
}

/// The write latency tests set, standing in for etcd's commit.
async fn wait_write_latency(shared: &Shared) {
    let latency = shared.write_latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
}

async fn serve(
    shared: &Arc<Shared>,
    method: &Method,
    (headers, by_certificate): (&HeaderMap, bool),
    segments: &[&str],
    query: &Query,
    body: Bytes,
    record: &mut RequestRecord,
) -> Outcome {
    let user = match authenticate(shared, headers, by_certificate) {
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
    record.target(&target);

    if !authorized(shared, &user, &target) {
        return Outcome::Respond(error_response(&forbidden(&user, &target)));
    }

    let (drop_after, stall_after) = match injected_faults(shared, &target, query, record).await {
        Ok(after) => after,
        Err(outcome) => return outcome,
    };

    let is_write = matches!(
        target.verb,
        "create" | "update" | "patch" | "delete" | "deletecollection"
    );
    if is_write && !query.dry_run() && target.def.flavor != Flavor::Review {
        wait_write_latency(shared).await;
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
    warnings.extend(field_warnings.iter().map(|w| warning_header(w)));
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

/// The faults injected for this request, as tests set them: a latency is waited here; a failure
/// or a dropped connection ends the request (`Err`); otherwise whether to drop the connection
/// after the request is applied, and how long to hold its answer.
async fn injected_faults(
    shared: &Shared,
    target: &Target,
    query: &Query,
    record: &RequestRecord,
) -> Result<(bool, Option<Duration>), Outcome> {
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
                return Err(Outcome::Respond(error_response(&err)));
            }
            FaultAction::Drop => return Err(Outcome::Drop),
            FaultAction::ApplyThenDrop => drop_after = true,
            FaultAction::ApplyThenStall(delay) => stall_after = Some(delay),
        }
    }

    Ok((drop_after, stall_after))
}

impl RequestRecord {
    /// What the request addressed, for the log.
    fn target(&mut self, target: &Target) {
        self.verb = target.verb.to_string();
        self.group = target.def.group.clone();
        self.resource = target.def.plural.clone();
        self.version = target.version.clone();
        self.namespace = target.namespace.clone();
        self.name = target.name.clone();
        self.subresource = target.subresource.clone();
    }
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
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let call = Call {
        shared,
        user,
        target,
        headers,
        query,
        content_type,
        body: &body,
    };
    match target.verb {
        "get" => get(&call),
        "list" => list(shared, target, query, metadata_only(headers)),
        "watch" => start_watch(shared, target, query),
        "create" => create(&call, warnings),
        "update" => update(&call, warnings),
        "patch" => patch(
            shared,
            target,
            headers,
            query,
            content_type,
            &body,
            warnings,
        ),
        "delete" => delete(&call),
        "deletecollection" => delete_collection(&call),
        _ => Err(ApiError::method_not_allowed(target.verb)),
    }
}
