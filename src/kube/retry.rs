//! The plugin's one retry layer. Every client is wrapped in it — over HTTP and in-process alike —
//! and kube's own retry is switched off, so a request is retried by exactly one policy that
//! classifies the answer: 429 waits for `Retry-After` (else backs off), 500/502/503/504 and lost
//! connections back off, a 409 whose reason is `Conflict` backs off (an `AlreadyExists` is an
//! answer, not a failure) unless the request carried a precondition (a UID or resourceVersion):
//! sending the same precondition again cannot succeed, so the caller gets the answer and re-reads.
//! Everything else — validation errors included — returns at once.
//!
//! Each attempt waits at most the request timeout for the answer's headers (`--request-timeout`,
//! else [`DEFAULT_REQUEST_TIMEOUT`]), and all attempts of a request together stay within twice
//! that: a server that accepts connections but never answers fails in about twice the timeout,
//! not after every attempt has waited in full.
//!
//! Writes are safe to repeat here because move's writes are idempotent at the operation level:
//! a repeated create answers AlreadyExists, a repeated DELETE NotFound, a merge patch converges.

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use kube::client::Body;

use crate::error::{ForeignAnswer, NoAnswer};

/// How long one attempt waits for an answer when `--request-timeout` is not given. kubectl waits
/// forever but never retries; this layer retries, so each attempt needs a bound.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How hard to try.
#[derive(Debug, Clone)]
pub struct RetrySettings {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// How long one attempt waits for the answer's headers; all attempts of a request together
    /// stop once twice this has passed.
    pub request_timeout: Duration,
    /// First backoff; doubled per attempt, with jitter, up to `max_backoff`.
    pub backoff: Duration,
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured; a longer one fails the request instead.
    pub max_retry_after: Duration,
    /// kubectl's `-v 6`: where a line per request and answer goes, never a body.
    pub log: Option<crate::output::Log>,
    /// The server's URL, to print requests in full (the client adds it below this layer).
    pub base_url: std::sync::Arc<str>,
    /// What every attempt of a write passes just before it is sent: the lease still held.
    pub gate: super::gate::WriteGate,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            attempts: 6,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(60),
            log: None,
            base_url: "".into(),
            gate: super::gate::WriteGate::unguarded(),
        }
    }
}

impl RetrySettings {
    /// The backoff before attempt `attempt + 1`: exponential, capped, with ±25% jitter so that
    /// parallel writers do not retry in lockstep.
    fn backoff(&self, attempt: u32) -> Duration {
        let base = self
            .backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(self.max_backoff);
        base.mul_f64(0.75 + fastrand::f64() * 0.5)
    }
}

/// How many times a write with a precondition is tried when it keeps meeting conflicts.
pub const CONFLICT_ATTEMPTS: u32 = 6;

/// Whether a write was refused because what it was based on changed (409 Conflict): its
/// precondition cannot pass again unchanged, so the writer re-reads and decides again.
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409 && status.reason == "Conflict")
}

/// The one policy for a write that carries a precondition: `write` (told its attempt, 0 first;
/// from 1 on it re-reads what it is based on) is tried again while it meets a conflict, backing
/// off as the retry layer does, at most [`CONFLICT_ATTEMPTS`] times. The last answer is returned.
pub async fn retry_conflicts<T>(
    mut write: impl AsyncFnMut(u32) -> Result<T, kube::Error>,
) -> Result<T, kube::Error> {
    let settings = RetrySettings::default();
    let mut attempt = 0;
    loop {
        match write(attempt).await {
            Err(e) if is_conflict(&e) && attempt + 1 < CONFLICT_ATTEMPTS => {
                attempt += 1;
                tokio::time::sleep(settings.backoff(attempt)).await;
            }
            answer => return answer,
        }
    }
}

/// What to do with an answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Return it to the caller.
    Done,
    /// Try again after this long.
    RetryAfter(Duration),
    /// Try again after the backoff.
    Backoff,
    /// A 409: retry only if the Status reason is `Conflict` (needs the body).
    Inspect409,
}

/// Classifies a status code and its `Retry-After` header. Pure, so it is tested without a server.
pub fn classify(
    status: StatusCode,
    retry_after: Option<&str>,
    settings: &RetrySettings,
) -> Verdict {
    match status.as_u16() {
        429 => match retry_after.and_then(|v| v.trim().parse::<u64>().ok()) {
            Some(seconds) if Duration::from_secs(seconds) <= settings.max_retry_after => {
                Verdict::RetryAfter(Duration::from_secs(seconds))
            }
            Some(_) => Verdict::Done,
            None => Verdict::Backoff,
        },
        500 | 502 | 503 | 504 => Verdict::Backoff,
        409 => Verdict::Inspect409,
        _ => Verdict::Done,
    }
}

/// Whether a request body makes the write conditional: DeleteOptions with `preconditions`, or an
/// object (PUT, merge patch) that names its `metadata.uid` or `metadata.resourceVersion`.
pub fn carries_precondition(body: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    let set = |v: &serde_json::Value| v.as_str().is_some_and(|s| !s.is_empty());
    let preconditions = &value["preconditions"];
    let metadata = &value["metadata"];
    set(&preconditions["uid"])
        || set(&preconditions["resourceVersion"])
        || set(&metadata["uid"])
        || set(&metadata["resourceVersion"])
}

/// Errors below the HTTP answer (connection refused, reset, dropped, timed out) are transient.
pub fn transient(error: &kube::Error) -> bool {
    match error {
        // Kept back by the write gate: sending it again cannot make the lease held.
        kube::Error::Service(e) if e.is::<crate::error::NotHeld>() => false,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// `uri` with `timeout` (in whole milliseconds, never more than `timeout`) as its `timeout`
/// query parameter, which bounds how long the server may take over the request.
fn with_timeout(uri: &http::Uri, timeout: Duration) -> http::Uri {
    let query: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("timeout="))
        .collect();
    let millis = timeout.as_millis().max(1);
    let mut parts = query.join("&");
    if !parts.is_empty() {
        parts.push('&');
    }
    parts.push_str(&format!("timeout={millis}ms"));
    let path_and_query = format!("{}?{parts}", uri.path());
    let mut builder = http::Uri::builder();
    if let Some(scheme) = uri.scheme() {
        builder = builder.scheme(scheme.clone());
    }
    if let Some(authority) = uri.authority() {
        builder = builder.authority(authority.clone());
    }
    builder
        .path_and_query(path_and_query)
        .build()
        .unwrap_or_else(|_| uri.clone())
}

fn clone_request(request: &Request<Body>) -> Option<Request<Body>> {
    let body = request.body().try_clone()?;
    let mut copy = Request::builder()
        .method(request.method().clone())
        .uri(request.uri().clone())
        .version(request.version())
        .body(body)
        .ok()?;
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    Some(copy)
}

/// Sends a request through `client`, retrying as the module says.
pub async fn send(
    client: &kube::Client,
    mut request: Request<Body>,
    settings: &RetrySettings,
) -> Result<Response<Body>, kube::Error> {
    let mut attempt = 1;
    let deadline = tokio::time::Instant::now() + settings.request_timeout.saturating_mul(2);
    let within = |delay: Duration| tokio::time::Instant::now() + delay < deadline;
    loop {
        let spare = if attempt < settings.attempts && within(Duration::ZERO) {
            clone_request(&request)
        } else {
            None
        };
        let line = RequestLine::start(settings, &request);
        let answer = attempt_once(client, settings, request, attempt).await;
        line.end(&settings.base_url, &answer);
        let Some(spare) = spare else {
            return answer;
        };
        let backoff = settings.backoff(attempt);
        let delay = match answer {
            Err(e) if transient(&e) && within(backoff) => backoff,
            Err(e) => return Err(e),
            Ok(response) => {
                let retry_after = response
                    .headers()
                    .get(http::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok());
                match classify(response.status(), retry_after, settings) {
                    Verdict::Done => return Ok(response),
                    Verdict::RetryAfter(delay) if within(delay) => delay,
                    Verdict::Backoff if within(backoff) => backoff,
                    // Out of time: the last answer is the answer.
                    Verdict::RetryAfter(_) | Verdict::Backoff => return Ok(response),
                    Verdict::Inspect409 => {
                        match after_conflict(response, spare, || within(backoff)).await? {
                            ControlFlow::Break(response) => return Ok(response),
                            ControlFlow::Continue(again) => {
                                tokio::time::sleep(backoff).await;
                                request = again;
                                attempt += 1;
                                continue;
                            }
                        }
                    }
                }
            }
        };
        tokio::time::sleep(delay).await;
        request = spare;
        attempt += 1;
    }
}

/// One attempt, let out by the write gate: a guarded write waits no longer than its lease lasts,
/// says so to the server, and names the holder it was sent under.
async fn attempt_once(
    client: &kube::Client,
    settings: &RetrySettings,
    mut request: Request<Body>,
    attempts: u32,
) -> Result<Response<Body>, kube::Error> {
    let admitted = match settings.gate.admit(request.method(), request.uri()) {
        Ok(admitted) => admitted,
        Err(why) => return Err(kube::Error::Service(Box::new(crate::error::NotHeld(why)))),
    };
    let timeout = admitted.as_ref().map_or(settings.request_timeout, |a| {
        a.left.min(settings.request_timeout)
    });
    if let Some(admitted) = &admitted {
        *request.uri_mut() = with_timeout(request.uri(), timeout);
        if let Ok(holder) = http::HeaderValue::from_str(&admitted.holder) {
            request
                .headers_mut()
                .insert(crate::names::LEASE_HOLDER_HEADER, holder);
        }
    }
    match tokio::time::timeout(timeout, client.send(request)).await {
        Ok(answer) => answer,
        Err(_) => Err(kube::Error::Service(Box::new(NoAnswer {
            timeout,
            attempts,
        }))),
    }
}

/// A 409 is sent again (`Continue`, after the backoff) only when its reason is `Conflict`, the
/// request carried no precondition and `time_left`; otherwise it is the answer (`Break`).
async fn after_conflict(
    response: Response<Body>,
    spare: Request<Body>,
    time_left: impl Fn() -> bool,
) -> Result<ControlFlow<Response<Body>, Request<Body>>, kube::Error> {
    let (parts, body) = response.into_parts();
    let bytes = body
        .collect()
        .await
        .map_err(|e| kube::Error::Service(e.into()))?
        .to_bytes();
    let reason = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v["reason"].as_str().map(str::to_string));
    if reason.as_deref() == Some("Conflict") {
        let (spare_parts, spare_body) = spare.into_parts();
        let sent = spare_body.collect_bytes().await?;
        if !carries_precondition(&sent) && time_left() {
            return Ok(ControlFlow::Continue(Request::from_parts(
                spare_parts,
                Body::from(sent),
            )));
        }
    }
    Ok(ControlFlow::Break(Response::from_parts(
        parts,
        Body::from(bytes),
    )))
}

/// kubectl's `-v 6` line of one attempt (method, URL, status, time), when it is asked for.
struct RequestLine(
    Option<(
        crate::output::Log,
        http::Method,
        http::Uri,
        std::time::Instant,
    )>,
);

impl RequestLine {
    fn start(settings: &RetrySettings, request: &Request<Body>) -> RequestLine {
        RequestLine(settings.log.as_ref().map(|log| {
            (
                log.clone(),
                request.method().clone(),
                request.uri().clone(),
                std::time::Instant::now(),
            )
        }))
    }

    fn end(&self, base_url: &str, answer: &Result<Response<Body>, kube::Error>) {
        let Some((sink, method, uri, started)) = &self.0 else {
            return;
        };
        let status = match answer {
            Ok(r) => r.status().to_string(),
            Err(e) => format!("failed ({e})"),
        };
        sink.line(&format!(
            "{method} {base_url}{uri} {status} in {} milliseconds",
            started.elapsed().as_millis()
        ));
    }
}

/// A client service that sends through [`send`]; wrap any client with [`retrying`].
#[derive(Clone)]
pub struct Retrying {
    inner: kube::Client,
    settings: RetrySettings,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, kube::Error>> + Send>>;

impl tower::Service<Request<Body>> for Retrying {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = Answer;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The inner client buffers; readiness is awaited per request inside `send`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let client = self.inner.clone();
        let settings = self.settings.clone();
        Box::pin(async move { send(&client, request, &settings).await.and_then(foreign) })
    }
}

/// An answer that is not Kubernetes's is named, never handed on as it came: a successful one
/// (an HTML page where JSON was due) becomes a [`ForeignAnswer`] error, and a failure whose body
/// is not a Status gets its status line and type in place of that body — so that no message
/// prints a web page, and a `404 page not found` is still a 404 to its caller.
pub fn foreign(response: Response<Body>) -> Result<Response<Body>, kube::Error> {
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|t| t.split(';').next().unwrap_or_default().trim().to_string());
    let is_text = |t: &Option<String>| t.as_deref().is_none_or(|t| t.starts_with("text/"));
    let status = response.status();
    let status_line = format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or_default()
    );
    if status.is_success()
        && content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("text/"))
    {
        return Err(kube::Error::Service(Box::new(ForeignAnswer {
            status: status_line,
            content_type: content_type.unwrap_or_default(),
        })));
    }
    if (status.is_client_error() || status.is_server_error()) && is_text(&content_type) {
        let empty = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() == b"0");
        let summary = match (&content_type, empty) {
            (_, true) => format!("{status_line} with an empty body"),
            (Some(t), false) => format!("{status_line} {t}"),
            (None, false) => format!("{status_line} without a content type"),
        };
        let (parts, _) = response.into_parts();
        return Ok(Response::from_parts(
            parts,
            Body::from(summary.into_bytes()),
        ));
    }
    Ok(response)
}

/// `client` with the plugin's retry layer in front.
pub fn retrying(client: kube::Client, settings: RetrySettings) -> kube::Client {
    let namespace = client.default_namespace().to_string();
    kube::Client::new(
        Retrying {
            inner: client,
            settings,
        },
        namespace,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guarded_write_tells_the_server_how_long_it_may_take() {
        let uri: http::Uri = "/api/v1/namespaces/a/secrets?fieldManager=x&timeout=30s"
            .parse()
            .unwrap();
        let bounded = with_timeout(&uri, Duration::from_millis(1500));
        assert_eq!(
            bounded.to_string(),
            "/api/v1/namespaces/a/secrets?fieldManager=x&timeout=1500ms"
        );
        let bare: http::Uri = "https://h:6443/api/v1/x".parse().unwrap();
        assert_eq!(
            with_timeout(&bare, Duration::from_secs(2)).to_string(),
            "https://h:6443/api/v1/x?timeout=2000ms"
        );
    }

    #[test]
    fn answers_are_classified() {
        let s = RetrySettings::default();
        let c = |code: u16, after: Option<&str>| {
            classify(StatusCode::from_u16(code).unwrap(), after, &s)
        };
        assert_eq!(
            c(429, Some("2")),
            Verdict::RetryAfter(Duration::from_secs(2))
        );
        assert_eq!(c(429, None), Verdict::Backoff);
        assert_eq!(c(429, Some("soon")), Verdict::Backoff);
        assert_eq!(
            c(429, Some("3600")),
            Verdict::Done,
            "beyond the longest wait: give up"
        );
        for code in [500, 502, 503, 504] {
            assert_eq!(c(code, None), Verdict::Backoff, "{code}");
        }
        assert_eq!(c(409, None), Verdict::Inspect409);
        for code in [200, 201, 400, 401, 403, 404, 410, 422] {
            assert_eq!(c(code, None), Verdict::Done, "{code}");
        }
    }

    #[test]
    fn a_precondition_is_seen_in_delete_options_and_in_objects() {
        for body in [
            r#"{"kind":"DeleteOptions","preconditions":{"uid":"u1"}}"#,
            r#"{"preconditions":{"resourceVersion":"7"}}"#,
            r#"{"metadata":{"uid":"u1","annotations":{"a":""}}}"#,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"9"}}"#,
        ] {
            assert!(carries_precondition(body.as_bytes()), "{body}");
        }
        for body in [
            "",
            "not json",
            r#"{"metadata":{"annotations":{"uid":"x"}}}"#,
            r#"{"kind":"DeleteOptions","propagationPolicy":"Background"}"#,
            r#"{"metadata":{"uid":null,"resourceVersion":""}}"#,
        ] {
            assert!(!carries_precondition(body.as_bytes()), "{body}");
        }
    }

    #[test]
    fn backoff_doubles_within_jitter_and_is_capped() {
        let s = RetrySettings::default();
        for attempt in 1..=4u32 {
            let expected = s.backoff.as_secs_f64() * f64::from(1u32 << (attempt - 1));
            let got = s.backoff(attempt).as_secs_f64();
            assert!(
                got >= expected * 0.75 && got <= expected * 1.25,
                "{attempt}: {got}"
            );
        }
        assert!(s.backoff(30) <= s.max_backoff.mul_f64(1.25));
    }

    #[tokio::test]
    async fn answers_that_are_not_kubernetes_are_named_by_status_and_type() {
        let answer = |status: u16, content_type: Option<&str>, body: &'static str| {
            let mut builder = Response::builder().status(status);
            if let Some(t) = content_type {
                builder = builder.header(http::header::CONTENT_TYPE, t);
            }
            builder.body(Body::from(body.as_bytes().to_vec())).unwrap()
        };
        let page = foreign(answer(200, Some("text/html; charset=utf-8"), "<html>")).unwrap_err();
        assert!(
            page.to_string().contains("answered 200 OK text/html"),
            "{page}"
        );
        let json = foreign(answer(200, Some("application/json"), "{}")).unwrap();
        assert_eq!(json.status(), 200);
        for (status, content_type, summary) in [
            (502, Some("text/html"), "502 Bad Gateway text/html"),
            (404, Some("text/plain"), "404 Not Found text/plain"),
            (
                500,
                None,
                "500 Internal Server Error without a content type",
            ),
        ] {
            let rewritten = foreign(answer(status, content_type, "<html>raw</html>")).unwrap();
            assert_eq!(
                rewritten.status(),
                status,
                "still the same status to its caller"
            );
            let body = rewritten.into_body().collect_bytes().await.unwrap();
            assert_eq!(body, summary.as_bytes());
        }
        // A Status stays as it came.
        let status = foreign(answer(
            404,
            Some("application/json"),
            "{\"kind\":\"Status\"}",
        ))
        .unwrap();
        let body = status.into_body().collect_bytes().await.unwrap();
        assert_eq!(body, b"{\"kind\":\"Status\"}".as_slice());
    }

    fn conflict() -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code: 409,
            reason: "Conflict".into(),
            ..kube::core::Status::default()
        }))
    }

    #[tokio::test]
    async fn a_write_meeting_conflicts_is_tried_again_a_bounded_number_of_times() {
        let mut attempts = Vec::new();
        let written = retry_conflicts(async |attempt| {
            attempts.push(attempt);
            if attempt < 2 {
                Err(conflict())
            } else {
                Ok("written")
            }
        })
        .await;
        assert_eq!(written.unwrap(), "written");
        assert_eq!(
            attempts,
            [0, 1, 2],
            "each attempt told its number, to re-read from 1 on"
        );

        let mut tried = 0;
        let answer: Result<(), _> = retry_conflicts(async |_| {
            tried += 1;
            Err(conflict())
        })
        .await;
        assert!(
            answer.is_err_and(|e| is_conflict(&e)),
            "the last answer is returned"
        );
        assert_eq!(tried, CONFLICT_ATTEMPTS);

        let mut tried = 0;
        let other: Result<(), _> = retry_conflicts(async |_| {
            tried += 1;
            Err(kube::Error::Api(Box::new(kube::core::Status {
                code: 422,
                ..kube::core::Status::default()
            })))
        })
        .await;
        assert!(other.is_err());
        assert_eq!(tried, 1, "anything but a conflict is answered at once");
    }
}
