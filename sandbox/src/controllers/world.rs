//! What the controllers see and do: a snapshot of every kind they care about (one LIST each,
//! through the API like a real controller's informers) and the writes a pass decided on.

use std::collections::HashMap;

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;

use super::cloud::{Cloud, CloudMachine};
use super::shape::Shape;

pub struct KindDef {
    pub kind: &'static str,
    pub group: &'static str,
    pub plural: &'static str,
}

const fn kind(kind: &'static str, group: &'static str, plural: &'static str) -> KindDef {
    KindDef {
        kind,
        group,
        plural,
    }
}

pub const KINDS: &[KindDef] = &[
    kind("Cluster", "cluster.x-k8s.io", "clusters"),
    kind("ClusterClass", "cluster.x-k8s.io", "clusterclasses"),
    kind("Machine", "cluster.x-k8s.io", "machines"),
    kind("MachineSet", "cluster.x-k8s.io", "machinesets"),
    kind(
        "MachineDeployment",
        "cluster.x-k8s.io",
        "machinedeployments",
    ),
    kind("MachinePool", "cluster.x-k8s.io", "machinepools"),
    kind(
        "MachineHealthCheck",
        "cluster.x-k8s.io",
        "machinehealthchecks",
    ),
    kind(
        "KubeadmControlPlane",
        "controlplane.cluster.x-k8s.io",
        "kubeadmcontrolplanes",
    ),
    kind(
        "KubeadmConfig",
        "bootstrap.cluster.x-k8s.io",
        "kubeadmconfigs",
    ),
    kind(
        "KubeadmConfigTemplate",
        "bootstrap.cluster.x-k8s.io",
        "kubeadmconfigtemplates",
    ),
    kind(
        "DockerCluster",
        "infrastructure.cluster.x-k8s.io",
        "dockerclusters",
    ),
    kind(
        "DockerMachine",
        "infrastructure.cluster.x-k8s.io",
        "dockermachines",
    ),
    kind(
        "DockerMachineTemplate",
        "infrastructure.cluster.x-k8s.io",
        "dockermachinetemplates",
    ),
    kind(
        "DockerMachinePool",
        "infrastructure.cluster.x-k8s.io",
        "dockermachinepools",
    ),
    kind("Secret", "", "secrets"),
];

pub fn def(kind: &str) -> &'static KindDef {
    KINDS
        .iter()
        .find(|k| k.kind == kind)
        .unwrap_or_else(|| panic!("unknown kind {kind}"))
}

/// The API resource of a kind in the dialect of `shape`.
pub(super) fn resource(def: &KindDef, shape: Shape) -> ApiResource {
    let version = if def.group.is_empty() {
        "v1"
    } else {
        shape.version()
    };
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(def.group, version, def.kind),
        def.plural,
    )
}

pub fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}
pub fn namespace(object: &Value) -> &str {
    object["metadata"]["namespace"].as_str().unwrap_or_default()
}
pub fn uid(object: &Value) -> &str {
    object["metadata"]["uid"].as_str().unwrap_or_default()
}
pub fn deleting(object: &Value) -> bool {
    object["metadata"]
        .get("deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}
pub fn annotated(object: &Value, key: &str) -> bool {
    object["metadata"]["annotations"].get(key).is_some()
}
pub fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    object["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}
pub fn controller_uid(object: &Value) -> Option<&str> {
    object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
        .and_then(|r| r["uid"].as_str())
}

/// An owner reference to `owner` as a controller.
pub fn controller_ref(owner: &Value) -> Value {
    serde_json::json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true,
    })
}

#[derive(Default)]
pub struct World {
    by_kind: HashMap<&'static str, Vec<Value>>,
}

impl World {
    pub async fn load(client: &kube::Client, shape: Shape) -> Result<World, kube::Error> {
        let mut world = World::default();
        for def in KINDS {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource(def, shape));
            let list = api.list(&ListParams::default()).await?;
            let items = list
                .items
                .into_iter()
                .map(|mut o| {
                    if o.types.is_none() {
                        o.types = Some(kube::core::TypeMeta {
                            api_version: resource(def, shape).api_version,
                            kind: def.kind.to_string(),
                        });
                    }
                    serde_json::to_value(o).expect("object serialises")
                })
                .collect();
            world.by_kind.insert(def.kind, items);
        }
        Ok(world)
    }

    /// For tests of the pure reconcilers.
    pub fn from_objects(objects: Vec<Value>) -> World {
        let mut world = World::default();
        for object in objects {
            let kind = def(object["kind"].as_str().unwrap_or_default()).kind;
            world.by_kind.entry(kind).or_default().push(object);
        }
        world
    }

    pub fn all(&self, kind: &str) -> &[Value] {
        self.by_kind
            .get(def(kind).kind)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    pub fn get(&self, kind: &str, namespace_: &str, name_: &str) -> Option<&Value> {
        self.all(kind)
            .iter()
            .find(|o| namespace(o) == namespace_ && name(o) == name_)
    }

    /// Objects of `kind` whose controller is `owner_uid`.
    pub fn controlled_by<'a>(
        &'a self,
        kind: &str,
        owner_uid: &'a str,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.all(kind)
            .iter()
            .filter(move |o| controller_uid(o) == Some(owner_uid))
    }

    /// The Cluster an object belongs to (`spec.clusterName`, else the cluster-name label).
    pub fn cluster_of(&self, object: &Value) -> Option<&Value> {
        let name_ = object["spec"]["clusterName"]
            .as_str()
            .or_else(|| object["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"].as_str())?;
        self.get("Cluster", namespace(object), name_)
    }
}

/// One write a reconcile pass decided on.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    Create {
        kind: &'static str,
        object: Value,
    },
    /// JSON merge patch of the main resource.
    Patch {
        kind: &'static str,
        namespace: String,
        name: String,
        patch: Value,
    },
    /// JSON merge patch of the status subresource.
    Status {
        kind: &'static str,
        namespace: String,
        name: String,
        patch: Value,
    },
    Delete {
        kind: &'static str,
        namespace: String,
        name: String,
    },
    CloudCreateMachine {
        provider_id: String,
        machine: CloudMachine,
    },
    CloudDeleteMachine {
        provider_id: String,
    },
    CloudCreateLoadBalancer {
        key: String,
    },
    CloudDeleteLoadBalancer {
        key: String,
    },
    CloudSetHealth {
        namespace: String,
        name: String,
        healthy: bool,
    },
}

impl Write {
    pub fn patch(kind: &str, object: &Value, patch: Value) -> Write {
        Write::Patch {
            kind: def(kind).kind,
            namespace: namespace(object).into(),
            name: name(object).into(),
            patch,
        }
    }
    pub fn status(kind: &str, object: &Value, patch: Value) -> Write {
        Write::Status {
            kind: def(kind).kind,
            namespace: namespace(object).into(),
            name: name(object).into(),
            patch,
        }
    }
    pub fn delete(kind: &str, object: &Value) -> Write {
        Write::Delete {
            kind: def(kind).kind,
            namespace: namespace(object).into(),
            name: name(object).into(),
        }
    }
    pub fn create(kind: &str, object: Value) -> Write {
        Write::Create {
            kind: def(kind).kind,
            object,
        }
    }

    /// Applies the write; conflicts and vanished objects are left to the next pass.
    pub async fn apply(
        &self,
        client: &kube::Client,
        shape: Shape,
        cloud: &Cloud,
    ) -> Result<(), kube::Error> {
        let api = |kind: &str, ns: &str| -> Api<DynamicObject> {
            Api::namespaced_with(client.clone(), ns, &resource(def(kind), shape))
        };
        let params = PatchParams::default();
        let result = match self {
            Write::Create { kind, object } => {
                let ns = namespace(object).to_string();
                let dynamic: DynamicObject =
                    serde_json::from_value(object.clone()).expect("valid object");
                api(kind, &ns)
                    .create(&PostParams::default(), &dynamic)
                    .await
                    .map(|_| ())
            }
            Write::Patch {
                kind,
                namespace,
                name,
                patch,
            } => api(kind, namespace)
                .patch(name, &params, &Patch::Merge(patch))
                .await
                .map(|_| ()),
            Write::Status {
                kind,
                namespace,
                name,
                patch,
            } => api(kind, namespace)
                .patch_status(name, &params, &Patch::Merge(patch))
                .await
                .map(|_| ()),
            Write::Delete {
                kind,
                namespace,
                name,
            } => api(kind, namespace)
                .delete(name, &DeleteParams::default())
                .await
                .map(|_| ()),
            Write::CloudCreateMachine {
                provider_id,
                machine,
            } => {
                cloud.create_machine(provider_id, machine.clone());
                Ok(())
            }
            Write::CloudDeleteMachine { provider_id } => {
                cloud.delete_machine(provider_id);
                Ok(())
            }
            Write::CloudCreateLoadBalancer { key } => {
                cloud.create_load_balancer(key);
                Ok(())
            }
            Write::CloudDeleteLoadBalancer { key } => {
                cloud.delete_load_balancer(key);
                Ok(())
            }
            Write::CloudSetHealth {
                namespace,
                name,
                healthy,
            } => {
                cloud.set_healthy(namespace, name, *healthy);
                Ok(())
            }
        };

        match result {
            Err(kube::Error::Api(status)) if [404, 409, 422].contains(&status.code) => Ok(()),
            other => other,
        }
    }
}
