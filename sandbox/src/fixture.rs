//! Provisioned workload clusters and other Cluster API objects as fixtures: objects whose owners
//! are named by kind and name, resolved to the UIDs a server gives them when loaded. One builder
//! for the plugin's move tests and the move benchmark.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::apiserver::server::ApiServer;

pub const CORE: &str = "cluster.x-k8s.io/v1beta2";
pub const INFRA: &str = "infrastructure.cluster.x-k8s.io/v1beta2";
pub const BOOTSTRAP: &str = "bootstrap.cluster.x-k8s.io/v1beta2";
pub const CONTROL_PLANE: &str = "controlplane.cluster.x-k8s.io/v1beta2";
pub const MOVE_HIERARCHY_LABEL: &str = "clusterctl.cluster.x-k8s.io/move-hierarchy";

/// Owners named by `(kind, name, controller)`, resolved to UIDs on load.
pub type Owners = Vec<(String, String, bool)>;

/// Objects to load into the source, with their owners.
#[derive(Default)]
pub struct Fixture {
    pub objects: Vec<(Value, Owners)>,
    pub crds: Vec<Value>,
}

impl Fixture {
    pub fn add(
        &mut self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
        owners: &[(&str, &str, bool)],
        extra: Value,
    ) -> &mut Fixture {
        let mut object =
            json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
        if !ns.is_empty() {
            object["metadata"]["namespace"] = json!(ns);
        }
        merge(&mut object, extra);
        let owners = owners
            .iter()
            .map(|(k, n, c)| (k.to_string(), n.to_string(), *c))
            .collect();
        self.objects.push((object, owners));
        self
    }

    /// A Secret `<cluster>-<suffix>` owned by the Cluster's KubeadmControlPlane.
    pub fn control_plane_secret(&mut self, ns: &str, cluster: &str, suffix: &str) -> &mut Fixture {
        let name = format!("{cluster}-{suffix}");
        self.owned(
            "v1",
            "Secret",
            ns,
            &name,
            ("KubeadmControlPlane", cluster, true),
        )
    }

    /// An object with one owner and nothing else to say.
    pub fn owned(
        &mut self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
        owner: (&str, &str, bool),
    ) -> &mut Fixture {
        self.add(api_version, kind, ns, name, &[owner], json!({}))
    }

    /// A provisioned Cluster, its DockerCluster, `<name>-ca` (no owner: soft-owned) and
    /// `<name>-kubeconfig`; with a control plane also the KubeadmControlPlane (controller-owned by
    /// the Cluster), its machine template, and `-kubeconfig`/`-sa` owned by the control plane.
    pub fn cluster(&mut self, ns: &str, name: &str, control_plane: bool) -> &mut Fixture {
        let mut spec = json!({"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerCluster", "name": name}});
        if control_plane {
            spec["controlPlaneRef"] = json!({"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": name});
        }
        self.add(CORE, "Cluster", ns, name, &[], json!({"spec": spec, "status": {
            "initialization": {"infrastructureProvisioned": true, "controlPlaneInitialized": true},
            "conditions": [{"type": "ControlPlaneInitialized", "status": "True", "reason": "Initialized", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}));
        self.owned(INFRA, "DockerCluster", ns, name, ("Cluster", name, false));
        self.add("v1", "Secret", ns, &format!("{name}-ca"), &[], json!({}));
        if control_plane {
            self.owned(
                CONTROL_PLANE,
                "KubeadmControlPlane",
                ns,
                name,
                ("Cluster", name, true),
            );
            self.owned(
                INFRA,
                "DockerMachineTemplate",
                ns,
                &format!("{name}-cp"),
                ("Cluster", name, false),
            );
            for secret in ["kubeconfig", "sa"] {
                self.control_plane_secret(ns, name, secret);
            }
        } else {
            self.owned(
                "v1",
                "Secret",
                ns,
                &format!("{name}-kubeconfig"),
                ("Cluster", name, false),
            );
        }
        self
    }

    /// A Machine with a node, its DockerMachine and (unless static) KubeadmConfig and bootstrap
    /// data Secret.
    pub fn machine(
        &mut self,
        ns: &str,
        cluster: &str,
        name: &str,
        owner: (&str, &str, bool),
        bootstrap: bool,
    ) -> &mut Fixture {
        let bootstrap_spec = if bootstrap {
            json!({"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": name}})
        } else {
            json!({"dataSecretName": format!("{name}-static")})
        };
        self.add(CORE, "Machine", ns, name, &[owner], json!({
            "metadata": {"labels": {"cluster.x-k8s.io/cluster-name": cluster}},
            "spec": {"clusterName": cluster, "bootstrap": bootstrap_spec,
                "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine", "name": name}},
            "status": {"nodeRef": {"name": name}}}));
        self.owned(INFRA, "DockerMachine", ns, name, ("Machine", name, true));
        if bootstrap {
            self.owned(
                BOOTSTRAP,
                "KubeadmConfig",
                ns,
                name,
                ("Machine", name, true),
            );
            self.owned("v1", "Secret", ns, name, ("KubeadmConfig", name, true));
        }
        self
    }

    /// Machine templates owned by the Cluster, as MachineSets, MachineDeployments and pools use.
    pub fn templates(
        &mut self,
        ns: &str,
        cluster: &str,
        name: &str,
        bootstrap: bool,
    ) -> &mut Fixture {
        self.owned(
            INFRA,
            "DockerMachineTemplate",
            ns,
            name,
            ("Cluster", cluster, false),
        );
        if bootstrap {
            self.owned(
                BOOTSTRAP,
                "KubeadmConfigTemplate",
                ns,
                name,
                ("Cluster", cluster, false),
            );
        }
        self
    }

    /// Cluster ns1/foo with a control-plane Machine cp1 and a MachineDeployment md1 (templates
    /// included) whose MachineSet md1-a owns a Machine per name in `workers`.
    pub fn workload(workers: &[&str]) -> Fixture {
        let mut f = Fixture::default();
        f.cluster("ns1", "foo", true).machine(
            "ns1",
            "foo",
            "cp1",
            ("KubeadmControlPlane", "foo", true),
            true,
        );
        f.machine_deployment("ns1", "foo", "md1", "md1-a");
        for m in workers {
            f.machine("ns1", "foo", m, ("MachineSet", "md1-a", true), true);
        }
        f
    }

    /// A global identity, `DockerClusterIdentity /identity1` (its CRD labelled move-hierarchy), with
    /// its credentials Secret in the provider's namespace.
    pub fn global_identity(&mut self, extra: Value) -> &mut Fixture {
        self.crd(
            "infrastructure.cluster.x-k8s.io",
            "DockerClusterIdentity",
            false,
            MOVE_HIERARCHY_LABEL,
        )
        .add(INFRA, "DockerClusterIdentity", "", "identity1", &[], extra)
        .add(
            "v1",
            "Secret",
            "capd-system",
            "identity1-credentials",
            &[("DockerClusterIdentity", "identity1", false)],
            json!({}),
        )
    }

    pub fn crd(&mut self, group: &str, kind: &str, namespaced: bool, label: &str) -> &mut Fixture {
        let plural = format!("{}s", kind.to_lowercase());
        self.crds.push(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}"),
                "labels": {"clusterctl.cluster.x-k8s.io": "", label: "", "cluster.x-k8s.io/provider": "infrastructure-docker"}},
            "spec": {"group": group, "scope": if namespaced { "Namespaced" } else { "Cluster" },
                "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
                "versions": [{"name": "v1beta2", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        }));
        self
    }
}

pub fn merge(into: &mut Value, extra: Value) {
    match (into, extra) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

pub fn key(o: &Value) -> String {
    format!(
        "{} {}/{}",
        o["kind"].as_str().unwrap(),
        o["metadata"]["namespace"].as_str().unwrap_or(""),
        o["metadata"]["name"].as_str().unwrap()
    )
}

impl Fixture {
    /// A MachineDeployment `md` of `cluster` (its templates owned by the Cluster) and its
    /// MachineSet `ms`.
    pub fn machine_deployment(
        &mut self,
        ns: &str,
        cluster: &str,
        md: &str,
        ms: &str,
    ) -> &mut Fixture {
        self.owned(
            CORE,
            "MachineDeployment",
            ns,
            md,
            ("Cluster", cluster, false),
        )
        .templates(ns, cluster, md, true)
        .add(
            CORE,
            "MachineSet",
            ns,
            ms,
            &[("MachineDeployment", md, true)],
            json!({}),
        )
    }

    /// A provisioned workload cluster as the benchmark moves it: the Cluster with a
    /// KubeadmControlPlane (its certificates and kubeconfig Secrets), one control-plane Machine,
    /// and a MachineDeployment whose MachineSet owns `workers` Machines.
    pub fn provisioned(&mut self, ns: &str, name: &str, workers: usize) -> &mut Fixture {
        self.cluster(ns, name, true);
        for secret in ["etcd", "proxy"] {
            self.control_plane_secret(ns, name, secret);
        }
        self.machine(
            ns,
            name,
            &format!("{name}-cp-0"),
            ("KubeadmControlPlane", name, true),
            true,
        );
        let md = format!("{name}-md");
        let ms = format!("{md}-a");
        self.machine_deployment(ns, name, &md, &ms);
        for worker in 0..workers {
            self.machine(
                ns,
                name,
                &format!("{ms}-{worker}"),
                ("MachineSet", &ms, true),
                true,
            );
        }
        self
    }

    /// Loads the fixture's CRDs into `servers`, and its objects in order into the first of them
    /// (creating their namespaces), owners resolved to the UIDs it gave them. Returns the
    /// loaded objects in load order.
    pub fn load(&self, servers: &[&ApiServer]) -> anyhow::Result<Vec<Value>> {
        for server in servers {
            for crd in &self.crds {
                server.load(crd.clone())?;
            }
        }
        let Some(server) = servers.first() else {
            return Ok(Vec::new());
        };
        let mut loaded: BTreeMap<String, Value> = BTreeMap::new();
        let mut namespaces = BTreeSet::new();
        let mut in_order = Vec::new();
        for (object, owners) in &self.objects {
            let mut object = object.clone();
            let ns = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if !ns.is_empty()
                && namespaces.insert(ns.clone())
                && server.object("", "namespaces", "", &ns).is_none()
            {
                server.load(
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                )?;
            }
            set_owners(&mut object, owners, |kind, name| {
                let owner = loaded
                    .get(&format!("{kind} {ns}/{name}"))
                    .or_else(|| loaded.get(&format!("{kind} /{name}")))
                    .ok_or_else(|| anyhow::anyhow!("owner {kind} {name} is loaded first"))?;
                Ok((
                    owner["apiVersion"].clone(),
                    owner["metadata"]["uid"].clone(),
                ))
            })?;
            let created = server.load(object)?;
            loaded.insert(key(&created), created.clone());
            in_order.push(created);
        }
        Ok(in_order)
    }

    /// The objects without a server, for pure tests: each UID is the readable key `Kind ns/name`.
    /// An owner that is not in the fixture (a dangling reference) still gets that UID, and the
    /// apiVersion of another object of its kind (`cluster.x-k8s.io` when there is none).
    pub fn resolved(&self) -> Vec<Value> {
        let mut objects: Vec<Value> = self.objects.iter().map(|(o, _)| o.clone()).collect();
        for object in &mut objects {
            object["metadata"]["uid"] = json!(key(object));
        }
        let known = objects.clone();
        for (object, (_, owners)) in objects.iter_mut().zip(&self.objects) {
            let ns = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let resolved: anyhow::Result<()> = set_owners(object, owners, |kind, name| {
                let named = |o: &&Value| {
                    o["kind"] == kind
                        && o["metadata"]["name"] == name
                        && [ns.as_str(), ""]
                            .contains(&o["metadata"]["namespace"].as_str().unwrap_or(""))
                };
                let same_kind = |o: &&Value| o["kind"] == kind;
                let api_version = known
                    .iter()
                    .find(same_kind)
                    .map_or(json!(CORE), |o| o["apiVersion"].clone());
                let uid = known.iter().find(named).map_or_else(
                    || json!(format!("{kind} {ns}/{name}")),
                    |o| o["metadata"]["uid"].clone(),
                );
                Ok((api_version, uid))
            });
            resolved.expect("resolving by name cannot fail");
        }
        objects
    }
}

/// Sets `metadata.ownerReferences` from owners named by kind and name; `resolve` gives each
/// owner's apiVersion and UID.
fn set_owners(
    object: &mut Value,
    owners: &Owners,
    mut resolve: impl FnMut(&str, &str) -> anyhow::Result<(Value, Value)>,
) -> anyhow::Result<()> {
    let mut refs = Vec::new();
    for (kind, name, controller) in owners {
        let (api_version, uid) = resolve(kind, name)?;
        refs.push(
            json!({"apiVersion": api_version, "kind": kind, "name": name,
            "uid": uid, "controller": controller, "blockOwnerDeletion": controller}),
        );
    }
    if !refs.is_empty() {
        object["metadata"]["ownerReferences"] = json!(refs);
    }
    Ok(())
}
