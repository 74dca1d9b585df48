//! The sandbox's own Cluster API CRD set: names, scopes, versions, subresources and labels as a
//! clusterctl-installed management cluster carries them, with schemas that keep unknown fields.
//! Two flavours: CAPI ≥ 1.11 (v1beta2 storage, v1beta1 still served and deprecated) and
//! CAPI ≤ 1.10 (v1beta1 only).

use serde_json::{Value, json};

use crate::apiserver::server::ApiServer;

/// Which Cluster API release line the CRDs imitate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Dialect {
    /// CAPI ≥ 1.11: v1beta2 is the storage version, v1beta1 is still served.
    V1beta2,
    /// CAPI ≤ 1.10: v1beta1 only.
    V1beta1,
    /// No Cluster API CRDs at all.
    None,
}

impl Dialect {
    pub fn describe(self) -> &'static str {
        match self {
            Dialect::V1beta2 => "Cluster API v1.11+ (v1beta2)",
            Dialect::V1beta1 => "Cluster API v1.10 (v1beta1)",
            Dialect::None => "no Cluster API",
        }
    }
}

/// One kind of the set.
pub struct Kind {
    pub group: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub short_names: &'static [&'static str],
    /// clusterctl provider that installs it (`cluster.x-k8s.io/provider` label).
    pub provider: &'static str,
    pub status: bool,
    /// Has a scale subresource (with `.status.selector`).
    pub scale: bool,
    pub namespaced: bool,
}

const fn k(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    short_names: &'static [&'static str],
    provider: &'static str,
    status: bool,
    scale: bool,
) -> Kind {
    Kind {
        group,
        kind,
        plural,
        short_names,
        provider,
        status,
        scale,
        namespaced: true,
    }
}

const CORE: &str = "cluster.x-k8s.io";
const ADDONS: &str = "addons.cluster.x-k8s.io";
const CONTROL_PLANE: &str = "controlplane.cluster.x-k8s.io";
const BOOTSTRAP: &str = "bootstrap.cluster.x-k8s.io";
const INFRA: &str = "infrastructure.cluster.x-k8s.io";
const IPAM: &str = "ipam.cluster.x-k8s.io";
const RUNTIME: &str = "runtime.cluster.x-k8s.io";

pub const KINDS: &[Kind] = &[
    k(
        CORE,
        "Cluster",
        "clusters",
        &["cl"],
        "cluster-api",
        true,
        false,
    ),
    k(
        CORE,
        "ClusterClass",
        "clusterclasses",
        &["cc"],
        "cluster-api",
        true,
        false,
    ),
    k(
        CORE,
        "Machine",
        "machines",
        &["ma"],
        "cluster-api",
        true,
        false,
    ),
    k(
        CORE,
        "MachineSet",
        "machinesets",
        &["ms"],
        "cluster-api",
        true,
        true,
    ),
    k(
        CORE,
        "MachineDeployment",
        "machinedeployments",
        &["md"],
        "cluster-api",
        true,
        true,
    ),
    k(
        CORE,
        "MachinePool",
        "machinepools",
        &["mp"],
        "cluster-api",
        true,
        true,
    ),
    k(
        CORE,
        "MachineHealthCheck",
        "machinehealthchecks",
        &["mhc", "mhcs"],
        "cluster-api",
        true,
        false,
    ),
    k(
        CORE,
        "MachineDrainRule",
        "machinedrainrules",
        &[],
        "cluster-api",
        false,
        false,
    ),
    k(
        ADDONS,
        "ClusterResourceSet",
        "clusterresourcesets",
        &["crs"],
        "cluster-api",
        true,
        false,
    ),
    k(
        ADDONS,
        "ClusterResourceSetBinding",
        "clusterresourcesetbindings",
        &["crsb"],
        "cluster-api",
        false,
        false,
    ),
    k(
        CONTROL_PLANE,
        "KubeadmControlPlane",
        "kubeadmcontrolplanes",
        &["kcp"],
        "control-plane-kubeadm",
        true,
        true,
    ),
    k(
        CONTROL_PLANE,
        "KubeadmControlPlaneTemplate",
        "kubeadmcontrolplanetemplates",
        &[],
        "control-plane-kubeadm",
        false,
        false,
    ),
    k(
        BOOTSTRAP,
        "KubeadmConfig",
        "kubeadmconfigs",
        &[],
        "bootstrap-kubeadm",
        true,
        false,
    ),
    k(
        BOOTSTRAP,
        "KubeadmConfigTemplate",
        "kubeadmconfigtemplates",
        &[],
        "bootstrap-kubeadm",
        false,
        false,
    ),
    k(
        INFRA,
        "DockerCluster",
        "dockerclusters",
        &[],
        "infrastructure-docker",
        true,
        false,
    ),
    k(
        INFRA,
        "DockerClusterTemplate",
        "dockerclustertemplates",
        &[],
        "infrastructure-docker",
        false,
        false,
    ),
    k(
        INFRA,
        "DockerMachine",
        "dockermachines",
        &[],
        "infrastructure-docker",
        true,
        false,
    ),
    k(
        INFRA,
        "DockerMachineTemplate",
        "dockermachinetemplates",
        &[],
        "infrastructure-docker",
        false,
        false,
    ),
    k(
        INFRA,
        "DockerMachinePool",
        "dockermachinepools",
        &[],
        "infrastructure-docker",
        true,
        false,
    ),
    k(
        INFRA,
        "DockerMachinePoolTemplate",
        "dockermachinepooltemplates",
        &[],
        "infrastructure-docker",
        false,
        false,
    ),
    // The core provider's IPAM contract and runtime extensions: nothing here uses them, but a
    // real management cluster serves them.
    k(
        IPAM,
        "IPAddress",
        "ipaddresses",
        &[],
        "cluster-api",
        false,
        false,
    ),
    k(
        IPAM,
        "IPAddressClaim",
        "ipaddressclaims",
        &[],
        "cluster-api",
        true,
        false,
    ),
    Kind {
        namespaced: false,
        ..k(
            RUNTIME,
            "ExtensionConfig",
            "extensionconfigs",
            &["ext"],
            "cluster-api",
            true,
            false,
        )
    },
];

fn version(name: &str, storage: bool, kind: &Kind, deprecated: bool) -> Value {
    let mut v = json!({
        "name": name,
        "served": true,
        "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
    });
    let mut subresources = json!({});
    if kind.status {
        subresources["status"] = json!({});
    }
    if kind.scale {
        subresources["scale"] = json!({"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"});
    }
    if subresources.as_object().is_some_and(|m| !m.is_empty()) {
        v["subresources"] = subresources;
    }
    if deprecated {
        v["deprecated"] = json!(true);
        v["deprecationWarning"] = json!(format!(
            "{}/{name} {} is deprecated; use {}/v1beta2 {}",
            kind.group, kind.kind, kind.group, kind.kind
        ));
    }
    v
}

/// The CRD of one kind in one flavour.
pub fn crd(kind: &Kind, dialect: Dialect) -> Value {
    let (versions, contract_labels) = match dialect {
        Dialect::V1beta2 => (
            vec![
                version("v1beta2", true, kind, false),
                version("v1beta1", false, kind, true),
            ],
            json!({"cluster.x-k8s.io/v1beta2": "v1beta2", "cluster.x-k8s.io/v1beta1": "v1beta1"}),
        ),
        _ => (
            vec![version("v1beta1", true, kind, false)],
            json!({"cluster.x-k8s.io/v1beta1": "v1beta1"}),
        ),
    };
    let mut labels = contract_labels;
    labels["clusterctl.cluster.x-k8s.io"] = json!("");
    labels["cluster.x-k8s.io/provider"] = json!(kind.provider);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", kind.plural, kind.group), "labels": labels},
        "spec": {
            "group": kind.group,
            "scope": if kind.namespaced { "Namespaced" } else { "Cluster" },
            "names": {
                "plural": kind.plural,
                "singular": kind.kind.to_lowercase(),
                "kind": kind.kind,
                "listKind": format!("{}List", kind.kind),
                "shortNames": kind.short_names,
                "categories": ["cluster-api"],
            },
            "versions": versions,
        }
    })
}

/// clusterctl's own inventory CRD. It carries `clusterctl.cluster.x-k8s.io/core: inventory` and
/// not the `clusterctl.cluster.x-k8s.io` label, so a move never picks providers up.
pub fn provider_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "providers.clusterctl.cluster.x-k8s.io", "labels": {"clusterctl.cluster.x-k8s.io/core": "inventory"}},
        "spec": {
            "group": "clusterctl.cluster.x-k8s.io",
            "scope": "Namespaced",
            "names": {"plural": "providers", "singular": "provider", "kind": "Provider", "listKind": "ProviderList", "categories": ["cluster-api"]},
            "versions": [{"name": "v1alpha3", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        }
    })
}

/// Every CRD of a flavour (empty for [`Dialect::None`]).
pub fn all(dialect: Dialect) -> Vec<Value> {
    if dialect == Dialect::None {
        return Vec::new();
    }
    let mut out: Vec<Value> = KINDS.iter().map(|k| crd(k, dialect)).collect();
    out.push(provider_crd());
    out
}

/// clusterctl's inventory of a management cluster: (provider name, type, namespace).
pub const PROVIDERS: &[(&str, &str, &str)] = &[
    ("cluster-api", "CoreProvider", "capi-system"),
    (
        "kubeadm",
        "BootstrapProvider",
        "capi-kubeadm-bootstrap-system",
    ),
    (
        "kubeadm",
        "ControlPlaneProvider",
        "capi-kubeadm-control-plane-system",
    ),
    ("docker", "InfrastructureProvider", "capd-system"),
];

/// The Cluster API release a flavour imitates.
pub fn release(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::V1beta1 => "v1.10.6",
        _ => "v1.14.0",
    }
}

/// The `Provider` objects `clusterctl init` leaves behind, with their namespaces.
pub fn inventory(dialect: Dialect, version: &str) -> Vec<Value> {
    if dialect == Dialect::None {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, type_, namespace) in PROVIDERS {
        out.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}));
        let prefix = match *type_ {
            "CoreProvider" => "",
            "BootstrapProvider" => "bootstrap-",
            "ControlPlaneProvider" => "control-plane-",
            _ => "infrastructure-",
        };
        out.push(json!({
            "apiVersion": "clusterctl.cluster.x-k8s.io/v1alpha3",
            "kind": "Provider",
            "metadata": {"name": format!("{prefix}{name}"), "namespace": namespace,
                "labels": {"clusterctl.cluster.x-k8s.io": "", "cluster.x-k8s.io/provider": format!("{prefix}{name}")}},
            "providerName": name,
            "type": type_,
            "version": version,
        }));
    }
    out
}

/// Installs a flavour's CRDs and clusterctl's provider inventory.
pub fn install_with_inventory(server: &ApiServer, dialect: Dialect) -> anyhow::Result<()> {
    install(server, dialect)?;
    for object in inventory(dialect, release(dialect)) {
        server.load(object)?;
    }
    Ok(())
}

/// Installs a flavour's CRDs into a server (through its create path, like `kubectl apply`).
pub fn install(server: &ApiServer, dialect: Dialect) -> anyhow::Result<()> {
    for crd in all(dialect) {
        server.load(crd)?;
    }
    Ok(())
}
