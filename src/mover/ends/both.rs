//! The two ends of a move, each connected, discovered and identified once per command —
//! refusing one cluster as both before anything else is read — and handed to every step.

use crate::choices::DryRun;
use crate::error::{Error, Result};
use crate::kube::{Catalog, Connected, connect, lease};
use crate::mover::ends::same_cluster;
use crate::mover::request::{MoveRequest, clusterctl_init};
use crate::verify::Between;

/// A move's clusters: the source (for a restore, the cluster restored into) and the target
/// when the move writes into one.
pub struct Ends {
    pub source: Connected,
    pub target: Option<Connected>,
    /// Both clusters by their `kube-system` UIDs, when there is a target.
    pub identities: Option<Between>,
}

impl Ends {
    /// Connects what `request` names: both ends first (a wrong `--to-context` is named before
    /// anything is read), then their identities, then what each serves. A `--to-cluster` target
    /// is found in the source first; the request that reaches it is returned with the ends.
    pub async fn open(request: MoveRequest) -> Result<(Ends, MoveRequest)> {
        let source = connect(&request.source).await?;
        let (request, source_catalog) = match &request.to_cluster {
            Some(name) if request.moves_between_clusters() => {
                let catalog = Catalog::discover(&source).await?;
                let from = (&request.source, &request.scope);
                let target = crate::mover::ends::workload::target_of(
                    (&source, &catalog),
                    from,
                    name,
                    &request.clusters,
                )
                .await?;
                (request.reaching(target), Some(catalog))
            }
            _ => (request, None),
        };
        let target = match &request.target {
            Some(connection) if request.moves_between_clusters() => {
                Some(connect(connection).await?)
            }
            _ => None,
        };
        let identities = match &target {
            Some(target) => Some(same_cluster::ensure_distinct(&source, target).await?),
            None => None,
        };
        let catalog = match source_catalog {
            Some(catalog) => catalog,
            None => Catalog::discover(&source).await?,
        };
        let source = Connected {
            cluster: source,
            catalog,
        };
        let target = match (target, &request.target) {
            (Some(cluster), Some(connection)) => {
                let catalog = Catalog::discover(&cluster).await.map_err(|e| match e {
                    Error::CapiNotInstalled { server, .. } => Error::CapiNotInstalled {
                        server,
                        install: Some(clusterctl_init(connection)),
                    },
                    other => other,
                })?;
                Some(Connected { cluster, catalog })
            }
            _ => None,
        };
        let ends = Ends {
            source,
            target,
            identities,
        };
        Ok((ends, request))
    }

    /// The leases of every cluster this command writes to — the source (for a restore, the
    /// cluster restored into) and the target — taken in the order of their `kube-system` UIDs
    /// once the flags, the local paths and the two ends are checked, and before anything is
    /// written. A server-side dry run only checks that no one holds them; a client-side one
    /// writes nowhere.
    pub async fn take_leases(
        &self,
        request: &MoveRequest,
        tell: lease::Tell<'_>,
    ) -> Result<Option<lease::Leases>> {
        let source = &self.source.cluster;
        let mut clusters: Vec<(&crate::kube::Cluster, &str)> = Vec::new();
        match (&self.target, &self.identities) {
            (Some(target), Some(identities)) => {
                clusters.push((source, identities.source.as_str()));
                clusters.push((&target.cluster, identities.target.as_str()));
            }
            _ => clusters.push((source, "")),
        }
        match request.dry_run {
            DryRun::Client => Ok(None),
            DryRun::Server => {
                for (cluster, _) in clusters {
                    lease::ensure_free(cluster, tell).await?;
                }
                Ok(None)
            }
            DryRun::None => {
                let command = request.holder_command();
                Ok(Some(lease::Leases::take(&clusters, &command, tell).await?))
            }
        }
    }
}
