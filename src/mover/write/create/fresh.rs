//! What a move read from the paused source and has still to create: dropped object by object as
//! the creates' bodies are made.

use std::collections::HashMap;
use std::sync::Arc;

use kube::api::DynamicObject;
use serde_json::value::RawValue;

use crate::mover::graph::discover::{ManagedFields, Read};
use crate::snapshot::Contents;

/// The objects a move creates, as read from the source after pausing it: without managedFields,
/// which are kept apart as the server's JSON text (by UID) and written back after each create;
/// the content of those read as text apart too (then the object holds the metadata).
#[derive(Default)]
pub struct Fresh {
    pub objects: HashMap<String, Arc<DynamicObject>>,
    pub managed_fields: ManagedFields,
    pub contents: Contents,
}

impl Fresh {
    /// What was read once paused, by UID, of the objects `keep` holds.
    pub fn of(read: Read, keep: impl Fn(&str) -> bool) -> Fresh {
        let objects: HashMap<String, Arc<DynamicObject>> = read
            .objects
            .into_iter()
            .map(|(o, _)| (o.metadata.uid.clone().unwrap_or_default(), o))
            .filter(|(uid, _)| keep(uid))
            .collect();
        let (mut managed_fields, mut contents) = (read.managed_fields, read.contents);
        managed_fields.retain(|uid, _| objects.contains_key(uid));
        contents.retain(|uid, _| objects.contains_key(uid));
        Fresh {
            objects,
            managed_fields,
            contents,
        }
    }

    /// The object with this UID as read (its metadata and, where read as text, its content).
    pub fn get(&self, uid: &str) -> Option<(&Arc<DynamicObject>, Option<&RawValue>)> {
        let object = self.objects.get(uid)?;
        Some((object, self.contents.get(uid).map(|c| &**c)))
    }

    /// [`get`](Self::get), taking the object out: what was sent need not be held.
    pub(super) fn take(
        &mut self,
        uid: &str,
    ) -> Option<(Arc<DynamicObject>, Option<Box<RawValue>>)> {
        let object = self.objects.remove(uid)?;
        Some((object, self.contents.remove(uid)))
    }
}
