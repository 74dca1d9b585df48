//! `metav1.Status` answers with the real kube-apiserver's codes, reasons and wording.

use serde_json::{Value, json};

/// What a resource is called in error messages: `widgets.answers.example.com`
/// (plural.group, or just the plural for the core group) and `Widget.answers.example.com`.
#[derive(Clone, Debug)]
pub struct Names {
    pub group: String,
    pub plural: String,
    pub kind: String,
}

impl Names {
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }
}

/// One field error of an `Invalid` answer.
#[derive(Clone, Debug)]
pub struct Cause {
    pub reason: &'static str,
    pub message: String,
    pub field: String,
}

impl Cause {
    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {value}: {detail}"),
            field: field.to_string(),
        }
    }
    pub fn required(field: &str, detail: &str) -> Self {
        Cause {
            reason: "FieldValueRequired",
            message: format!("Required value: {detail}"),
            field: field.to_string(),
        }
    }
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Cause {
            reason: "FieldValueForbidden",
            message: format!("Forbidden: {detail}"),
            field: field.to_string(),
        }
    }
    pub fn too_long(field: &str, limit: usize) -> Self {
        Cause {
            reason: "FieldValueTooLong",
            message: format!("Too long: may not be more than {limit} bytes"),
            field: field.to_string(),
        }
    }
}

/// An error answer. `plain_text` answers are not Status objects (the mux's `404 page not found`).
#[derive(Clone, Debug)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    pub retry_after: Option<u64>,
    pub plain_text: bool,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
            plain_text: false,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn page_not_found() -> Self {
        ApiError {
            plain_text: true,
            ..Self::new(404, "NotFound", "404 page not found\n")
        }
    }

    pub fn not_found(names: &Names, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", names.qualified_resource()),
        )
        .with_details(resource_details(names, name))
    }

    pub fn namespace_not_found(namespace: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("namespaces \"{namespace}\" not found"),
        )
        .with_details(json!({"name": namespace, "kind": "namespaces"}))
    }

    pub fn already_exists(names: &Names, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", names.qualified_resource()),
        )
        .with_details(resource_details(names, name))
    }

    pub fn conflict(names: &Names, name: &str) -> Self {
        Self::conflict_with(
            names,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn conflict_with(names: &Names, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                names.qualified_resource()
            ),
        )
        .with_details(resource_details(names, name))
    }

    /// A DELETE's precondition that does not hold: the store names the object by its Kind.
    pub fn precondition_failed(names: &Names, name: &str, why: &str) -> Self {
        let mut details = json!({"name": name, "kind": names.kind});
        if !names.group.is_empty() {
            details["group"] = json!(names.group);
        }
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                names.qualified_kind()
            ),
        )
        .with_details(details)
    }

    /// 422 Invalid. `subject` is what the message names (`Widget.group` for validation
    /// errors, `widgets.group` for update preconditions — the real server uses both).
    pub fn invalid(
        subject: &str,
        details_kind: &str,
        group: &str,
        name: &str,
        causes: Vec<Cause>,
    ) -> Self {
        // As apimachinery's aggregate error: the same error twice is named once.
        let mut parts: Vec<String> = Vec::new();
        for cause in &causes {
            let part = format!("{}: {}", cause.field, cause.message);
            if !parts.contains(&part) {
                parts.push(part);
            }
        }
        let summary = if parts.len() == 1 {
            parts.remove(0)
        } else {
            format!("[{}]", parts.join(", "))
        };
        let mut details = json!({"name": name, "kind": details_kind});
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        details["causes"] = Value::Array(
            causes
                .iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect(),
        );
        Self::new(
            422,
            "Invalid",
            format!("{subject} \"{name}\" is invalid: {summary}"),
        )
        .with_details(details)
    }

    pub fn invalid_kind(names: &Names, name: &str, causes: Vec<Cause>) -> Self {
        Self::invalid(
            &names.qualified_kind(),
            &names.kind,
            &names.group,
            name,
            causes,
        )
    }

    /// The generic 422 the server answers when a JSON patch cannot be applied.
    pub fn unprocessable_patch() -> Self {
        Self::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        )
        .with_details(json!({}))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn forbidden(message: impl Into<String>, details: Value) -> Self {
        Self::new(403, "Forbidden", message).with_details(details)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn method_not_allowed(verb: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({verb})"),
        )
        .with_details(json!({}))
    }

    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    pub fn request_too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError {
            reason: "",
            ..Self::new(500, "InternalError", message)
        }
    }

    pub fn too_many_requests(retry_after: u64) -> Self {
        ApiError {
            retry_after: Some(retry_after),
            ..Self::new(429, "TooManyRequests", "the server has received too many requests and has asked us to try again later")
                .with_details(json!({"causes": [{"reason": "RetryAfter", "message": "the server has received too many requests and has asked us to try again later"}], "retryAfterSeconds": retry_after}))
        }
    }

    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// An arbitrary injected failure.
    pub fn injected(code: u16, message: impl Into<String>) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            409 => "Conflict",
            410 => "Expired",
            422 => "Invalid",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "",
        };
        Self::new(code, reason, message)
    }

    /// The Status body, exactly as the apiserver shapes it.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        });
        if !self.reason.is_empty() && self.code != 500 {
            status["reason"] = json!(self.reason);
        }
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status["code"] = json!(self.code);
        status
    }
}

fn resource_details(names: &Names, name: &str) -> Value {
    let mut details = json!({"name": name});
    if !names.group.is_empty() {
        details["group"] = json!(names.group);
    }
    details["kind"] = json!(names.plural);
    details
}

/// The Status of a successful DELETE of an object that had no finalizers.
pub fn success_status(names: &Names, name: &str, uid: &str) -> Value {
    let mut details = resource_details(names, name);
    details["uid"] = json!(uid);
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widgets() -> Names {
        Names {
            group: "answers.example.com".into(),
            plural: "widgets".into(),
            kind: "Widget".into(),
        }
    }

    #[test]
    fn not_found_matches_recorded_answer() {
        let status = ApiError::not_found(&widgets(), "nope").to_status();
        assert_eq!(
            status,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "widgets.answers.example.com \"nope\" not found", "reason": "NotFound",
                "details": {"name": "nope", "group": "answers.example.com", "kind": "widgets"}, "code": 404})
        );
    }

    #[test]
    fn invalid_names_field_and_kind() {
        let err = ApiError::invalid_kind(
            &widgets(),
            "Bad_Name",
            vec![Cause::invalid("metadata.name", "\"Bad_Name\"", "bad")],
        );
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "Widget.answers.example.com \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": bad"
        );
        assert_eq!(
            err.to_status()["details"]["causes"][0]["field"],
            "metadata.name"
        );
    }

    #[test]
    fn internal_error_has_no_reason() {
        let status = ApiError::internal("boom").to_status();
        assert!(status.get("reason").is_none());
        assert_eq!(status["code"], 500);
    }
}
