//! Every exchange recorded from a real kube-apiserver v1.36 (with the Cluster API CRDs, no
//! controller-manager), replayed in the recorded order against the sandbox served over TLS with a
//! bearer token, and each answer held against the recorded one: status code, content type and the
//! whole body — every field, message and cause — with only what differs from run to run set aside
//! (UIDs, resourceVersions, timestamps, continue tokens, generated name suffixes, OpenAPI hashes).
//!
//! `answers.json` was written from the recorded reference, one entry per exchange: the request as
//! sent and the answer as recorded. Bodies the recording cut are kept up to the last whole element
//! (`partial`), and the sandbox's answer must hold all of it; request bodies too large to record
//! are rebuilt here from their parts and must come to the recorded size. Objects the recording
//! made without recording the request are made where the later answers show them (`unrecorded`).

use std::collections::HashMap;
use std::time::Duration;

use capi_sandbox::crds::{self, Dialect};
use capi_sandbox::{ApiServer, ServerOptions};
use serde::Deserialize;
use serde_json::{Map, Value, json};

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
    /// A body too large to record, rebuilt from its parts.
    generate: Option<Generated>,
    impersonate: Option<String>,
    /// `bad-token` or `none` instead of the good token.
    auth: Option<String>,
    /// The second page: its continue token is the one the first page answered.
    #[serde(default)]
    continue_from_previous: bool,
    /// A watch, and the writes it saw.
    watch: Option<Watch>,
    /// Made by the recording without recording the request: only its status code is held.
    #[serde(default)]
    unrecorded: bool,
    answer: Recorded,
}

#[derive(Deserialize)]
struct Generated {
    parts: Vec<Part>,
    bytes: usize,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Part {
    Text(String),
    Fill { fill: String, count: usize },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Watch {
    /// Where the watch starts: `list` (the collection's resourceVersion before the writes) or
    /// `previous` (the resourceVersion the previous exchange answered).
    from: String,
    writes: Vec<Write>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Write {
    method: String,
    path: String,
    content_type: String,
    body: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Recorded {
    code: u16,
    content_type: Option<String>,
    body: Option<Value>,
    /// The body was cut: the sandbox's must hold what is left of it.
    #[serde(default)]
    partial: bool,
    text: Option<String>,
    events: Option<Vec<Value>>,
    /// How many groups the whole (cut) discovery answer listed.
    group_count: Option<usize>,
    /// Group versions the whole (cut) OpenAPI v3 index listed.
    openapi_paths: Option<Vec<String>>,
    /// The resourceVersion an unrecorded write left, as later requests name it.
    resource_version: Option<String>,
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

fn generated_body(generated: &Generated) -> String {
    let body: String = generated
        .parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => text.clone(),
            Part::Fill { fill, count } => fill.repeat(*count),
        })
        .collect();
    assert_eq!(
        body.len(),
        generated.bytes,
        "a rebuilt body has the recorded size"
    );
    body
}

fn is_uid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A message with what differs from run to run set aside: UIDs, and resourceVersions and sizes
/// in parentheses ("(554)", "(2097528 vs. 2097152)").
fn normalize_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if rest.len() >= 36 && rest.is_char_boundary(36) && is_uid(&rest[..36]) {
            out.push_str("<uid>");
            rest = &rest[36..];
            continue;
        }
        if let Some(after) = rest.strip_prefix('(') {
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            if digits > 0 && matches!(after[digits..].chars().next(), Some(')' | ' ')) {
                out.push_str("(<n>");
                rest = &after[digits..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The sandbox's UIDs and resourceVersions by the recorded ones they stand for, learnt from the
/// answers: a request that carries a recorded one (a precondition, an update) carries the
/// sandbox's instead.
#[derive(Default)]
struct Identities(HashMap<String, String>);

impl Identities {
    fn learn(&mut self, recorded: &Value, got: &Value) {
        match (recorded, got) {
            (Value::Object(recorded), Value::Object(got)) => {
                for (key, field) in recorded {
                    let Some(other) = got.get(key) else { continue };
                    match (key.as_str(), field.as_str(), other.as_str()) {
                        ("uid" | "resourceVersion", Some(from), Some(to)) => {
                            self.0.insert(from.to_string(), to.to_string());
                        }
                        _ => self.learn(field, other),
                    }
                }
            }
            (Value::Array(recorded), Value::Array(got)) => {
                for (field, other) in recorded.iter().zip(got) {
                    self.learn(field, other);
                }
            }
            _ => {}
        }
    }

    /// `text` (a JSON or YAML body) with every quoted recorded identity replaced by the sandbox's.
    fn translate(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut pieces = text.split('"');
        out.push_str(pieces.next().unwrap_or_default());
        for (i, piece) in pieces.enumerate() {
            out.push('"');
            let quoted = i % 2 == 0;
            match self.0.get(piece) {
                Some(ours) if quoted => out.push_str(ours),
                _ => out.push_str(piece),
            }
        }
        out
    }
}

/// `value` with what differs from run to run set aside.
fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.get("kind") == Some(&json!("APIResourceList")) => {
            // The apiextensions server lists a CRD group's resources in its informer's map
            // order, which differs from run to run of the same server: by name here.
            let mut list = map.clone();
            if let Some(Value::Array(resources)) = list.get_mut("resources") {
                resources.sort_by_key(|r| r["name"].as_str().unwrap_or_default().to_string());
            }
            list.insert("kind".into(), json!("APIResourceList (sorted)"));
            normalize(&Value::Object(list))
        }
        Value::Object(map) => {
            let generate_name = map.get("generateName").and_then(Value::as_str);
            let mut out = Map::new();
            for (key, field) in map {
                let text = field.as_str();
                let normalized = match (key.as_str(), text) {
                    ("uid", Some(_)) => json!("<uid>"),
                    ("resourceVersion", Some(_)) => json!("<rv>"),
                    (
                        "creationTimestamp" | "deletionTimestamp" | "time" | "lastTransitionTime",
                        Some(_),
                    ) => json!("<time>"),
                    ("continue", Some(token)) if !token.is_empty() => json!("<continue>"),
                    ("serverAddress", Some(_)) => json!("<address>"),
                    ("serverRelativeURL", Some(url)) => {
                        json!(url.split_once("?hash=").map_or(url, |(path, _)| path))
                    }
                    ("name", Some(name)) if generate_name.is_some_and(|g| name.starts_with(g)) => {
                        json!(format!("{}<suffix>", generate_name.unwrap()))
                    }
                    ("managedFields", _) => {
                        // The server orders entries by operation, time and manager; times are
                        // set aside here, so the order within one second is by manager.
                        let mut entries: Vec<Value> = field
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(normalize)
                            .collect();
                        entries.sort_by_key(|e| {
                            ["operation", "manager", "subresource"]
                                .map(|k| e[k].as_str().unwrap_or_default().to_string())
                        });
                        if field.is_array() {
                            Value::Array(entries)
                        } else {
                            normalize(field)
                        }
                    }
                    _ => normalize(field),
                };
                // Keys name UIDs too (an ownerReference's in managedFields).
                out.insert(normalize_text(key), normalized);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        Value::String(text) => Value::String(normalize_text(text)),
        other => other.clone(),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Where `got` differs from `want`; with `partial`, `want` is a cut answer and `got` need only
/// hold all of it.
fn differences(want: &Value, got: &Value, at: &str, partial: bool, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, field) in want {
                match got.get(key) {
                    Some(other) => differences(field, other, &format!("{at}.{key}"), partial, out),
                    None => out.push(format!("{at}.{key}: missing, want {}", short(field))),
                }
            }
            if !partial {
                for (key, field) in got {
                    if !want.contains_key(key) {
                        out.push(format!(
                            "{at}.{key}: not in the real answer: {}",
                            short(field)
                        ));
                    }
                }
            }
        }
        (Value::Array(want), Value::Array(got)) => {
            if got.len() != want.len() && !(partial && got.len() > want.len()) {
                out.push(format!("{at}: {} items, want {}", got.len(), want.len()));
            }
            for (i, (w, g)) in want.iter().zip(got).enumerate() {
                differences(w, g, &format!("{at}[{i}]"), partial, out);
            }
        }
        _ if want != got => out.push(format!("{at}: want {}, got {}", short(want), short(got))),
        _ => {}
    }
}

/// The watch events in a newline-delimited answer.
fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect()
}

fn check_events(recorded: &[Value], answer: &Answer, wrong: &mut Vec<String>) {
    let bookmark = |e: &&Value| e["type"] == "BOOKMARK";
    let got = events(&answer.text);
    // How many bookmarks a watch sees depends on timing; what one carries does not.
    let (want_marks, want): (Vec<&Value>, Vec<&Value>) = recorded.iter().partition(bookmark);
    let (got_marks, got): (Vec<&Value>, Vec<&Value>) = got.iter().partition(bookmark);
    let normalized =
        |events: Vec<&Value>| Value::Array(events.into_iter().map(normalize).collect());
    differences(&normalized(want), &normalized(got), "events", false, wrong);
    if let Some(mark) = want_marks.first() {
        if got_marks.is_empty() {
            wrong.push("events: no BOOKMARK".into());
        }
        for got in got_marks {
            differences(&normalize(mark), &normalize(got), "bookmark", false, wrong);
        }
    }
}

fn check(exchange: &Exchange, answer: &Answer) -> Vec<String> {
    let recorded = &exchange.answer;
    let mut wrong = Vec::new();
    if answer.code != recorded.code {
        wrong.push(format!("code: want {}, got {}", recorded.code, answer.code));
    }
    if exchange.unrecorded {
        return wrong;
    }
    if let Some(want) = &recorded.content_type {
        let got = answer
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if got != want {
            wrong.push(format!("content-type: want {want}, got {got}"));
        }
    }
    if let Some(body) = &recorded.body {
        let got = normalize(&answer.body);
        differences(&normalize(body), &got, "", recorded.partial, &mut wrong);
    }
    if let Some(text) = &recorded.text
        && answer.text.trim() != text.trim()
    {
        wrong.push(format!("text: want {text:?}, got {:?}", answer.text));
    }
    if let Some(events) = &recorded.events {
        check_events(events, answer, &mut wrong);
    }
    if let Some(count) = recorded.group_count {
        let got = answer.body["groups"]
            .as_array()
            .or(answer.body["items"].as_array())
            .map(Vec::len);
        if got != Some(count) {
            wrong.push(format!("groups: want {count}, got {got:?}"));
        }
    }
    for path in recorded.openapi_paths.iter().flatten() {
        if answer.body["paths"].get(path).is_none() {
            wrong.push(format!("the OpenAPI index does not list {path}"));
        }
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

/// `path` with its query's `name` set to `value`.
fn with_query(path: &str, name: &str, value: &str) -> String {
    let (base, query) = path.split_once('?').unwrap();
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key == name => format!("{key}={value}"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// Makes the writes a recorded watch saw and answers the path that watches them from `from`.
async fn watched(
    admin: &kube::Client,
    exchange: &Exchange,
    watch: &Watch,
    previous: &str,
) -> String {
    let from = match watch.from.as_str() {
        "previous" => previous.to_string(),
        _ => {
            let list = raw(
                admin,
                "GET",
                exchange.path.split('?').next().unwrap(),
                "application/json",
                "",
            )
            .await;
            list.body["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    for write in &watch.writes {
        let answer = raw(
            admin,
            &write.method,
            &write.path,
            &write.content_type,
            &write.body,
        )
        .await;
        assert!(
            answer.code < 300,
            "{} {}: {}",
            write.method,
            write.path,
            answer.text
        );
    }
    let path = with_query(&exchange.path, "resourceVersion", &from);
    with_query(&path, "timeoutSeconds", "1")
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
    let mut previous = Answer {
        code: 0,
        headers: http::HeaderMap::new(),
        body: Value::Null,
        text: String::new(),
    };
    let mut identities = Identities::default();
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
            let token = previous.body["metadata"]["continue"].as_str().unwrap();
            path = with_query(&path, "continue", token);
        }
        if let Some(watch) = &exchange.watch {
            let from = previous.body["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default();
            path = watched(&admin, exchange, watch, from).await;
        }
        let body = match &exchange.generate {
            Some(generated) => generated_body(generated),
            None => identities.translate(exchange.body.as_deref().unwrap_or_default()),
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
        if let Some(body) = &exchange.answer.body {
            identities.learn(body, &answer.body);
        }
        if let Some(rv) = &exchange.answer.resource_version {
            let recorded = json!({"metadata": {"resourceVersion": rv}});
            identities.learn(&recorded, &answer.body);
        }
        let wrong = check(exchange, &answer);
        if !wrong.is_empty() {
            failures.push(format!("{}:\n    {}", exchange.title, wrong.join("\n    ")));
        }
        previous = answer;
    }
    let recorded = exchanges.iter().filter(|e| !e.unrecorded).count();
    assert!(
        failures.is_empty(),
        "{} of {} exchanges differ:\n{}",
        failures.len(),
        recorded,
        failures.join("\n")
    );
    assert_eq!(recorded, 139, "every recorded exchange is replayed");
}
