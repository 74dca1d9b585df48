//! `--to-cluster NAME`: the target is the workload cluster NAME of the source (a self-hosted
//! pivot), reached through its `NAME-kubeconfig` Secret (`data.value`, as Cluster API writes it).
//! The kubeconfig is read into memory only: never written to disk, never printed, not in the
//! journal (which names the target by its identity and as this Cluster of the source).

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject};

use crate::error::{End, Error, Result};
use crate::kube::{Catalog, Cluster};
use crate::model::ClusterView;
use crate::mover::journal::kept::Kept;
use crate::names::{CLUSTER, CORE_GROUP};
use crate::settings::{Connection, InlineKubeconfig, Scope, shell_word};

/// The connection to the workload cluster `name` of `source`, from its kubeconfig Secret;
/// refused when the Cluster is not there or not provisioned, or its Secret is missing or does
/// not hold a kubeconfig.
pub async fn target_of(
    (source, catalog): (&Cluster, &Catalog),
    (connection, scope): (&Connection, &Scope),
    name: &str,
    asked: &[String],
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
    let through_kept = |value: Vec<u8>| {
        let origin = format!(
            "the kubeconfig of {namespace}/{name} kept in the source (Secret {namespace}/{})",
            kept.name()
        );
        connection_for(
            (connection, source),
            value,
            origin,
            (&kept.name(), &namespace),
        )
    };
    match found {
        // Moved into itself already (its kubeconfig kept here), or being moved.
        None => {
            let Some(value) = kept.read(source).await? else {
                return Err(moved_already(source, (&namespace, name), asked)
                    .await?
                    .unwrap_or(Error::ClustersNotFound {
                        names: vec![name.to_string()],
                        scope: format!("namespace {namespace} (--to-cluster)"),
                        flags,
                    }));
            };
            return through_kept(value);
        }
        Some(found) => refuse_unprovisioned(&found, (&namespace, name), &flags)?,
    }
    let secret_name = kept.own_secret();
    match own_kubeconfig(source, &namespace, &secret_name).await? {
        Some(value) => {
            let origin = format!("the kubeconfig in Secret {namespace}/{secret_name} of the source");
            connection_for((connection, source), value, origin, (&secret_name, &namespace))
        }
        // Deleted by an interrupted move of this Cluster, which kept it.
        None => through_kept(kept.read(source).await?.ok_or_else(|| {
            Error::Refused(vec![format!(
                "--to-cluster {name}: the source has no kubeconfig for Cluster {namespace}/{name} (Secret {namespace}/{secret_name} with a value), which Cluster API writes once the control plane is initialized"
            )])
        })?),
    }
}

/// The value of Secret `namespace/secret_name` in `source`: the workload cluster's kubeconfig
/// as Cluster API writes it; `None` when the Secret or its value is missing.
async fn own_kubeconfig(
    source: &Cluster,
    namespace: &str,
    secret_name: &str,
) -> Result<Option<Vec<u8>>> {
    let secret = Api::<Secret>::namespaced(source.client.clone(), namespace)
        .get_opt(secret_name)
        .await
        .map_err(|e| source.api_error(e, &format!("reading Secret {namespace}/{secret_name}")))?;
    Ok(secret
        .and_then(|s| s.data)
        .and_then(|mut data| data.remove("value"))
        .map(|value| value.0))
}

/// A Cluster not provisioned yet cannot take the move: refused, with the wait that helps.
fn refuse_unprovisioned(
    found: &DynamicObject,
    (namespace, name): (&str, &str),
    flags: &str,
) -> Result<()> {
    let cluster = ClusterView::read(found);
    if cluster.infrastructure_provisioned && cluster.control_plane_initialized {
        return Ok(());
    }
    Err(Error::Refused(vec![format!(
        "--to-cluster {name}: Cluster {namespace}/{name} is not provisioned yet, so it cannot take the move; wait for it with `kubectl capi ready {} -n {}{flags} --wait`",
        shell_word(name),
        shell_word(namespace)
    )]))
}

/// A Cluster that is not in the source because a move recorded here moved it into itself, and
/// whose kubeconfig no longer is here: nothing left to move when the Clusters `asked` for are
/// all ones that move moved; for any other, the way in is the workload cluster's kubeconfig.
async fn moved_already(
    source: &Cluster,
    (namespace, name): (&str, &str),
    asked: &[String],
) -> Result<Option<Error>> {
    let identity = crate::mover::ends::same_cluster::identify(source).await?;
    let Ok(uid) = identity.kube_system_uid else {
        return Ok(None);
    };
    let Ok(dir) = crate::mover::journal::default_dir() else {
        return Ok(None);
    };
    let Some((path, record)) = crate::mover::journal::finished_pivot(&dir, &uid, (namespace, name))
    else {
        return Ok(None);
    };
    let moved = record.moved_clusters();
    let done = !asked.is_empty()
        && asked.iter().all(|a| {
            moved
                .iter()
                .any(|c| c.namespace == namespace && &c.name == a)
        });
    Ok(Some(if done {
        Error::AlreadyDone(format!(
            "the move recorded in {} moved Cluster {namespace}/{name} into itself at {}; nothing left to move",
            path.display(),
            record.finished_at.as_deref().unwrap_or("an unknown time")
        ))
    } else {
        Error::Usage(format!(
            "--to-cluster {name}: the move recorded in {} moved Cluster {namespace}/{name} into itself, and its kubeconfig Secret went with it (no copy is kept in the source); pass the workload cluster's kubeconfig with --to-kubeconfig instead",
            path.display()
        ))
    }))
}

/// The connection to the workload cluster whose kubeconfig is `value`.
fn connection_for(
    (source, source_cluster): (&Connection, &Cluster),
    value: Vec<u8>,
    origin: String,
    (secret_name, namespace): (&str, &str),
) -> Result<Connection> {
    let flags = source.as_flags();
    // Only that it does not parse is said: a parser's message may quote the Secret's content.
    let unusable = || {
        Error::Usage(format!(
            "{origin} does not parse as a kubeconfig, so the target cannot be reached; Cluster API writes one there as `value` — look at the Secret with `kubectl get secret {} -n {}{flags}`",
            shell_word(secret_name),
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
        reach: crate::settings::reach_through_secret(secret_name, namespace, &flags),
        allowed_proxy: source_cluster.proxy_url.clone(),
    });
    Ok(connection)
}
