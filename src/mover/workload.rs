//! `--to-cluster NAME`: the target is the workload cluster NAME of the source (a self-hosted
//! pivot), reached through its `NAME-kubeconfig` Secret (`data.value`, as Cluster API writes it).
//! The kubeconfig is read into memory only: never written to disk, never printed, not in the
//! journal (which names the target by its identity and as this Cluster of the source).

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject};

use super::journal::kept::Kept;
use crate::error::{End, Error, Result};
use crate::kube::{Catalog, Cluster};
use crate::model::ClusterView;
use crate::names::{CLUSTER, CORE_GROUP};
use crate::settings::{Connection, InlineKubeconfig, Scope, shell_word};

/// The connection to the workload cluster `name` of `source`, from its kubeconfig Secret;
/// refused when the Cluster is not there or not provisioned, or its Secret is missing or does
/// not hold a kubeconfig.
pub async fn target_of(
    (source, catalog): (&Cluster, &Catalog),
    (connection, scope): (&Connection, &Scope),
    name: &str,
) -> Result<Connection> {
    if scope.all_namespaces {
        return Err(Error::Usage(
            "--to-cluster names a Cluster of one namespace; pass -n NAMESPACE instead of -A".into(),
        ));
    }
    let namespace = source.namespace(scope.namespace.as_deref());
    let flags = connection.as_flags();
    let clusters = catalog
        .kind(CORE_GROUP, CLUSTER)
        .ok_or_else(|| Error::CapiNotInstalled {
            server: source.server(),
            install: None,
        })?;
    let found: Option<DynamicObject> =
        Api::namespaced_with(source.client.clone(), &namespace, &clusters.resource)
            .get_opt(name)
            .await
            .map_err(|e| source.api_error(e, &format!("reading Cluster {namespace}/{name}")))?;
    let kept = Kept {
        namespace: namespace.clone(),
        cluster: name.to_string(),
    };
    match found {
        // Moved already, or being moved: a move that was interrupted kept its kubeconfig.
        None => {
            let Some(value) = kept.read(source).await? else {
                return Err(moved_already(source, (&namespace, name)).await?.unwrap_or(
                    Error::ClustersNotFound {
                        names: vec![name.to_string()],
                        scope: format!("namespace {namespace} (--to-cluster)"),
                        flags,
                    },
                ));
            };
            let origin = format!(
                "the kubeconfig of {namespace}/{name} an interrupted move kept in the source"
            );
            return connection_for((connection, source), value, origin, (name, &namespace));
        }
        Some(found) => {
            let cluster = ClusterView::read(&found);
            if !cluster.infrastructure_provisioned || !cluster.control_plane_initialized {
                return Err(Error::Refused(vec![format!(
                    "--to-cluster {name}: Cluster {namespace}/{name} is not provisioned yet, so it cannot take the move; wait for it with `kubectl capi ready {} -n {}{flags} --wait`",
                    shell_word(name),
                    shell_word(&namespace)
                )]));
            }
        }
    }
    let secret_name = format!("{name}-kubeconfig");
    let secret = Api::<Secret>::namespaced(source.client.clone(), &namespace)
        .get_opt(&secret_name)
        .await
        .map_err(|e| source.api_error(e, &format!("reading Secret {namespace}/{secret_name}")))?;
    let origin = format!("the kubeconfig in Secret {namespace}/{secret_name} of the source");
    let value = secret
        .and_then(|s| s.data)
        .and_then(|mut data| data.remove("value"))
        .map(|value| value.0);
    let value = match value {
        Some(value) => value,
        // Deleted by an interrupted move of this Cluster, which kept it.
        None => kept.read(source).await?.ok_or_else(|| {
            Error::Refused(vec![format!(
                "--to-cluster {name}: the source has no kubeconfig for Cluster {namespace}/{name} (Secret {namespace}/{secret_name} with a value), which Cluster API writes once the control plane is initialized"
            )])
        })?,
    };
    connection_for((connection, source), value, origin, (name, &namespace))
}

/// A Cluster that is not in the source because a move recorded here moved it into itself:
/// nothing left to move (the move is found as it was asked for: this Cluster of this source).
async fn moved_already(source: &Cluster, (namespace, name): (&str, &str)) -> Result<Option<Error>> {
    let identity = crate::mover::same_cluster::identify(source).await?;
    let Ok(uid) = identity.kube_system_uid else {
        return Ok(None);
    };
    let dir = crate::mover::journal::default_dir();
    Ok(
        crate::mover::journal::finished_pivot(&dir, &uid, (namespace, name)).map(|(path, record)| {
            Error::AlreadyDone(format!(
                "the move recorded in {} moved Cluster {namespace}/{name} into itself at {}; nothing left to move",
                path.display(),
                record.finished_at.as_deref().unwrap_or("an unknown time")
            ))
        }),
    )
}

/// The connection to the workload cluster whose kubeconfig is `value`.
fn connection_for(
    (source, source_cluster): (&Connection, &Cluster),
    value: Vec<u8>,
    origin: String,
    (name, namespace): (&str, &str),
) -> Result<Connection> {
    let secret_name = format!("{name}-kubeconfig");
    let flags = source.as_flags();
    // Only that it does not parse is said: a parser's message may quote the Secret's content.
    let unusable = || {
        Error::Usage(format!(
            "{origin} does not parse as a kubeconfig; Cluster API writes one there as `value` — look at the Secret with `kubectl get secret {} -n {}{flags}`",
            shell_word(&secret_name),
            shell_word(namespace)
        ))
    };
    let text = std::str::from_utf8(&value).map_err(|_| unusable())?;
    let kubeconfig: kube::config::Kubeconfig =
        serde_saphyr::from_str(text).map_err(|_| unusable())?;
    let mut connection = source.other_end(End::MOVE_WORKLOAD, None, None);
    // The workload cluster's own credentials: nothing of the source's connection applies there.
    connection.kubeconfig = None;
    connection.as_user = None;
    connection.as_groups = Vec::new();
    connection.insecure_skip_tls_verify = false;
    connection.inline = Some(InlineKubeconfig {
        kubeconfig,
        raw: value,
        origin,
        reach: format!(
            " --kubeconfig <(kubectl get secret {} -n {}{flags} -o jsonpath='{{.data.value}}' | base64 -d)",
            shell_word(&secret_name),
            shell_word(namespace)
        ),
        allowed_proxy: source_cluster.proxy_url.clone(),
    });
    Ok(connection)
}
