//! Every exchange recorded from a real kube-apiserver v1.36 (with the Cluster API CRDs, no
//! controller-manager), replayed in the recorded order against the sandbox served over TLS with a
//! bearer token. `answers.json` holds the requests and what the recording shows of each answer:
//! status code, Status reason, kind, name (or generated-name prefix), finalizers, managedFields
//! managers, item counts, group counts and watch event types. Three objects the recording
//! created without recording the request are created where the later answers show them.

use std::time::Duration;

use capi_sandbox::crds::{self, Dialect};
use capi_sandbox::{ApiServer, ServerOptions};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{Answer, raw, raw_with};

const TOKEN: &str = "answers-token";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Exchange {
    title: String,
    method: String,
    path: String,
    content_type: Option<String>,
    /// An Accept header (aggregated discovery is asked for by it).
    accept: Option<String>,
    body: Option<String>,
    /// A body too large to record, made here.
    generated: Option<String>,
    impersonate: Option<String>,
    /// `bad-token` or `none` instead of the good token.
    auth: Option<String>,
    /// The second page: its continue token is the one the first page answered.
    #[serde(default)]
    continue_from_previous: bool,
    /// A watch of the writes to this object, from the resourceVersion before them.
    watch_from_before: Option<String>,
    expect: Expect,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Expect {
    code: u16,
    kind: Option<String>,
    reason: Option<String>,
    name: Option<String>,
    name_prefix: Option<String>,
    finalizers: Option<Vec<String>>,
    managers: Option<Vec<String>>,
    items: Option<usize>,
    groups: Option<usize>,
    events: Option<Vec<String>>,
    #[serde(default)]
    deleting: bool,
    /// Group versions the OpenAPI v3 index must list.
    openapi_paths: Option<Vec<String>>,
}

/// A client of `serving` whose requests carry `token` (none without one) and, if given, impersonate.
async fn client(
    serving: &capi_sandbox::Serving,
    token: Option<&str>,
    impersonate: Option<&str>,
) -> kube::Client {
    let mut entry = serving.kubeconfig_entry("answers");
    entry.token = token.map(str::to_string);
    let text = capi_sandbox::apiserver::kubeconfig(&[entry]);
    let kubeconfig: kube::config::Kubeconfig = serde_saphyr::from_str(&text).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    config.auth_info.impersonate = impersonate.map(str::to_string);
    kube::Client::try_from(config).unwrap()
}

fn generated_body(which: &str) -> String {
    let widget = |name: &str, size: usize| {
        json!({"apiVersion": "answers.example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "answers-21043"},
            "spec": {"blob": "y".repeat(size)}})
        .to_string()
    };
    match which {
        "configmap-over-1MiB" => json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "big"}, "data": {"k": "x".repeat(1024 * 1024 + 1)}})
        .to_string(),
        "widget-of-2MiB" => widget("w-huge", 2 * 1024 * 1024),
        "request-of-4MiB" => widget("w-vhuge", 4 * 1024 * 1024),
        other => panic!("no body {other}"),
    }
}

/// The watch events' types in a newline-delimited answer.
fn event_types(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn check(exchange: &Exchange, answer: &Answer) -> Vec<String> {
    let expect = &exchange.expect;
    let body = &answer.body;
    let mut wrong = Vec::new();
    let mut same = |what: &str, want: Value, got: Value| {
        if want != got {
            wrong.push(format!("{what}: want {want}, got {got}"));
        }
    };
    same("code", json!(expect.code), json!(answer.code));
    if let Some(kind) = &expect.kind {
        same("kind", json!(kind), body["kind"].clone());
    }
    if let Some(reason) = &expect.reason {
        let got = match &expect.events {
            Some(_) => serde_json::from_str::<Value>(answer.text.lines().next().unwrap_or("{}"))
                .map(|e| e["object"]["reason"].clone())
                .unwrap_or(Value::Null),
            None => body["reason"].clone(),
        };
        same("reason", json!(reason), got);
    }
    if let Some(name) = &expect.name {
        same("name", json!(name), body["metadata"]["name"].clone());
    }
    if let Some(prefix) = &expect.name_prefix {
        let got = body["metadata"]["name"].as_str().unwrap_or("");
        same(
            "name prefix",
            json!(true),
            json!(got.starts_with(prefix.as_str())),
        );
    }
    if let Some(finalizers) = &expect.finalizers {
        let got = body["metadata"]
            .get("finalizers")
            .cloned()
            .unwrap_or(json!([]));
        same("finalizers", json!(finalizers), got);
    }
    if let Some(managers) = &expect.managers {
        // As a set: entries are ordered by time, and the recording's fell in one second.
        let mut got: Vec<&str> = body["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["manager"].as_str())
            .collect();
        let mut want: Vec<&str> = managers.iter().map(String::as_str).collect();
        got.sort();
        want.sort();
        same("managers", json!(want), json!(got));
    }
    if let Some(items) = expect.items {
        same(
            "items",
            json!(items),
            json!(body["items"].as_array().map(Vec::len)),
        );
    }
    if let Some(groups) = expect.groups {
        let got = body["groups"]
            .as_array()
            .or(body["items"].as_array())
            .map(Vec::len);
        same("groups", json!(groups), json!(got));
    }
    if let Some(events) = &expect.events {
        same("events", json!(events), json!(event_types(&answer.text)));
    }
    if expect.deleting {
        same(
            "deleting",
            json!(true),
            json!(body["metadata"]["deletionTimestamp"].is_string()),
        );
    }
    for path in expect.openapi_paths.iter().flatten() {
        same(
            &format!("openapi index lists {path}"),
            json!(true),
            json!(body["paths"].get(path).is_some()),
        );
    }
    wrong
}

/// The exchange's request, with its Accept header when it has one.
async fn send(
    client: &kube::Client,
    exchange: &Exchange,
    path: &str,
    content_type: &str,
    body: &str,
) -> Answer {
    let mut headers = vec![("content-type", content_type)];
    if let Some(accept) = &exchange.accept {
        headers.push(("accept", accept.as_str()));
    }
    raw_with(client, &exchange.method, path, &headers, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recorded_exchange_is_answered_as_the_real_server_answered() {
    let exchanges: Vec<Exchange> = serde_json::from_str(include_str!("answers.json")).unwrap();
    let server = ApiServer::new(ServerOptions {
        tls: true,
        token: Some(TOKEN.into()),
        ..ServerOptions::default()
    });
    crds::install(&server, Dialect::V1beta2).unwrap();
    let serving = server.serve(0).await.unwrap();
    let admin = client(&serving, Some(TOKEN), None).await;
    let mut previous_continue = String::new();
    let mut failures = Vec::new();
    for exchange in &exchanges {
        let caller = match (exchange.auth.as_deref(), exchange.impersonate.as_deref()) {
            (Some("bad-token"), _) => client(&serving, Some("wrong"), None).await,
            (Some(_), _) => client(&serving, None, None).await,
            (None, Some(user)) => client(&serving, Some(TOKEN), Some(user)).await,
            (None, None) => admin.clone(),
        };
        let mut path = exchange.path.clone();
        if exchange.continue_from_previous {
            let (base, _) = path.split_once("&continue=").unwrap();
            path = format!("{base}&continue={previous_continue}");
        }
        if let Some(name) = &exchange.watch_from_before {
            // The writes the recorded watch saw: create, scale, delete.
            let widgets = "/apis/answers.example.com/v1/namespaces/answers-21043/widgets";
            let before = raw(&admin, "GET", widgets, "application/json", "").await;
            let rv = before.body["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string();
            let widget = json!({"apiVersion": "answers.example.com/v1", "kind": "Widget",
                "metadata": {"name": name}, "spec": {"replicas": 1}});
            raw(
                &admin,
                "POST",
                widgets,
                "application/json",
                &widget.to_string(),
            )
            .await;
            let one = format!("{widgets}/{name}");
            let scale = r#"{"spec":{"replicas":2}}"#;
            raw(&admin, "PATCH", &one, "application/merge-patch+json", scale).await;
            raw(&admin, "DELETE", &one, "application/json", "").await;
            path = path
                .replace("resourceVersion=318", &format!("resourceVersion={rv}"))
                .replace("timeoutSeconds=4", "timeoutSeconds=1");
        }
        let body = match &exchange.generated {
            Some(which) => generated_body(which),
            None => exchange.body.clone().unwrap_or_default(),
        };
        let content_type = exchange
            .content_type
            .as_deref()
            .unwrap_or("application/json");
        let answer = tokio::time::timeout(
            Duration::from_secs(20),
            send(&caller, exchange, &path, content_type, &body),
        )
        .await
        .unwrap_or_else(|_| panic!("{} hung", exchange.title));
        if let Some(token) = answer.body["metadata"]["continue"].as_str() {
            previous_continue = token.to_string();
        }
        let wrong = check(exchange, &answer);
        if !wrong.is_empty() {
            failures.push(format!("{}: {}", exchange.title, wrong.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} exchanges differ:\n{}",
        failures.len(),
        exchanges.len(),
        failures.join("\n")
    );
}
