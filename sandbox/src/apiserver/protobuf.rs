//! Decoding of the protobuf request bodies kubectl's typed clients send for built-in kinds
//! (`application/vnd.kubernetes.protobuf`), wrapped in the `k8s\0` + runtime.Unknown envelope:
//! each kind a table of its fields (number, JSON name, type) from Kubernetes' generated.proto.
//! Answers stay JSON, which those clients also accept.

use base64::Engine;
use serde_json::{Map, Value, json};

pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
const MAGIC: &[u8] = b"k8s\0";

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.data.get(self.pos).ok_or("truncated varint")?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint too long".into())
    }

    fn next(&mut self) -> Result<Option<(u64, Field<'a>)>, String> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            2 => {
                let len = self.varint()? as usize;
                let end = self
                    .pos
                    .checked_add(len)
                    .filter(|e| *e <= self.data.len())
                    .ok_or("truncated field")?;
                let bytes = &self.data[self.pos..end];
                self.pos = end;
                Field::Bytes(bytes)
            }
            1 => {
                self.pos += 8;
                Field::Varint(0)
            }
            5 => {
                self.pos += 4;
                Field::Varint(0)
            }
            other => return Err(format!("unsupported wire type {other}")),
        };
        Ok(Some((key >> 3, field)))
    }
}

fn text(bytes: &[u8]) -> Value {
    json!(String::from_utf8_lossy(bytes))
}

/// How a message field reads as JSON.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Bool,
    Int,
    /// A `metav1.Time` (seconds, nanos) as RFC 3339.
    Time,
    Msg(&'static [F]),
    RepStr,
    RepMsg(&'static [F]),
    /// `map<string, string>`.
    MapStr,
    /// `map<string, bytes>`, base64 as JSON has it.
    MapBytes,
}

/// A field: its number, its JSON name, its type.
struct F(u64, &'static str, Ty);

const OWNER_REFERENCE: &[F] = &[
    F(1, "kind", Ty::Str),
    F(3, "name", Ty::Str),
    F(4, "uid", Ty::Str),
    F(5, "apiVersion", Ty::Str),
    F(6, "controller", Ty::Bool),
    F(7, "blockOwnerDeletion", Ty::Bool),
];
const OBJECT_META: &[F] = &[
    F(1, "name", Ty::Str),
    F(2, "generateName", Ty::Str),
    F(3, "namespace", Ty::Str),
    F(5, "uid", Ty::Str),
    F(6, "resourceVersion", Ty::Str),
    F(11, "labels", Ty::MapStr),
    F(12, "annotations", Ty::MapStr),
    F(13, "ownerReferences", Ty::RepMsg(OWNER_REFERENCE)),
    F(14, "finalizers", Ty::RepStr),
];
const CONFIG_MAP: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(2, "data", Ty::MapStr),
    F(3, "binaryData", Ty::MapBytes),
    F(4, "immutable", Ty::Bool),
];
const SECRET: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(2, "data", Ty::MapBytes),
    F(3, "type", Ty::Str),
    F(4, "stringData", Ty::MapStr),
    F(5, "immutable", Ty::Bool),
];
const NAMESPACE: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(2, "spec", Ty::Msg(&[F(1, "finalizers", Ty::RepStr)])),
];
const RESOURCE_ATTRIBUTES: &[F] = &[
    F(1, "namespace", Ty::Str),
    F(2, "verb", Ty::Str),
    F(3, "group", Ty::Str),
    F(4, "version", Ty::Str),
    F(5, "resource", Ty::Str),
    F(6, "subresource", Ty::Str),
    F(7, "name", Ty::Str),
];
const NON_RESOURCE_ATTRIBUTES: &[F] = &[F(1, "path", Ty::Str), F(2, "verb", Ty::Str)];
const SELF_SUBJECT_ACCESS_REVIEW: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(
        2,
        "spec",
        Ty::Msg(&[
            F(1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES)),
            F(2, "nonResourceAttributes", Ty::Msg(NON_RESOURCE_ATTRIBUTES)),
        ]),
    ),
];
const SUBJECT_ACCESS_REVIEW: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(
        2,
        "spec",
        Ty::Msg(&[
            F(1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES)),
            F(2, "nonResourceAttributes", Ty::Msg(NON_RESOURCE_ATTRIBUTES)),
            F(3, "user", Ty::Str),
            F(4, "groups", Ty::RepStr),
            F(6, "uid", Ty::Str),
        ]),
    ),
];
const SELF_SUBJECT_RULES_REVIEW: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(2, "spec", Ty::Msg(&[F(1, "namespace", Ty::Str)])),
];
const DELETE_OPTIONS: &[F] = &[
    F(1, "gracePeriodSeconds", Ty::Int),
    F(
        2,
        "preconditions",
        Ty::Msg(&[F(1, "uid", Ty::Str), F(2, "resourceVersion", Ty::Str)]),
    ),
    F(3, "orphanDependents", Ty::Bool),
    F(4, "propagationPolicy", Ty::Str),
    F(5, "dryRun", Ty::RepStr),
];
const OBJECT_REFERENCE: &[F] = &[
    F(1, "kind", Ty::Str),
    F(2, "namespace", Ty::Str),
    F(3, "name", Ty::Str),
    F(4, "uid", Ty::Str),
    F(5, "apiVersion", Ty::Str),
    F(6, "resourceVersion", Ty::Str),
    F(7, "fieldPath", Ty::Str),
];
const EVENT: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(2, "involvedObject", Ty::Msg(OBJECT_REFERENCE)),
    F(3, "reason", Ty::Str),
    F(4, "message", Ty::Str),
    F(
        5,
        "source",
        Ty::Msg(&[F(1, "component", Ty::Str), F(2, "host", Ty::Str)]),
    ),
    F(6, "firstTimestamp", Ty::Time),
    F(7, "lastTimestamp", Ty::Time),
    F(8, "count", Ty::Int),
    F(9, "type", Ty::Str),
    F(12, "action", Ty::Str),
    F(13, "related", Ty::Msg(OBJECT_REFERENCE)),
    F(14, "reportingComponent", Ty::Str),
    F(15, "reportingInstance", Ty::Str),
];

const LABEL_SELECTOR: &[F] = &[
    F(1, "matchLabels", Ty::MapStr),
    F(
        2,
        "matchExpressions",
        Ty::RepMsg(&[
            F(1, "key", Ty::Str),
            F(2, "operator", Ty::Str),
            F(3, "values", Ty::RepStr),
        ]),
    ),
];
const CONTAINER: &[F] = &[
    F(1, "name", Ty::Str),
    F(2, "image", Ty::Str),
    F(3, "command", Ty::RepStr),
    F(4, "args", Ty::RepStr),
    F(5, "workingDir", Ty::Str),
    F(
        6,
        "ports",
        Ty::RepMsg(&[
            F(1, "name", Ty::Str),
            F(2, "hostPort", Ty::Int),
            F(3, "containerPort", Ty::Int),
            F(4, "protocol", Ty::Str),
            F(5, "hostIP", Ty::Str),
        ]),
    ),
    F(
        7,
        "env",
        Ty::RepMsg(&[F(1, "name", Ty::Str), F(2, "value", Ty::Str)]),
    ),
    // Quantities are not read; an empty requirement stays `{}` as kubectl sends it.
    F(8, "resources", Ty::Msg(&[])),
    F(14, "imagePullPolicy", Ty::Str),
];
const POD_SPEC: &[F] = &[
    F(2, "containers", Ty::RepMsg(CONTAINER)),
    F(3, "restartPolicy", Ty::Str),
    F(8, "serviceAccountName", Ty::Str),
    F(20, "initContainers", Ty::RepMsg(CONTAINER)),
];
const DEPLOYMENT: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(
        2,
        "spec",
        Ty::Msg(&[
            F(1, "replicas", Ty::Int),
            F(2, "selector", Ty::Msg(LABEL_SELECTOR)),
            F(
                3,
                "template",
                Ty::Msg(&[
                    F(1, "metadata", Ty::Msg(OBJECT_META)),
                    F(2, "spec", Ty::Msg(POD_SPEC)),
                ]),
            ),
            F(4, "strategy", Ty::Msg(&[F(1, "type", Ty::Str)])),
            F(5, "minReadySeconds", Ty::Int),
            F(6, "revisionHistoryLimit", Ty::Int),
            F(7, "paused", Ty::Bool),
            F(9, "progressDeadlineSeconds", Ty::Int),
        ]),
    ),
    F(3, "status", Ty::Msg(&[])),
];
const POLICY_RULE: &[F] = &[
    F(1, "verbs", Ty::RepStr),
    F(2, "apiGroups", Ty::RepStr),
    F(3, "resources", Ty::RepStr),
    F(4, "resourceNames", Ty::RepStr),
    F(5, "nonResourceURLs", Ty::RepStr),
];
const ROLE: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(2, "rules", Ty::RepMsg(POLICY_RULE)),
];
const ROLE_BINDING: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(
        2,
        "subjects",
        Ty::RepMsg(&[
            F(1, "kind", Ty::Str),
            F(2, "apiGroup", Ty::Str),
            F(3, "name", Ty::Str),
            F(4, "namespace", Ty::Str),
        ]),
    ),
    F(
        3,
        "roleRef",
        Ty::Msg(&[
            F(1, "apiGroup", Ty::Str),
            F(2, "kind", Ty::Str),
            F(3, "name", Ty::Str),
        ]),
    ),
];
const SERVICE_ACCOUNT: &[F] = &[
    F(1, "metadata", Ty::Msg(OBJECT_META)),
    F(4, "automountServiceAccountToken", Ty::Bool),
];

/// The built-in kinds kubectl's typed clients send as protobuf, with their message layouts.
const KINDS: &[(&str, &[F])] = &[
    ("ConfigMap", CONFIG_MAP),
    ("Secret", SECRET),
    ("Namespace", NAMESPACE),
    ("SelfSubjectAccessReview", SELF_SUBJECT_ACCESS_REVIEW),
    ("SelfSubjectRulesReview", SELF_SUBJECT_RULES_REVIEW),
    ("SubjectAccessReview", SUBJECT_ACCESS_REVIEW),
    ("LocalSubjectAccessReview", SUBJECT_ACCESS_REVIEW),
    (
        "SelfSubjectReview",
        &[F(1, "metadata", Ty::Msg(OBJECT_META))],
    ),
    ("DeleteOptions", DELETE_OPTIONS),
    ("Event", EVENT),
    ("Deployment", DEPLOYMENT),
    ("Role", ROLE),
    ("ClusterRole", ROLE),
    ("RoleBinding", ROLE_BINDING),
    ("ClusterRoleBinding", ROLE_BINDING),
    ("ServiceAccount", SERVICE_ACCOUNT),
];

/// A `map<…>` entry: key (1) and value (2).
fn map_entry(bytes: &[u8], base64_values: bool) -> Result<(String, Value), String> {
    let mut reader = Reader::new(bytes);
    let (mut key, mut value) = (String::new(), json!(""));
    while let Some((number, field)) = reader.next()? {
        if let Field::Bytes(b) = field {
            match number {
                1 => key = String::from_utf8_lossy(b).into_owned(),
                2 if base64_values => {
                    value = json!(base64::engine::general_purpose::STANDARD.encode(b))
                }
                2 => value = text(b),
                _ => {}
            }
        }
    }
    Ok((key, value))
}

/// `metav1.Time`: seconds (1) and nanos (2) since the epoch, in RFC 3339 as JSON has it.
fn time(bytes: &[u8]) -> Result<Value, String> {
    let mut reader = Reader::new(bytes);
    let mut seconds = 0i64;
    while let Some((number, field)) = reader.next()? {
        if let (1, Field::Varint(v)) = (number, field) {
            seconds = v as i64;
        }
    }
    let at = jiff::Timestamp::from_second(seconds).map_err(|e| e.to_string())?;
    Ok(json!(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()))
}

/// A message read with its layout; fields the layout does not name are skipped, empty strings
/// left out (JSON leaves them out too).
fn message(bytes: &[u8], layout: &[F]) -> Result<Value, String> {
    let mut reader = Reader::new(bytes);
    let mut out = Map::new();
    while let Some((number, field)) = reader.next()? {
        let Some(F(_, name, ty)) = layout.iter().find(|f| f.0 == number) else {
            continue;
        };
        let name = name.to_string();
        match (ty, field) {
            (Ty::Str, Field::Bytes(b)) => {
                if !b.is_empty() {
                    out.insert(name, text(b));
                }
            }
            (Ty::Bool, Field::Varint(v)) => {
                out.insert(name, json!(v != 0));
            }
            (Ty::Int, Field::Varint(v)) => {
                out.insert(name, json!(v as i64));
            }
            (Ty::Time, Field::Bytes(b)) => {
                out.insert(name, time(b)?);
            }
            (Ty::Msg(inner), Field::Bytes(b)) => {
                out.insert(name, message(b, inner)?);
            }
            (Ty::RepStr, Field::Bytes(b)) => push(&mut out, name, text(b)),
            (Ty::RepMsg(inner), Field::Bytes(b)) => push(&mut out, name, message(b, inner)?),
            (Ty::MapStr | Ty::MapBytes, Field::Bytes(b)) => {
                let (key, value) = map_entry(b, matches!(ty, Ty::MapBytes))?;
                let map = out.entry(name).or_insert_with(|| json!({}));
                map[key] = value;
            }
            _ => {
                return Err(format!(
                    "field {number} ({name}) has an unexpected wire type"
                ));
            }
        }
    }
    Ok(Value::Object(out))
}

fn push(out: &mut Map<String, Value>, name: String, item: Value) {
    if let Value::Array(items) = out.entry(name).or_insert_with(|| json!([])) {
        items.push(item);
    }
}

/// Why a protobuf body could not be read.
#[derive(Debug, PartialEq)]
pub enum Undecodable {
    /// A kind this server has no field table for (the client must send JSON).
    Kind(String),
    /// Not a well-formed body.
    Malformed(String),
}

/// Decodes an enveloped protobuf body into the JSON the server works on.
pub fn decode(body: &[u8]) -> Result<Value, Undecodable> {
    let (api_version, kind, raw) = envelope(body).map_err(Undecodable::Malformed)?;
    let Some((_, layout)) = KINDS.iter().find(|(k, _)| *k == kind) else {
        return Err(Undecodable::Kind(kind));
    };
    let mut object = message(raw, layout).map_err(Undecodable::Malformed)?;
    object["apiVersion"] = json!(api_version);
    object["kind"] = json!(kind);
    Ok(object)
}

/// The `k8s\0` + runtime.Unknown envelope: apiVersion, kind and the message's bytes.
fn envelope(body: &[u8]) -> Result<(String, String, &[u8]), String> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf prefix")?;
    let mut reader = Reader::new(envelope);
    let (mut api_version, mut kind, mut raw): (String, String, &[u8]) =
        (String::new(), String::new(), &[]);
    while let Some((number, field)) = reader.next()? {
        match (number, field) {
            (1, Field::Bytes(type_meta)) => {
                let mut tm = Reader::new(type_meta);
                while let Some((n, f)) = tm.next()? {
                    match (n, f) {
                        (1, Field::Bytes(b)) => {
                            api_version = String::from_utf8_lossy(b).into_owned()
                        }
                        (2, Field::Bytes(b)) => kind = String::from_utf8_lossy(b).into_owned(),
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    Ok((api_version, kind, raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(number: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3 | 2) as u8, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn decodes_a_configmap_envelope() {
        let meta = [
            field(1, b"cm1"),
            field(11, &[field(1, b"app"), field(2, b"x")].concat()),
        ]
        .concat();
        let body = [
            field(1, &meta),
            field(2, &[field(1, b"k"), field(2, b"v")].concat()),
        ]
        .concat();
        let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let envelope = [MAGIC.to_vec(), field(1, &type_meta), field(2, &body)].concat();
        let decoded = decode(&envelope).unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1", "labels": {"app": "x"}}, "data": {"k": "v"}})
        );
    }
}
