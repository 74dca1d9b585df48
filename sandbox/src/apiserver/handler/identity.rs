//! Who is asking, and the answer when they may not: authentication by token or client
//! certificate, and forbidden Status bodies.

use super::parts::*;
use crate::apiserver::shared::Shared;
use crate::apiserver::status::{ApiError, ApiResult};
use http::{HeaderMap, header};
use serde_json::json;

/// Who sends the request: a user of `user_tokens` by its token; else the admin — by the admin's
/// client certificate (`by_certificate`), or by `token` when one is required, or by anything
/// when the server requires neither.
pub(super) fn authenticate(
    shared: &Shared,
    headers: &HeaderMap,
    by_certificate: bool,
) -> ApiResult<User> {
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
    let options = &shared.options;
    let by_token = options
        .token
        .as_deref()
        .is_some_and(|expected| presented == Some(expected));
    let required = options.token.is_some() || (options.tls && options.client_certificates);
    if required && !by_token && !by_certificate {
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

pub(super) fn forbidden(user: &User, target: &Target) -> ApiError {
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
