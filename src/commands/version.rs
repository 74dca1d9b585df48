//! `kubectl capi version`: the plugin, and the management cluster's Cluster API.

use kube::api::{Api, DynamicObject, ListParams};
use serde::Serialize;

use crate::cli::VersionArgs;
use crate::error::Result;
use crate::kube::{Catalog, Cluster};
use crate::names::CLUSTERCTL_GROUP;
use crate::output::{ExitStatus, Printer, Render};
use crate::settings::Settings;

/// The plugin's version, as `kubectl capi version` reports it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionReport {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub plugin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub management_cluster: Option<ManagementCluster>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagementCluster {
    pub server: String,
    /// The core provider's version from clusterctl's inventory, if installed by clusterctl.
    pub cluster_api_version: Option<String>,
    /// The version Cluster API objects are read at (v1beta2 for CAPI ≥ 1.11).
    pub api_dialect: Option<String>,
    pub providers: Vec<ProviderVersion>,
    /// `Kind.group` of every Cluster API kind served.
    pub kinds: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderVersion {
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub version: String,
    pub namespace: String,
}

pub async fn management_cluster(cluster: &Cluster) -> Result<ManagementCluster> {
    let catalog = Catalog::discover(cluster).await?;
    let mut providers = Vec::new();
    if let Some(info) = catalog.kind(CLUSTERCTL_GROUP, crate::names::PROVIDER_KIND) {
        let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &info.resource);
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| cluster.api_error(e, "listing clusterctl providers"))?;
        for item in list.items {
            providers.push(ProviderVersion {
                name: item.data["providerName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                type_: item.data["type"].as_str().unwrap_or_default().to_string(),
                version: item.data["version"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                namespace: item.metadata.namespace.clone().unwrap_or_default(),
            });
        }
    }
    providers.sort_by(|a, b| (&a.type_, &a.name).cmp(&(&b.type_, &b.name)));
    let mut kinds: Vec<String> = catalog
        .kinds()
        .map(|k| format!("{}.{}", k.resource.kind, k.resource.group))
        .collect();
    kinds.sort();
    Ok(ManagementCluster {
        server: cluster.url.clone(),
        cluster_api_version: providers
            .iter()
            .find(|p| p.type_ == "CoreProvider")
            .map(|p| p.version.clone()),
        api_dialect: catalog.core_version().map(str::to_string),
        providers,
        kinds,
    })
}

pub async fn run(args: &VersionArgs, settings: &Settings, printer: &Printer) -> Result<ExitStatus> {
    let management = if args.client {
        None
    } else {
        let cluster = crate::kube::connect(&settings.connection).await?;
        Some(management_cluster(&cluster).await?)
    };
    let report = VersionReport {
        api_version: crate::names::OUTPUT_API_VERSION,
        kind: "Version",
        plugin: VERSION.to_string(),
        management_cluster: management,
    };
    printer.report(&report)?;
    Ok(ExitStatus::Success)
}

impl Render for VersionReport {
    fn table(&self, _: &Printer) -> String {
        let mut text = format!("Plugin version: v{}\n", self.plugin);
        if let Some(m) = &self.management_cluster {
            text.push_str(&format!("Management cluster: {}\n", m.server));
            text.push_str(&format!(
                "Cluster API version: {}\n",
                m.cluster_api_version
                    .as_deref()
                    .unwrap_or("unknown (no clusterctl inventory)")
            ));
            text.push_str(&format!(
                "API dialect: {}\n",
                m.api_dialect.as_deref().unwrap_or("unknown")
            ));
            for p in &m.providers {
                text.push_str(&format!(
                    "Provider: {} ({}) {} in {}\n",
                    p.name, p.type_, p.version, p.namespace
                ));
            }
            text.push_str(&format!("Kinds: {}\n", m.kinds.join(", ")));
        }
        text
    }
}
