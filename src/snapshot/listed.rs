//! How a LIST answer becomes objects: each object's managedFields skipped, or kept as the
//! server's JSON text but never parsed (a real server's field trees, parsed, cost more memory
//! than the rest of the object), and its status skipped when the reader has no use for it.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::TypeMeta;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// What a reader keeps of each object besides its metadata and content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// `metadata.managedFields`, as JSON text.
    pub managed_fields: bool,
    pub status: Status,
    pub content: Content,
}

/// How a reader holds what an object carries besides its type and metadata (spec, data, the
/// status it keeps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// Parsed, in `data`: for readers that look into it.
    Tree,
    /// As the server's JSON text (one allocation, a fraction of a parsed tree), in
    /// [`Listed::content`], for readers that only send it on; `data` keeps only what every
    /// reader looks for in any object's spec: `spec.clusterName` (which Cluster it belongs to)
    /// and `spec.providerID` (which machine it is, for verification records).
    Text,
}

/// How much of `.status` a reader keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Skip,
    /// What an evaluation reads ([`crate::model::status_read`]): not `status.deprecated` (a
    /// v1beta2 object's copy of what v1beta1 said), addresses, node info, or the times and
    /// generations of conditions — most of what a real controller's status weighs.
    Evaluated,
    /// As the server has it: to be written again.
    Whole,
}

impl Keep {
    /// No managedFields: what every evaluation reads.
    pub const EVALUATE: Keep = Keep {
        managed_fields: false,
        status: Status::Evaluated,
        content: Content::Tree,
    };
}

/// Trims an object read whole (a watch's) to what [`Keep::EVALUATE`] keeps of a listed one.
pub fn for_evaluation(object: &mut DynamicObject) {
    object.metadata.managed_fields = None;
    // A Secret's or ConfigMap's contents are no evaluation's business: never held.
    if object.types.as_ref().is_some_and(|t| t.api_version == "v1") {
        for contents in ["data", "stringData", "binaryData"] {
            object.data.as_object_mut().map(|o| o.remove(contents));
        }
    }
    if let Some(status) = object.data.get_mut("status").and_then(Value::as_object_mut) {
        *status = crate::model::status_read::trimmed(std::mem::take(status));
    }
}

/// The content of objects read as [`Content::Text`], by UID.
pub type Contents = std::collections::HashMap<String, Box<RawValue>>;

/// One listed object, and its managedFields as the server wrote them (when kept).
pub struct Listed {
    pub object: DynamicObject,
    pub managed_fields: Option<Box<RawValue>>,
    /// With [`Content::Text`]: the object's content as one JSON object (its fields but
    /// `apiVersion`, `kind` and `metadata`).
    pub content: Option<Box<RawValue>>,
}

/// `object` whole again: its type and metadata with `content` (a [`Content::Text`] read) as
/// its data; without content, `object` as it is.
pub fn with_content(object: &DynamicObject, content: Option<&RawValue>) -> DynamicObject {
    match content {
        None => object.clone(),
        Some(text) => DynamicObject {
            types: object.types.clone(),
            metadata: object.metadata.clone(),
            data: serde_json::from_str(text.get()).expect("a listed object's content is JSON"),
        },
    }
}

/// One page of a LIST answer.
pub struct Page {
    pub items: Vec<Listed>,
    /// The continue token of the next page, if any.
    pub next: Option<String>,
}

/// Lists one page of `api`.
pub async fn page(
    api: &Api<DynamicObject>,
    client: &kube::Client,
    params: &ListParams,
    keep: Keep,
) -> kube::Result<Page> {
    let request = kube::core::Request::new(api.resource_url())
        .list(params)
        .map_err(kube::Error::BuildRequest)?;
    // Read into one buffer (a page may hold thousands of objects): no second copy as text.
    let mut body = Vec::new();
    futures::AsyncReadExt::read_to_end(&mut client.request_stream(request).await?, &mut body)
        .await
        .map_err(|e| kube::Error::Service(Box::new(e)))?;
    parse(&body, keep).map_err(kube::Error::SerdeError)
}

/// Reads a LIST answer.
pub fn parse(text: impl AsRef<[u8]>, keep: Keep) -> serde_json::Result<Page> {
    let mut deserializer = serde_json::Deserializer::from_slice(text.as_ref());
    let page = PageSeed(keep).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(page)
}

struct PageSeed(Keep);

impl<'de> DeserializeSeed<'de> for PageSeed {
    type Value = Page;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Page, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PageSeed {
    type Value = Page;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Page, A::Error> {
        let mut page = Page {
            items: Vec::new(),
            next: None,
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "items" => page.items = map.next_value_seed(ItemsSeed(self.0))?,
                "metadata" => {
                    let meta: ListMeta = map.next_value()?;
                    page.next = meta.continue_.filter(|c| !c.is_empty());
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(page)
    }
}

#[derive(serde::Deserialize)]
struct ListMeta {
    #[serde(rename = "continue", default)]
    continue_: Option<String>,
}

struct ItemsSeed(Keep);

impl<'de> DeserializeSeed<'de> for ItemsSeed {
    type Value = Vec<Listed>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Listed>, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed {
    type Value = Vec<Listed>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_none<E: de::Error>(self) -> Result<Vec<Listed>, E> {
        Ok(Vec::new())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<Listed>, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Listed>, D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Listed>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(ItemSeed(self.0))? {
            items.push(item);
        }
        Ok(items)
    }
}

struct ItemSeed(Keep);

impl<'de> DeserializeSeed<'de> for ItemSeed {
    type Value = Listed;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Listed, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ItemSeed {
    type Value = Listed;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Listed, A::Error> {
        let (mut api_version, mut kind) = (None::<String>, None::<String>);
        let mut metadata = (ObjectMeta::default(), None);
        let mut data = Map::new();
        let mut text = ContentText::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" => api_version = Some(map.next_value()?),
                "kind" => kind = Some(map.next_value()?),
                "metadata" => metadata = map.next_value_seed(MetaSeed(self.0))?,
                "status" if self.0.status == Status::Skip => {
                    map.next_value::<IgnoredAny>()?;
                }
                "status" if self.0.status == Status::Evaluated => {
                    let status = map.next_value_seed(EvaluatedStatus)?;
                    match self.0.content {
                        Content::Tree => {
                            data.insert(key, status);
                        }
                        Content::Text => text.push(&key, &status.to_string()),
                    }
                }
                _ if self.0.content == Content::Text => {
                    let value = map.next_value::<Box<RawValue>>()?;
                    if key == "spec" {
                        let spec: SpecReadApart =
                            serde_json::from_str(value.get()).map_err(de::Error::custom)?;
                        if !spec.0.is_empty() {
                            data.insert(key.clone(), Value::Object(spec.0));
                        }
                    }
                    text.push(&key, value.get());
                }
                _ => {
                    let value: Value = map.next_value()?;
                    data.insert(key, value);
                }
            }
        }
        let types = match (api_version, kind) {
            (Some(api_version), Some(kind)) => Some(TypeMeta { api_version, kind }),
            _ => None,
        };
        let (metadata, managed_fields) = metadata;
        Ok(Listed {
            object: DynamicObject {
                types,
                metadata,
                data: Value::Object(data),
            },
            managed_fields,
            content: match self.0.content {
                Content::Tree => None,
                Content::Text => Some(text.finish()),
            },
        })
    }
}

/// The fields [`Content::Text`] parses of a spec it holds as text.
const SPEC_READ_APART: [&str; 2] = ["clusterName", "providerID"];

/// A spec's [`SPEC_READ_APART`] fields (the rest skipped unparsed).
struct SpecReadApart(Map<String, Value>);

impl<'de> serde::Deserialize<'de> for SpecReadApart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SpecReadApartVisitor)
    }
}

struct SpecReadApartVisitor;

impl<'de> Visitor<'de> for SpecReadApartVisitor {
    type Value = SpecReadApart;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object's spec")
    }

    fn visit_unit<E: de::Error>(self) -> Result<SpecReadApart, E> {
        Ok(SpecReadApart(Map::new()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SpecReadApart, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if SPEC_READ_APART.contains(&key.as_str()) {
                kept.insert(key, map.next_value()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(SpecReadApart(kept))
    }
}

/// An object's content written as one JSON object from its fields' text as read.
#[derive(Default)]
struct ContentText(String);

impl ContentText {
    fn push(&mut self, key: &str, value: &str) {
        self.0.push(if self.0.is_empty() { '{' } else { ',' });
        self.0
            .push_str(&serde_json::to_string(key).expect("a key serialises"));
        self.0.push(':');
        self.0.push_str(value);
    }

    fn finish(mut self) -> Box<RawValue> {
        if self.0.is_empty() {
            self.0.push('{');
        }
        self.0.push('}');
        RawValue::from_string(self.0).expect("fields read as JSON make a JSON object")
    }
}

/// A status as [`Status::Evaluated`] keeps it.
struct EvaluatedStatus;

impl<'de> DeserializeSeed<'de> for EvaluatedStatus {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EvaluatedStatus {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object's status")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut status = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // What no view reads is skipped unparsed.
            if crate::model::status_read::reads(&key) {
                status.insert(key, map.next_value()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Value::Object(crate::model::status_read::trimmed(status)))
    }
}

struct MetaSeed(Keep);

impl<'de> DeserializeSeed<'de> for MetaSeed {
    type Value = (ObjectMeta, Option<Box<RawValue>>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed {
    type Value = (ObjectMeta, Option<Box<RawValue>>);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut rest = Map::new();
        let mut managed_fields = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "managedFields" {
                if self.0.managed_fields {
                    managed_fields = Some(map.next_value::<Box<RawValue>>()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            } else {
                let value: Value = map.next_value()?;
                rest.insert(key, value);
            }
        }
        let meta = serde_json::from_value(Value::Object(rest)).map_err(de::Error::custom)?;
        Ok((meta, managed_fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = r#"{"apiVersion":"v1","kind":"SecretList","metadata":{"resourceVersion":"7","continue":"next-page"},
        "items":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a","namespace":"ns","uid":"u1","labels":{"l":"v"},
            "managedFields":[{"manager":"kubectl","operation":"Update","fieldsV1":{"f:data":{".":{},"f:k":{}}}}]},
            "data":{"k":"dg=="},"status":{"replicas":2,"deprecated":{"v1beta1":{"conditions":[]}}}},
          {"metadata":{"name":"b","uid":"u2"}}]}"#;

    #[test]
    fn managed_fields_are_skipped_or_kept_as_text_and_status_as_asked() {
        let lean = parse(ANSWER, Keep::EVALUATE).unwrap();
        assert_eq!(lean.next.as_deref(), Some("next-page"));
        assert_eq!(lean.items.len(), 2);
        let a = &lean.items[0];
        assert!(a.managed_fields.is_none() && a.object.metadata.managed_fields.is_none());
        assert_eq!(a.object.metadata.name.as_deref(), Some("a"));
        assert_eq!(a.object.metadata.labels.as_ref().unwrap()["l"], "v");
        assert_eq!(a.object.types.as_ref().unwrap().kind, "Secret");
        assert_eq!(a.object.data["data"]["k"], "dg==");
        assert_eq!(a.object.data["status"]["replicas"], 2);
        assert!(a.object.data["status"].get("deprecated").is_none());
        assert!(a.object.data.get("apiVersion").is_none());
        assert!(lean.items[1].object.types.is_none());

        let kept = parse(
            ANSWER,
            Keep {
                managed_fields: true,
                status: Status::Skip,
                content: Content::Tree,
            },
        )
        .unwrap();
        let a = &kept.items[0];
        assert_eq!(
            a.managed_fields.as_ref().unwrap().get(),
            r#"[{"manager":"kubectl","operation":"Update","fieldsV1":{"f:data":{".":{},"f:k":{}}}}]"#
        );
        assert!(a.object.data.get("status").is_none());
        assert_eq!(a.object.data["data"]["k"], "dg==");

        let whole = parse(
            ANSWER,
            Keep {
                managed_fields: false,
                status: Status::Whole,
                content: Content::Tree,
            },
        )
        .unwrap();
        let status = &whole.items[0].object.data["status"];
        assert_eq!(
            status["deprecated"]["v1beta1"]["conditions"],
            Value::Array(vec![])
        );
    }

    #[test]
    fn the_same_object_as_kube_reads_it_apart_from_what_is_skipped() {
        let text = r#"{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m","namespace":"ns","uid":"u",
            "ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","name":"s","uid":"o","controller":true}],
            "annotations":{"a":"b"},"finalizers":["f"],"resourceVersion":"3","creationTimestamp":"2026-01-01T00:00:00Z",
            "managedFields":[{"manager":"capi-controller","operation":"Update","subresource":"status","fieldsV1":{"f:status":{}}}]},
            "spec":{"clusterName":"c"},
            "status":{"phase":"Running","nodeRef":{"name":"n"},"deprecated":{"v1beta1":{"conditions":[{"type":"Ready","status":"True"}]}}}}"#;
        // A watch reads objects whole, then trims them as a LIST for evaluation reads them.
        let mut kube: DynamicObject = serde_json::from_str(text).unwrap();
        assert!(kube.metadata.managed_fields.is_some());
        for_evaluation(&mut kube);
        let page = parse(
            format!(r#"{{"metadata":{{}},"items":[{text}]}}"#),
            Keep::EVALUATE,
        )
        .unwrap();
        let ours = &page.items[0].object;
        assert_eq!(ours.types, kube.types);
        assert_eq!(ours.metadata, kube.metadata);
        assert_eq!(ours.data, kube.data);
    }

    #[test]
    fn content_read_as_text_is_the_tree_once_put_back_with_only_the_cluster_name_parsed() {
        let text = r#"{"apiVersion":"bootstrap.cluster.x-k8s.io/v1beta2","kind":"KubeadmConfig",
            "metadata":{"name":"k","namespace":"ns","uid":"u","labels":{"l":"v"},
                "managedFields":[{"manager":"m","operation":"Update"}]},
            "spec":{"clusterName":"c","providerID":"p://1","files":[{"path":"/etc/x","content":"a\"b"}],"n":1.5},
            "status":{"ready":true,"deprecated":{"v1beta1":{}}}}"#;
        let answer = format!(r#"{{"metadata":{{}},"items":[{text}]}}"#);
        for status in [Status::Skip, Status::Evaluated, Status::Whole] {
            let keep = |content| Keep {
                managed_fields: true,
                status,
                content,
            };
            let tree = parse(&answer, keep(Content::Tree)).unwrap().items.remove(0);
            let read = parse(&answer, keep(Content::Text)).unwrap().items.remove(0);
            assert!(tree.content.is_none());
            // Held apart: only the Cluster it belongs to and the machine it is are parsed.
            assert_eq!(
                read.object.data,
                serde_json::json!({"spec": {"clusterName": "c", "providerID": "p://1"}})
            );
            assert_eq!(read.object.metadata, tree.object.metadata);
            assert_eq!(
                read.managed_fields.as_ref().map(|m| m.get()),
                tree.managed_fields.as_ref().map(|m| m.get())
            );
            let whole = with_content(&read.object, read.content.as_deref());
            assert_eq!(whole.data, tree.object.data, "{status:?}");
            assert_eq!(whole.types, tree.object.types);
        }
        // No spec, no content: an empty object, and no cluster name.
        let bare = parse(
            r#"{"items":[{"kind":"ConfigMap","metadata":{"name":"x"}}]}"#,
            Keep {
                content: Content::Text,
                ..Keep::EVALUATE
            },
        )
        .unwrap()
        .items
        .remove(0);
        assert_eq!(bare.content.unwrap().get(), "{}");
        assert_eq!(bare.object.data, serde_json::json!({}));
    }

    #[test]
    fn an_answer_that_is_not_a_list_is_an_error() {
        assert!(parse("[]", Keep::EVALUATE).is_err());
        assert!(parse(r#"{"items":[1]}"#, Keep::EVALUATE).is_err());
        assert_eq!(
            parse(r#"{"items":null}"#, Keep::EVALUATE)
                .unwrap()
                .items
                .len(),
            0
        );
    }
}
