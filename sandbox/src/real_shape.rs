//! Objects shaped like a real management cluster's: certificate-sized Secrets, kubeadm specs,
//! controller status with conditions, and managedFields written by more than one manager — what
//! a real kube-apiserver answers with, so that a client's memory is measured honestly.

use serde_json::{Value, json};

use crate::apiserver::server::ApiServer;
use crate::fixture::{Fixture, merge};

/// The field manager of Cluster API's controllers (controller-runtime's default).
pub const CONTROLLER_MANAGER: &str = "manager";

const TIME: &str = "2026-11-30T08:15:42Z";
const LATER: &str = "2026-12-01T09:20:13Z";

/// `len` characters of base64-looking filler, different per `seed` (never real key material).
fn filler(seed: &str, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state = seed.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[(state % 64) as usize] as char
        })
        .collect()
}

/// Conditions as controllers write them: the positive ones True, the rest False.
fn conditions(types: &[&str], time: &str) -> Value {
    let negative = [
        "Deleting",
        "Paused",
        "ScalingUp",
        "ScalingDown",
        "RollingOut",
        "Remediating",
    ];
    json!(
        types
            .iter()
            .map(|t| {
                let positive = !negative.contains(t);
                json!({
                    "type": t,
                    "status": if positive { "True" } else { "False" },
                    "reason": if positive { t.to_string() } else { format!("Not{t}") },
                    "message": "",
                    "lastTransitionTime": time,
                    "observedGeneration": 1,
                })
            })
            .collect::<Vec<_>>()
    )
}

fn legacy_conditions(types: &[&str], time: &str) -> Value {
    json!(
        types
            .iter()
            .map(|t| json!({"type": t, "status": "True", "lastTransitionTime": time}))
            .collect::<Vec<_>>()
    )
}

fn kubeadm_config_spec(name: &str) -> Value {
    json!({
        "clusterConfiguration": {
            "apiServer": {"certSANs": ["localhost", "127.0.0.1", "0.0.0.0", "host.docker.internal"],
                "extraArgs": [{"name": "audit-log-maxage", "value": "30"}, {"name": "profiling", "value": "false"}]},
            "controllerManager": {"extraArgs": [{"name": "bind-address", "value": "0.0.0.0"}, {"name": "profiling", "value": "false"}]},
            "etcd": {"local": {"dataDir": "/var/lib/etcddisk/etcd", "extraArgs": [{"name": "listen-metrics-urls", "value": "http://0.0.0.0:2381"}]}},
            "scheduler": {"extraArgs": [{"name": "bind-address", "value": "0.0.0.0"}]},
        },
        "initConfiguration": {"nodeRegistration": {"criSocket": "unix:///var/run/containerd/containerd.sock",
            "kubeletExtraArgs": [{"name": "eviction-hard", "value": "nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%"}, {"name": "fail-swap-on", "value": "false"}]}},
        "joinConfiguration": {"nodeRegistration": {"criSocket": "unix:///var/run/containerd/containerd.sock",
            "kubeletExtraArgs": [{"name": "eviction-hard", "value": "nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%"}, {"name": "fail-swap-on", "value": "false"}]}},
        "files": [{"path": "/etc/kubernetes/audit-policy.yaml", "owner": "root:root", "permissions": "0600",
            "content": "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"},
            {"path": "/etc/kubernetes/encryption.yaml", "owner": "root:root", "permissions": "0600",
            "contentFrom": {"secret": {"name": format!("{name}-encryption"), "key": "config"}}}],
        "preKubeadmCommands": ["swapoff -a", "sysctl --system", "systemctl restart containerd"],
        "postKubeadmCommands": ["echo done"],
        "users": [{"name": "capi", "sudo": "ALL=(ALL) NOPASSWD:ALL", "sshAuthorizedKeys": [format!("ssh-ed25519 {} capi", filler(name, 68))]}],
        "format": "cloud-config",
    })
}

fn machine_template_spec() -> Value {
    json!({"customImage": "kindest/node:v1.33.1", "preLoadImages": [],
        "extraMounts": [{"containerPath": "/var/run/docker.sock", "hostPath": "/var/run/docker.sock"}],
        "bootstrapTimeout": "3m"})
}

/// What a real object of this kind carries beyond the fixture's skeleton (merged into it).
/// A Cluster API Secret's data, as large as a real one of its name: a kubeconfig, a
/// certificate and key, or bootstrap data.
fn secret_data(name: &str) -> Value {
    if name.ends_with("-kubeconfig") {
        json!({"value": filler(name, 5600)})
    } else if ["-ca", "-etcd", "-proxy", "-sa"]
        .iter()
        .any(|s| name.ends_with(s))
    {
        json!({"tls.crt": filler(name, 1500), "tls.key": filler(&format!("{name}.key"), 2300)})
    } else {
        // Bootstrap data: a control plane's carries every certificate of the cluster.
        let size = if name.contains("-cp-") { 20000 } else { 4000 };
        json!({"format": "Y2xvdWQtY29uZmln", "value": filler(name, size)})
    }
}

fn real_parts(object: &Value) -> Value {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let cluster = object["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"]
        .as_str()
        .unwrap_or_default();
    match object["kind"].as_str().unwrap_or_default() {
        "Secret" => json!({"type": "cluster.x-k8s.io/secret", "data": secret_data(name)}),
        "Cluster" => json!({
            "spec": {"clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}, "services": {"cidrBlocks": ["10.128.0.0/12"]}, "serviceDomain": "cluster.local"},
                "controlPlaneEndpoint": {"host": "172.18.0.3", "port": 6443}},
            "status": {"phase": "Provisioned", "observedGeneration": 2,
                "conditions": conditions(&["Available", "InfrastructureReady", "ControlPlaneInitialized", "ControlPlaneAvailable", "WorkersAvailable", "MachinesReady", "MachinesUpToDate", "RemoteConnectionProbe", "ScalingUp", "ScalingDown", "Remediating", "RollingOut", "Deleting", "Paused", "TopologyReconciled"], TIME),
                "deprecated": {"v1beta1": {"conditions": legacy_conditions(&["Ready", "ControlPlaneInitialized", "ControlPlaneReady", "InfrastructureReady"], TIME)}}},
        }),
        "KubeadmControlPlane" => json!({
            "spec": {"version": "v1.33.1", "kubeadmConfigSpec": kubeadm_config_spec(name),
                "machineTemplate": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": format!("{name}-cp")}}},
                "rollout": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
            "status": {"version": "v1.33.1", "observedGeneration": 1, "selector": format!("cluster.x-k8s.io/cluster-name={name},cluster.x-k8s.io/control-plane"),
                "initialization": {"controlPlaneInitialized": true},
                "conditions": conditions(&["Available", "CertificatesAvailable", "EtcdClusterHealthy", "ControlPlaneComponentsHealthy", "MachinesReady", "MachinesUpToDate", "ScalingUp", "ScalingDown", "Remediating", "RollingOut", "Deleting", "Paused"], TIME)},
        }),
        "KubeadmConfig" => json!({
            "metadata": {"annotations": {"cluster.x-k8s.io/cloned-from-name": format!("{cluster}-md"), "cluster.x-k8s.io/cloned-from-groupkind": "KubeadmConfigTemplate.bootstrap.cluster.x-k8s.io"}},
            "spec": kubeadm_config_spec(name),
            "status": {"dataSecretName": name, "observedGeneration": 1, "initialization": {"dataSecretCreated": true},
                "conditions": conditions(&["Ready", "DataSecretAvailable", "CertificatesAvailable", "Paused"], TIME)},
        }),
        "KubeadmConfigTemplate" => {
            json!({"spec": {"template": {"spec": kubeadm_config_spec(name)}}})
        }
        "DockerMachineTemplate" => json!({"spec": {"template": {"spec": machine_template_spec()}}}),
        "DockerCluster" => json!({
            "spec": {"controlPlaneEndpoint": {"host": "172.18.0.3", "port": 6443}, "loadBalancer": {"imageRepository": "kindest", "imageTag": "v20250214-acbabc1a"}},
            "status": {"initialization": {"provisioned": true}, "failureDomains": [{"name": "fd1", "controlPlane": true}, {"name": "fd2", "controlPlane": true}, {"name": "fd3", "controlPlane": false}],
                "conditions": conditions(&["Ready", "LoadBalancerAvailable", "Paused", "Deleting"], TIME)},
        }),
        "DockerMachine" => json!({
            "metadata": {"annotations": {"cluster.x-k8s.io/cloned-from-name": format!("{cluster}-md"), "cluster.x-k8s.io/cloned-from-groupkind": "DockerMachineTemplate.infrastructure.cluster.x-k8s.io"}},
            "spec": merge_into(machine_template_spec(), json!({"providerID": format!("docker:////{name}")})),
            "status": {"initialization": {"provisioned": true}, "addresses": [{"type": "Hostname", "address": name}, {"type": "InternalIP", "address": "172.18.0.4"}, {"type": "ExternalIP", "address": "172.18.0.4"}],
                "conditions": conditions(&["Ready", "ContainerProvisioned", "BootstrapExecSucceeded", "Paused", "Deleting"], TIME)},
        }),
        "Machine" => json!({
            "metadata": {"annotations": {"machine.cluster.x-k8s.io/certificates-expiry": "2027-11-30T08:15:42Z"}},
            "spec": {"version": "v1.33.1", "providerID": format!("docker:////{name}"), "failureDomain": "fd1",
                "deletion": {"nodeDrainTimeoutSeconds": 0, "nodeVolumeDetachTimeoutSeconds": 0, "nodeDeletionTimeoutSeconds": 10}},
            "status": {"phase": "Running", "observedGeneration": 2, "lastUpdated": TIME, "certificatesExpiryDate": "2027-11-30T08:15:42Z",
                "initialization": {"bootstrapDataSecretCreated": true, "infrastructureProvisioned": true},
                "addresses": [{"type": "Hostname", "address": name}, {"type": "InternalIP", "address": "172.18.0.4"}, {"type": "ExternalIP", "address": "172.18.0.4"}],
                "nodeInfo": {"architecture": "amd64", "bootID": filler(&format!("{name}.boot"), 36), "containerRuntimeVersion": "containerd://2.1.1",
                    "kernelVersion": "6.8.0-59-generic", "kubeProxyVersion": "", "kubeletVersion": "v1.33.1", "machineID": filler(&format!("{name}.id"), 32),
                    "operatingSystem": "linux", "osImage": "Debian GNU/Linux 12 (bookworm)", "systemUUID": filler(&format!("{name}.uuid"), 36)},
                "conditions": conditions(&["Available", "Ready", "UpToDate", "BootstrapConfigReady", "InfrastructureReady", "NodeReady", "NodeHealthy", "Deleting", "Paused"], TIME),
                "deprecated": {"v1beta1": {"conditions": legacy_conditions(&["Ready", "BootstrapReady", "InfrastructureReady", "NodeHealthy"], TIME)}}},
        }),
        "MachineDeployment" | "MachineSet" => json!({
            "spec": {"template": {"metadata": {"labels": {"cluster.x-k8s.io/cluster-name": cluster}},
                "spec": {"clusterName": cluster, "version": "v1.33.1",
                    "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": name}},
                    "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": name}}}},
            "status": {"observedGeneration": 1, "selector": format!("cluster.x-k8s.io/cluster-name={cluster}"),
                "conditions": conditions(&["Available", "MachinesReady", "MachinesUpToDate", "ScalingUp", "ScalingDown", "Remediating", "RollingOut", "Deleting", "Paused"], TIME)},
        }),
        _ => json!({}),
    }
}

fn merge_into(mut into: Value, extra: Value) -> Value {
    merge(&mut into, extra);
    into
}

impl Fixture {
    /// Gives every object what a real one of its kind carries (before loading).
    pub fn real_shaped(&mut self) -> &mut Fixture {
        for (object, _) in &mut self.objects {
            let parts = real_parts(object);
            merge(object, parts);
        }
        self
    }
}

/// After loading: the controllers rewrite each object's status (through `/status`, as
/// `manager`), as they do on every reconcile, so every answer carries managedFields with both
/// the creator's entry and the controllers' — as a real server's answers do.
pub async fn weather(server: &ApiServer, objects: &[Value]) -> anyhow::Result<()> {
    let client = server.client();
    for object in objects {
        let Some(status) = object.get("status").filter(|s| s.is_object()) else {
            continue;
        };
        let mut status = status.clone();
        if let Some(conditions) = status["conditions"].as_array_mut() {
            for condition in conditions {
                condition["lastTransitionTime"] = json!(LATER);
            }
        }
        status["observedGeneration"] = json!(2);
        crate::api::patch_as(
            &client,
            object,
            Some("status"),
            CONTROLLER_MANAGER,
            &json!({"status": status}),
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filler_is_deterministic_base64_of_the_asked_length() {
        let a = filler("x", 100);
        assert_eq!(a.len(), 100);
        assert_eq!(a, filler("x", 100));
        assert_ne!(a, filler("y", 100));
        assert!(
            a.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
        );
    }
}
