//! Access reviews: what a user may do, as SelfSubjectAccessReview and SelfSubjectRulesReview answer.

use super::parts::*;
use crate::apiserver::ops::WriteCtx;
use crate::apiserver::resources::ResourceDef;
use crate::apiserver::shared::Shared;
use serde_json::{Value, json};

/// The answer to a review: the request as sent, with the status the server decides and the
/// managedFields entry a real server records for the fields sent (its `spec` is a struct, not a
/// pointer, so it carries no `.` of its own). Nothing is stored.
pub(super) fn review(
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
    // The review's spec is a struct that is always there; what it holds was added.
    let fields = crate::apiserver::fields::to_fields_v1(
        &crate::apiserver::fields::changed_fields(
            &json!({"spec": {}}),
            &sent,
            crate::apiserver::fields::Scope::Whole,
        )
        .set,
    );
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

pub(super) fn fields_strings(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `allowed` for an access review's resource attributes.
pub(super) fn access_status(
    shared: &Shared,
    subjects: Vec<String>,
    is_admin: bool,
    spec: &Value,
) -> Value {
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
pub(super) fn rules_status(shared: &Shared, user: &User) -> Value {
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
