//! `--to-directory` / `--from-directory`: clusterctl-compatible backup and restore. One file per
//! object, `<Kind>_<namespace>_<name>.yaml` (`<Kind>__<name>.yaml` for cluster-scoped objects),
//! holding the object's JSON; files 0600 in a 0700 directory, since kubeconfig Secrets are among
//! them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use kube::api::DynamicObject;

use super::discover::MoveType;
use super::graph::{Graph, TypedObjects};
use super::plan::{MovePlan, plan};
use crate::error::{Error, Result};

pub fn file_name(object: &DynamicObject) -> String {
    let kind = object
        .types
        .as_ref()
        .map(|t| t.kind.clone())
        .unwrap_or_default();
    format!(
        "{kind}_{}_{}.yaml",
        object.metadata.namespace.clone().unwrap_or_default(),
        object.metadata.name.clone().unwrap_or_default()
    )
}

fn io_error(context: String) -> impl Fn(std::io::Error) -> Error {
    move |e| Error::Usage(format!("{context}: {e}"))
}

/// Writes every moved object of the plan, as read in `fresh` (after pausing).
pub fn write(
    directory: &Path,
    plan: &MovePlan,
    fresh: &HashMap<String, Arc<DynamicObject>>,
) -> Result<usize> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    builder.mode(0o700);
    builder
        .create(directory)
        .map_err(io_error(format!("creating {}", directory.display())))?;
    #[cfg(unix)]
    std::fs::set_permissions(directory, std::fs::Permissions::from_mode(0o700))
        .map_err(io_error(format!("securing {}", directory.display())))?;
    let mut written = 0;
    for uid in plan.groups.iter().flatten() {
        let Some(object) = fresh
            .get(uid)
            .cloned()
            .or_else(|| plan.node(uid).object.clone())
        else {
            continue;
        };
        let path = directory.join(file_name(&object));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        options.mode(0o600);
        let mut file = options
            .open(&path)
            .map_err(io_error(format!("writing {}", path.display())))?;
        let text = serde_json::to_string_pretty(object.as_ref()).expect("object serialises");
        file.write_all(text.as_bytes())
            .map_err(io_error(format!("writing {}", path.display())))?;
        written += 1;
    }
    Ok(written)
}

/// Reads a backup back into objects with their types (from the target's kinds) and plans it.
pub fn read(directory: &Path, types: &[MoveType]) -> Result<(TypedObjects, MovePlan)> {
    let entries = std::fs::read_dir(directory)
        .map_err(io_error(format!("reading {}", directory.display())))?;
    let mut objects = Vec::new();
    let mut paths: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path)
            .map_err(io_error(format!("reading {}", path.display())))?;
        let object: DynamicObject = serde_json::from_str(&text)
            .or_else(|_| serde_saphyr::from_str(&text).map_err(|e| e.to_string()))
            .map_err(|e| {
                Error::Usage(format!(
                    "{} is not a Kubernetes object: {e}",
                    path.display()
                ))
            })?;
        let Some(meta) = object.types.as_ref() else {
            return Err(Error::Usage(format!(
                "{} has no apiVersion/kind",
                path.display()
            )));
        };
        let group = meta
            .api_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or("");
        let info = types
            .iter()
            .find(|t| t.info.group == group && t.info.kind == meta.kind)
            .map(|t| t.info.clone())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{}: the target does not serve {} {}; install its provider there first",
                    path.display(),
                    meta.api_version,
                    meta.kind
                ))
            })?;
        objects.push((Arc::new(object), info));
    }
    let graph = Graph::build(&objects, None);
    let plan = plan(graph, &Default::default());
    Ok((objects, plan))
}
