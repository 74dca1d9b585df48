//! The built-in API groups a real kube-apiserver (1.33 and later) serves next to the CRDs, as
//! data: discovery lists them in both forms, and their objects are stored as given (create, get,
//! list, watch, patch, delete work; no controller acts on them, no schema checks them).

use std::sync::Arc;

use super::resources::{ALL_VERBS, Flavor, ResourceDef, ScaleDef, VersionDef, builtin};

/// The built-in groups by kube-aggregator's priority (highest first; equal priorities by name),
/// the order discovery lists them in.
pub const GROUP_PRIORITY: &[&str] = &[
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "resource.k8s.io",
];

/// What a row can carry besides its names.
#[derive(Clone, Copy)]
enum Sub {
    /// No subresource.
    None,
    /// `/status`.
    Status,
    /// `/status` and `/scale` (`.spec.replicas`, `.status.replicas`, `.status.selector`).
    Scale,
}

/// `(group, versions (storage first), plural, kind, namespaced, short names, in category all,
/// subresources)`, in the order kube-apiserver lists its groups.
#[allow(clippy::type_complexity)]
#[rustfmt::skip]
const KINDS: &[(&str, &[&str], &str, &str, bool, &[&str], bool, Sub)] = &[
    ("", &["v1"], "bindings", "Binding", true, &[], false, Sub::None),
    ("", &["v1"], "componentstatuses", "ComponentStatus", false, &["cs"], false, Sub::None),
    ("", &["v1"], "endpoints", "Endpoints", true, &["ep"], false, Sub::None),
    ("", &["v1"], "events", "Event", true, &["ev"], false, Sub::None),
    ("", &["v1"], "limitranges", "LimitRange", true, &["limits"], false, Sub::None),
    ("", &["v1"], "nodes", "Node", false, &["no"], false, Sub::Status),
    ("", &["v1"], "persistentvolumeclaims", "PersistentVolumeClaim", true, &["pvc"], false, Sub::Status),
    ("", &["v1"], "persistentvolumes", "PersistentVolume", false, &["pv"], false, Sub::Status),
    ("", &["v1"], "pods", "Pod", true, &["po"], true, Sub::Status),
    ("", &["v1"], "podtemplates", "PodTemplate", true, &[], false, Sub::None),
    ("", &["v1"], "replicationcontrollers", "ReplicationController", true, &["rc"], true, Sub::Scale),
    ("", &["v1"], "resourcequotas", "ResourceQuota", true, &["quota"], false, Sub::Status),
    ("", &["v1"], "serviceaccounts", "ServiceAccount", true, &["sa"], false, Sub::None),
    ("", &["v1"], "services", "Service", true, &["svc"], true, Sub::Status),
    ("apiregistration.k8s.io", &["v1"], "apiservices", "APIService", false, &[], false, Sub::Status),
    ("apps", &["v1"], "controllerrevisions", "ControllerRevision", true, &[], false, Sub::None),
    ("apps", &["v1"], "daemonsets", "DaemonSet", true, &["ds"], true, Sub::Status),
    ("apps", &["v1"], "deployments", "Deployment", true, &["deploy"], true, Sub::Scale),
    ("apps", &["v1"], "replicasets", "ReplicaSet", true, &["rs"], true, Sub::Scale),
    ("apps", &["v1"], "statefulsets", "StatefulSet", true, &["sts"], true, Sub::Scale),
    ("events.k8s.io", &["v1"], "events", "Event", true, &["ev"], false, Sub::None),
    ("autoscaling", &["v2", "v1"], "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, &["hpa"], true, Sub::Status),
    ("batch", &["v1"], "cronjobs", "CronJob", true, &["cj"], true, Sub::Status),
    ("batch", &["v1"], "jobs", "Job", true, &[], true, Sub::Status),
    ("certificates.k8s.io", &["v1"], "certificatesigningrequests", "CertificateSigningRequest", false, &["csr"], false, Sub::Status),
    ("networking.k8s.io", &["v1"], "ingressclasses", "IngressClass", false, &[], false, Sub::None),
    ("networking.k8s.io", &["v1"], "ingresses", "Ingress", true, &["ing"], false, Sub::Status),
    ("networking.k8s.io", &["v1"], "ipaddresses", "IPAddress", false, &["ip"], false, Sub::None),
    ("networking.k8s.io", &["v1"], "networkpolicies", "NetworkPolicy", true, &["netpol"], false, Sub::None),
    ("networking.k8s.io", &["v1"], "servicecidrs", "ServiceCIDR", false, &[], false, Sub::Status),
    ("policy", &["v1"], "poddisruptionbudgets", "PodDisruptionBudget", true, &["pdb"], false, Sub::Status),
    ("rbac.authorization.k8s.io", &["v1"], "clusterrolebindings", "ClusterRoleBinding", false, &[], false, Sub::None),
    ("rbac.authorization.k8s.io", &["v1"], "clusterroles", "ClusterRole", false, &[], false, Sub::None),
    ("rbac.authorization.k8s.io", &["v1"], "rolebindings", "RoleBinding", true, &[], false, Sub::None),
    ("rbac.authorization.k8s.io", &["v1"], "roles", "Role", true, &[], false, Sub::None),
    ("storage.k8s.io", &["v1"], "csidrivers", "CSIDriver", false, &[], false, Sub::None),
    ("storage.k8s.io", &["v1"], "csinodes", "CSINode", false, &[], false, Sub::None),
    ("storage.k8s.io", &["v1"], "csistoragecapacities", "CSIStorageCapacity", true, &[], false, Sub::None),
    ("storage.k8s.io", &["v1"], "storageclasses", "StorageClass", false, &["sc"], false, Sub::None),
    ("storage.k8s.io", &["v1"], "volumeattachments", "VolumeAttachment", false, &[], false, Sub::Status),
    ("storage.k8s.io", &["v1"], "volumeattributesclasses", "VolumeAttributesClass", false, &["vac"], false, Sub::None),
    ("admissionregistration.k8s.io", &["v1"], "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false, &[], false, Sub::None),
    ("admissionregistration.k8s.io", &["v1"], "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, &[], false, Sub::Status),
    ("admissionregistration.k8s.io", &["v1"], "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, &[], false, Sub::None),
    ("admissionregistration.k8s.io", &["v1"], "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, &[], false, Sub::None),
    ("scheduling.k8s.io", &["v1"], "priorityclasses", "PriorityClass", false, &["pc"], false, Sub::None),
    ("coordination.k8s.io", &["v1"], "leases", "Lease", true, &[], false, Sub::None),
    ("node.k8s.io", &["v1"], "runtimeclasses", "RuntimeClass", false, &[], false, Sub::None),
    ("discovery.k8s.io", &["v1"], "endpointslices", "EndpointSlice", true, &[], false, Sub::None),
    ("flowcontrol.apiserver.k8s.io", &["v1"], "flowschemas", "FlowSchema", false, &[], false, Sub::Status),
    ("flowcontrol.apiserver.k8s.io", &["v1"], "prioritylevelconfigurations", "PriorityLevelConfiguration", false, &[], false, Sub::Status),
    ("resource.k8s.io", &["v1"], "deviceclasses", "DeviceClass", false, &[], false, Sub::None),
    ("resource.k8s.io", &["v1"], "resourceclaims", "ResourceClaim", true, &[], false, Sub::Status),
    ("resource.k8s.io", &["v1"], "resourceclaimtemplates", "ResourceClaimTemplate", true, &[], false, Sub::None),
    ("resource.k8s.io", &["v1"], "resourceslices", "ResourceSlice", false, &[], false, Sub::None),
];

/// Verbs of the kinds that are not stored collections.
fn verbs_of(plural: &str) -> Vec<&'static str> {
    match plural {
        "bindings" => vec!["create"],
        "componentstatuses" => vec!["get", "list"],
        _ => ALL_VERBS.to_vec(),
    }
}

/// The kinds every sandbox server serves before any CRD exists.
pub fn all() -> Vec<Arc<ResourceDef>> {
    let mut all = super::resources::builtins();
    all.extend(generic_builtins());
    all
}

/// Every row as a resource definition.
pub fn generic_builtins() -> Vec<Arc<ResourceDef>> {
    KINDS
        .iter()
        .map(
            |&(group, versions, plural, kind, namespaced, short_names, all, sub)| {
                let scale = matches!(sub, Sub::Scale).then(|| ScaleDef {
                    spec_replicas_path: ".spec.replicas".into(),
                    status_replicas_path: ".status.replicas".into(),
                    label_selector_path: Some(".status.selector".into()),
                });
                let status = !matches!(sub, Sub::None);
                let mut def = builtin(
                    group,
                    versions[0],
                    plural,
                    kind,
                    namespaced,
                    short_names,
                    status,
                    Flavor::Generic,
                );
                def.versions = versions
                    .iter()
                    .enumerate()
                    .map(|(i, version)| VersionDef {
                        name: version.to_string(),
                        storage: i == 0,
                        status,
                        scale: scale.clone(),
                        deprecated: false,
                        deprecation_warning: None,
                    })
                    .collect();
                def.categories = match (all, plural) {
                    (true, _) => vec!["all".to_string()],
                    (false, "apiservices") => vec!["api-extensions".to_string()],
                    _ => Vec::new(),
                };
                def.verbs = verbs_of(plural);
                Arc::new(def)
            },
        )
        .collect()
}
