//! Object storage of one server: one global resourceVersion counter, the watch history, the uid
//! index the garbage collector uses, and the resource registry derived from CRDs.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::resources::{self, Flavor, ResKey, ResourceDef};

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub type ObjKey = (String, String);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as watchers see it. Objects are stored at their storage version.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub res: ResKey,
    pub namespace: String,
    pub kind: EventType,
    pub object: Arc<Value>,
    pub previous: Option<Arc<Value>>,
}

pub struct State {
    pub rv: u64,
    registry: BTreeMap<ResKey, Arc<ResourceDef>>,
    objects: HashMap<ResKey, BTreeMap<ObjKey, Arc<Value>>>,
    uids: HashMap<String, (ResKey, ObjKey)>,
    history: VecDeque<Arc<Event>>,
    history_limit: usize,
    /// Watches must start after this resourceVersion; older ones answer 410 Expired.
    pub compacted_rv: u64,
    events: broadcast::Sender<Arc<Event>>,
    /// owner uid → objects whose ownerReferences name it.
    dependents: HashMap<String, std::collections::BTreeSet<(ResKey, ObjKey)>>,
    /// Objects the garbage collector must look at.
    pub gc_candidates: Vec<(ResKey, ObjKey)>,
}

pub fn owner_uids(object: &Value) -> Vec<String> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str().map(str::to_string))
        .collect()
}

pub fn rv_of(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

pub fn uid_of(object: &Value) -> &str {
    object["metadata"]["uid"].as_str().unwrap_or_default()
}

impl State {
    pub fn new(events: broadcast::Sender<Arc<Event>>, history_limit: usize) -> Self {
        let mut state = State {
            // A fresh real cluster is already a few hundred writes in; start there so that
            // small resourceVersions ("1") are too old, as on a real server.
            rv: 100,
            registry: BTreeMap::new(),
            objects: HashMap::new(),
            uids: HashMap::new(),
            history: VecDeque::new(),
            history_limit,
            compacted_rv: 100,
            events,
            dependents: HashMap::new(),
            gc_candidates: Vec::new(),
        };
        for def in super::builtin_kinds::all() {
            state.registry.insert(def.key(), def);
        }
        state
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.events.subscribe()
    }

    pub fn resources(&self) -> impl Iterator<Item = &Arc<ResourceDef>> {
        self.registry.values()
    }

    pub fn resource(&self, key: &ResKey) -> Option<&Arc<ResourceDef>> {
        self.registry.get(key)
    }

    /// The resource served at `group`/`version` under `plural`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        self.registry
            .get(&(group.to_string(), plural.to_string()))
            .filter(|def| def.version(version).is_some())
            .cloned()
    }

    pub fn get(&self, res: &ResKey, key: &ObjKey) -> Option<Arc<Value>> {
        self.objects.get(res).and_then(|m| m.get(key)).cloned()
    }

    pub fn count(&self) -> usize {
        self.objects.values().map(|m| m.len()).sum()
    }

    /// Objects of a resource in key order, optionally within one namespace.
    pub fn list(&self, res: &ResKey, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let Some(map) = self.objects.get(res) else {
            return Vec::new();
        };
        match namespace {
            Some(ns) => map
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, v)| v.clone())
                .collect(),
            None => map.values().cloned().collect(),
        }
    }

    /// Objects after `start` (exclusive) in key order, for paginated lists.
    pub fn list_after(
        &self,
        res: &ResKey,
        namespace: Option<&str>,
        start: &ObjKey,
    ) -> Vec<Arc<Value>> {
        let Some(map) = self.objects.get(res) else {
            return Vec::new();
        };
        map.range((
            std::ops::Bound::Excluded(start.clone()),
            std::ops::Bound::Unbounded,
        ))
        .take_while(|((n, _), _)| namespace.is_none_or(|ns| ns == n))
        .map(|(_, v)| v.clone())
        .collect()
    }

    pub fn by_uid(&self, uid: &str) -> Option<(ResKey, ObjKey)> {
        self.uids.get(uid).cloned()
    }

    pub fn all_objects(&self) -> Vec<(ResKey, Arc<Value>)> {
        let mut out = Vec::new();
        for (res, map) in &self.objects {
            for v in map.values() {
                out.push((res.clone(), v.clone()));
            }
        }
        out.sort_by(|a, b| (&a.0, rv_of(&a.1)).cmp(&(&b.0, rv_of(&b.1))));
        out
    }

    fn record(&mut self, event: Event) {
        let event = Arc::new(event);
        self.history.push_back(event.clone());
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.compacted_rv = old.rv;
            }
        }
        // Nobody listening is fine.
        let _ = self.events.send(event);
    }

    /// Events after `rv` (exclusive), or `None` when `rv` is older than the history holds.
    pub fn events_since(&self, rv: u64) -> Option<Vec<Arc<Event>>> {
        if rv < self.compacted_rv {
            return None;
        }
        let start = self.history.partition_point(|e| e.rv <= rv);
        Some(self.history.range(start..).cloned().collect())
    }

    /// Forgets the watch history up to now, as an etcd compaction does.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted_rv = self.rv;
    }

    /// Stores `object` (created or changed) with the next resourceVersion.
    pub fn put(&mut self, res: &ResKey, mut object: Value) -> Arc<Value> {
        self.rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let key = (namespace.clone(), name);
        let object = Arc::new(object);
        let previous = self
            .objects
            .entry(res.clone())
            .or_default()
            .insert(key.clone(), object.clone());
        self.uids
            .insert(uid_of(&object).to_string(), (res.clone(), key.clone()));
        let new_owners = owner_uids(&object);
        let old_owners = previous.as_deref().map(owner_uids).unwrap_or_default();
        if new_owners != old_owners {
            for uid in &old_owners {
                if let Some(set) = self.dependents.get_mut(uid) {
                    set.remove(&(res.clone(), key.clone()));
                }
            }
            for uid in &new_owners {
                self.dependents
                    .entry(uid.clone())
                    .or_default()
                    .insert((res.clone(), key.clone()));
            }
            if !new_owners.is_empty() {
                self.gc_candidates.push((res.clone(), key.clone()));
            }
        }
        if object["metadata"].get("deletionTimestamp").is_some()
            && object["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| f.iter().any(|x| x == "orphan" || x == "foregroundDeletion"))
        {
            self.gc_candidates.push((res.clone(), key.clone()));
        }
        let kind = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.record(Event {
            rv: self.rv,
            res: res.clone(),
            namespace,
            kind,
            object: object.clone(),
            previous,
        });
        if res.0 == "apiextensions.k8s.io" {
            self.rebuild_registry();
        }
        object
    }

    /// Removes an object for good; the DELETED event carries a new resourceVersion.
    pub fn remove(&mut self, res: &ResKey, key: &ObjKey) -> Option<Arc<Value>> {
        self.remove_as(res, key, None)
    }

    /// Removes an object whose last state is `last` (the update that emptied its finalizers) or,
    /// without one, as stored; that state, at the removal's resourceVersion, is what the DELETED
    /// event carries and what is returned.
    pub fn remove_as(
        &mut self,
        res: &ResKey,
        key: &ObjKey,
        last: Option<Value>,
    ) -> Option<Arc<Value>> {
        let previous = self.objects.get_mut(res)?.remove(key)?;
        self.rv += 1;
        let uid = uid_of(&previous).to_string();
        self.uids.remove(&uid);
        for owner in owner_uids(&previous) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(&(res.clone(), key.clone()));
            }
            // A foreground-deleting owner may now be free to go.
            if let Some(found) = self.uids.get(&owner) {
                self.gc_candidates.push(found.clone());
            }
        }
        if let Some(dependents) = self.dependents.remove(&uid) {
            self.gc_candidates.extend(dependents);
        }
        let mut last = last.unwrap_or_else(|| (*previous).clone());
        last["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let last = Arc::new(last);
        self.record(Event {
            rv: self.rv,
            res: res.clone(),
            namespace: key.0.clone(),
            kind: EventType::Deleted,
            object: last.clone(),
            previous: Some(previous),
        });
        if res.0 == "apiextensions.k8s.io" {
            self.rebuild_registry();
        }
        Some(last)
    }

    /// CRDs that are Established become served resources; removed ones stop being served.
    fn rebuild_registry(&mut self) {
        let mut registry: BTreeMap<ResKey, Arc<ResourceDef>> = super::builtin_kinds::all()
            .into_iter()
            .map(|d| (d.key(), d))
            .collect();
        let crd_key = (
            "apiextensions.k8s.io".to_string(),
            "customresourcedefinitions".to_string(),
        );
        for crd in self
            .objects
            .get(&crd_key)
            .into_iter()
            .flat_map(|m| m.values())
        {
            let established = crd["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Established" && c["status"] == "True");
            if !established {
                continue;
            }
            if let Some(def) = resources::from_crd(crd) {
                registry.entry(def.key()).or_insert_with(|| Arc::new(def));
            }
        }
        self.registry = registry;
    }

    /// Drops every object of a resource (its CRD was deleted).
    pub fn drop_resource(&mut self, res: &ResKey) {
        let keys: Vec<ObjKey> = self
            .objects
            .get(res)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for key in keys {
            self.remove(res, &key);
        }
    }

    /// Keys of every namespaced object in `namespace`.
    pub fn namespace_contents(&self, namespace: &str) -> Vec<(ResKey, ObjKey)> {
        let mut out = Vec::new();
        for (res, map) in &self.objects {
            if self.registry.get(res).is_some_and(|d| d.namespaced) {
                for key in map
                    .range((namespace.to_string(), String::new())..)
                    .take_while(|((n, _), _)| n == namespace)
                    .map(|(k, _)| k)
                {
                    out.push((res.clone(), key.clone()));
                }
            }
        }
        out
    }

    /// Objects whose ownerReferences name `uid`.
    pub fn dependents_of(&self, uid: &str) -> Vec<(ResKey, ObjKey)> {
        self.dependents
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub fn is_flavor(&self, res: &ResKey, flavor: Flavor) -> bool {
        self.registry.get(res).is_some_and(|d| d.flavor == flavor)
    }
}
