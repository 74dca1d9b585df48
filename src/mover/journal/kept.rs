//! A `--to-cluster` move's way back to its target: while the move runs, the workload cluster's
//! kubeconfig is kept in a Secret of the source beside the journal's copy, so that a resume or a
//! rollback reaches the target after the move deleted the Cluster's own `NAME-kubeconfig` from
//! the source. When the move ends it is removed — unless that Secret left the source (a pivot of
//! the Cluster into itself): then the kept one is the only way there, for later moves into it
//! (`--to-cluster NAME`) and for the commands the move printed. Never on disk.

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};

use crate::error::Result;
use crate::kube::Cluster;
use crate::mover::addressing::only_uid;
use crate::names::MOVE_KUBECONFIG_LABEL;

/// The kept kubeconfig of the workload cluster `cluster`: a Secret in its namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub namespace: String,
    pub cluster: String,
}

impl Kept {
    pub fn name(&self) -> String {
        format!("{}{}", crate::names::KEPT_KUBECONFIG_PREFIX, self.cluster)
    }

    /// The Cluster's own kubeconfig Secret, as Cluster API names it.
    pub fn own_secret(&self) -> String {
        format!("{}-kubeconfig", self.cluster)
    }

    /// The move is over: the kept kubeconfig goes, unless the Cluster's own Secret left the
    /// source with it (then it is the only way into the Cluster from here).
    pub async fn release(&self, source: &Cluster) -> Result<()> {
        let own = self
            .api(source)
            .get_opt(&self.own_secret())
            .await
            .map_err(|e| {
                source.api_error(
                    e,
                    &format!("reading Secret {}/{}", self.namespace, self.own_secret()),
                )
            })?;
        if own.is_some() {
            self.remove(source).await?;
        }
        Ok(())
    }

    fn api(&self, source: &Cluster) -> Api<Secret> {
        Api::namespaced(source.client.clone(), &self.namespace)
    }

    /// Keeps `kubeconfig` (as the Cluster's Secret held it); one kept before is kept as it is.
    pub async fn keep(&self, source: &Cluster, kubeconfig: &[u8]) -> Result<()> {
        let secret = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some(self.name()),
                namespace: Some(self.namespace.clone()),
                labels: Some([(MOVE_KUBECONFIG_LABEL.to_string(), self.cluster.clone())].into()),
                ..Default::default()
            },
            data: Some([("value".to_string(), ByteString(kubeconfig.to_vec()))].into()),
            type_: Some(crate::names::CLUSTER_SECRET_TYPE.into()),
            ..Default::default()
        };
        let params = PostParams {
            field_manager: Some(crate::names::FIELD_MANAGER.into()),
            ..Default::default()
        };
        match self.api(source).create(&params, &secret).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(e) => Err(source.api_error(
                e,
                &format!(
                    "keeping the kubeconfig of {} in Secret {}/{}",
                    self.cluster,
                    self.namespace,
                    self.name()
                ),
            )),
        }
    }

    /// The kept kubeconfig, if this move keeps one.
    pub async fn read(&self, source: &Cluster) -> Result<Option<Vec<u8>>> {
        let found = self.api(source).get_opt(&self.name()).await.map_err(|e| {
            source.api_error(
                e,
                &format!("reading Secret {}/{}", self.namespace, self.name()),
            )
        })?;
        Ok(found
            .and_then(|s| s.data)
            .and_then(|mut data| data.remove("value"))
            .map(|value| value.0))
    }

    /// Removes the kept kubeconfig (the move is over); gone already is as good.
    pub async fn remove(&self, source: &Cluster) -> Result<()> {
        let api = self.api(source);
        let Some(uid) = api
            .get_opt(&self.name())
            .await
            .map_err(|e| {
                source.api_error(
                    e,
                    &format!("reading Secret {}/{}", self.namespace, self.name()),
                )
            })?
            .and_then(|s| s.metadata.uid)
        else {
            return Ok(());
        };
        match api.delete(&self.name(), &only_uid(&uid)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
            Err(e) => Err(source.api_error(
                e,
                &format!("removing Secret {}/{}", self.namespace, self.name()),
            )),
        }
    }
}
