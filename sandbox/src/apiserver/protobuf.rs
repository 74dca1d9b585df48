//! Decoding of the protobuf request bodies kubectl's typed clients send for built-in kinds
//! (`application/vnd.kubernetes.protobuf`): Namespace, Secret and ConfigMap, wrapped in the
//! `k8s\0` + runtime.Unknown envelope. Answers stay JSON, which those clients also accept.

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

/// A `map<string, string>` (or bytes, base64-encoded as JSON does) entry.
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

fn owner_reference(bytes: &[u8]) -> Result<Value, String> {
    let mut reader = Reader::new(bytes);
    let mut out = Map::new();
    while let Some((number, field)) = reader.next()? {
        match (number, field) {
            (1, Field::Bytes(b)) => {
                out.insert("kind".into(), text(b));
            }
            (3, Field::Bytes(b)) => {
                out.insert("name".into(), text(b));
            }
            (4, Field::Bytes(b)) => {
                out.insert("uid".into(), text(b));
            }
            (5, Field::Bytes(b)) => {
                out.insert("apiVersion".into(), text(b));
            }
            (6, Field::Varint(v)) => {
                out.insert("controller".into(), json!(v != 0));
            }
            (7, Field::Varint(v)) => {
                out.insert("blockOwnerDeletion".into(), json!(v != 0));
            }
            _ => {}
        }
    }
    Ok(Value::Object(out))
}

fn object_meta(bytes: &[u8]) -> Result<Value, String> {
    let mut reader = Reader::new(bytes);
    let mut meta = Map::new();
    let mut labels = Map::new();
    let mut annotations = Map::new();
    let mut owners = Vec::new();
    let mut finalizers = Vec::new();
    while let Some((number, field)) = reader.next()? {
        match (number, field) {
            (1, Field::Bytes(b)) => {
                meta.insert("name".into(), text(b));
            }
            (2, Field::Bytes(b)) => {
                meta.insert("generateName".into(), text(b));
            }
            (3, Field::Bytes(b)) => {
                meta.insert("namespace".into(), text(b));
            }
            (5, Field::Bytes(b)) => {
                meta.insert("uid".into(), text(b));
            }
            (6, Field::Bytes(b)) => {
                meta.insert("resourceVersion".into(), text(b));
            }
            (11, Field::Bytes(b)) => {
                let (k, v) = map_entry(b, false)?;
                labels.insert(k, v);
            }
            (12, Field::Bytes(b)) => {
                let (k, v) = map_entry(b, false)?;
                annotations.insert(k, v);
            }
            (13, Field::Bytes(b)) => owners.push(owner_reference(b)?),
            (14, Field::Bytes(b)) => finalizers.push(text(b)),
            _ => {}
        }
    }
    if !labels.is_empty() {
        meta.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        meta.insert("annotations".into(), Value::Object(annotations));
    }
    if !owners.is_empty() {
        meta.insert("ownerReferences".into(), Value::Array(owners));
    }
    if !finalizers.is_empty() {
        meta.insert("finalizers".into(), Value::Array(finalizers));
    }
    // Empty strings are absent in JSON too.
    meta.retain(|_, v| v.as_str() != Some(""));
    Ok(Value::Object(meta))
}

fn kind_body(kind: &str, bytes: &[u8]) -> Result<Value, String> {
    let mut reader = Reader::new(bytes);
    let mut out = Map::new();
    let mut data = Map::new();
    let mut binary = Map::new();
    let mut string_data = Map::new();
    while let Some((number, field)) = reader.next()? {
        match (kind, number, field) {
            (_, 1, Field::Bytes(b)) => {
                out.insert("metadata".into(), object_meta(b)?);
            }
            ("ConfigMap", 2, Field::Bytes(b)) => {
                let (k, v) = map_entry(b, false)?;
                data.insert(k, v);
            }
            ("ConfigMap", 3, Field::Bytes(b)) => {
                let (k, v) = map_entry(b, true)?;
                binary.insert(k, v);
            }
            ("ConfigMap", 4, Field::Varint(v)) | ("Secret", 5, Field::Varint(v)) => {
                out.insert("immutable".into(), json!(v != 0));
            }
            ("Secret", 2, Field::Bytes(b)) => {
                let (k, v) = map_entry(b, true)?;
                data.insert(k, v);
            }
            ("Secret", 3, Field::Bytes(b)) => {
                out.insert("type".into(), text(b));
            }
            ("Secret", 4, Field::Bytes(b)) => {
                let (k, v) = map_entry(b, false)?;
                string_data.insert(k, v);
            }
            ("Namespace", 2, Field::Bytes(b)) => {
                let mut spec = Reader::new(b);
                let mut finalizers = Vec::new();
                while let Some((n, f)) = spec.next()? {
                    if let (1, Field::Bytes(x)) = (n, f) {
                        finalizers.push(text(x));
                    }
                }
                out.insert("spec".into(), json!({"finalizers": finalizers}));
            }
            _ => {}
        }
    }
    if !data.is_empty() {
        out.insert("data".into(), Value::Object(data));
    }
    if !binary.is_empty() {
        out.insert("binaryData".into(), Value::Object(binary));
    }
    if !string_data.is_empty() {
        out.insert("stringData".into(), Value::Object(string_data));
    }
    Ok(Value::Object(out))
}

/// Decodes an enveloped protobuf body into the JSON the server works on.
pub fn decode(body: &[u8]) -> Result<Value, String> {
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
    if !matches!(kind.as_str(), "ConfigMap" | "Secret" | "Namespace") {
        return Err(format!(
            "protobuf decoding of {kind} is not supported by the sandbox"
        ));
    }
    let mut object = kind_body(&kind, raw)?;
    object["apiVersion"] = json!(api_version);
    object["kind"] = json!(kind);
    Ok(object)
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
