//! `--to-directory` / `--from-directory`: clusterctl-compatible backup and restore. One file per
//! object, `<Kind>_<namespace>_<name>.yaml` (`<Kind>__<name>.yaml` for cluster-scoped objects),
//! holding the object's JSON; files 0600 in a 0700 directory, since kubeconfig Secrets are among
//! them.

use std::path::Path;
use std::sync::Arc;

use kube::api::DynamicObject;

use crate::error::{Error, Result, yaml_problem};
use crate::kube::Connected;
use crate::kube::Stop;
use crate::model::ObjectRef;
use crate::mover::addressing::DEFAULT_CONCURRENCY;
use crate::mover::checks::findings::Preflight;
use crate::mover::graph::discover::{MoveType, list_objects_keeping};
use crate::mover::graph::object_graph::{Graph, TypedObjects};
use crate::mover::graph::plan::{MovePlan, plan};
use crate::mover::progress::{Progress, Silent};
use crate::mover::write::create::{Created, Creating, Fresh, create_groups};
use crate::mover::write::execute::Source;
use crate::mover::write::pause::set_paused;
use crate::snapshot::{Content, Keep, Status};

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

/// Creates `--to-directory` (0700, as its files may hold credentials) if it is absent; an
/// existing directory keeps its mode.
pub fn create_backup_directory(directory: &Path) -> Result<()> {
    #[cfg(unix)]
    use std::os::unix::fs::DirBuilderExt;
    if directory.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    builder.mode(0o700);
    builder.create(directory).map_err(|e| {
        Error::Usage(format!(
            "cannot create --to-directory {}: {e}; pass a directory that can be created",
            directory.display()
        ))
    })
}

/// Every moved object of the plan, as read in `fresh` (after pausing), as the file it is
/// written to in `directory` and that file's text.
fn files(directory: &Path, plan: &MovePlan, fresh: &Fresh) -> Vec<(std::path::PathBuf, String)> {
    let mut files = Vec::new();
    for uid in plan.groups.iter().flatten() {
        let node = plan.node(uid);
        let Some((object, content)) = fresh
            .get(uid)
            .or_else(|| Some((node.object.as_ref()?, node.content.as_deref())))
        else {
            continue;
        };
        let object = crate::snapshot::with_content(object, content);
        let path = directory.join(file_name(&object));
        let mut whole = serde_json::to_value(&object).expect("object serialises");
        // A backup keeps the object whole: its managedFields were listed apart.
        if let Some(managed) = fresh.managed_fields.get(uid)
            && let Ok(managed) = serde_json::from_str::<serde_json::Value>(managed.get())
        {
            whole["metadata"]["managedFields"] = managed;
        }
        let text = serde_json::to_string_pretty(&whole).expect("object serialises");
        files.push((path, text));
    }
    files
}

/// Writes `files` into a directory [`create_backup_directory`] made, on the blocking pool (a slow
/// disk must not hold up the runtime, which meanwhile renews the lease), each only while the
/// source's lease is still held (`gate`): a command that lost it writes nothing more, files
/// included.
async fn write(
    files: Vec<(std::path::PathBuf, String)>,
    gate: crate::kube::gate::WriteGate,
) -> Result<usize> {
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        #[cfg(unix)]
        use std::os::unix::fs::OpenOptionsExt;
        let mut written = 0;
        for (path, text) in files {
            gate.held().map_err(Error::LeaseLost)?;
            let mut options = std::fs::OpenOptions::new();
            // Never over another file: two objects with one file name (clusterctl's names leave
            // out the group) must not silently lose one.
            options.write(true).create_new(true);
            #[cfg(unix)]
            options.mode(0o600);
            let mut file = options
                .open(&path)
                .map_err(io_error(format!("writing {}", path.display())))?;
            file.write_all(text.as_bytes())
                .map_err(io_error(format!("writing {}", path.display())))?;
            written += 1;
        }
        Ok(written)
    })
    .await
    .map_err(|e| Error::Usage(format!("writing the backup failed: {e}")))?
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
        // Backups are written as JSON; YAML (JSON's superset) is accepted, and places errors.
        let object: DynamicObject = match serde_json::from_str(&text) {
            Ok(object) => object,
            Err(_) => serde_saphyr::from_str(&text).map_err(|e| {
                Error::Usage(format!(
                    "{}; a backup file holds one Kubernetes object — fix or remove it",
                    yaml_problem(&path, &e)
                ))
            })?,
        };
        let Some(meta) = object.types.as_ref() else {
            return Err(Error::Usage(format!(
                "{} has no apiVersion/kind",
                path.display()
            )));
        };
        let group = crate::names::group_of(&meta.api_version);
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

/// `--to-directory`: pause the source, write every moved object, unpause the source.
pub async fn backup(
    plan: &MovePlan,
    source: &Source<'_>,
    directory: &std::path::Path,
) -> Result<usize> {
    crate::mover::backup::directory::create_backup_directory(directory)?;
    // What was paused before the backup stays paused after it.
    let to_pause = plan.to_pause();
    set_paused(
        source.cluster,
        &to_pause,
        source.types,
        true,
        DEFAULT_CONCURRENCY,
        &Silent,
    )
    .await?;
    let result = async {
        // Only written to files: every content as text.
        let whole = |_: &MoveType| Keep {
            managed_fields: true,
            status: Status::Whole,
            content: Content::Text,
        };
        let read = list_objects_keeping(source.cluster, source.types, source.scope, whole).await?;
        let fresh = Fresh::of(read, |_| true);
        write(files(directory, plan, &fresh), source.cluster.gate.clone()).await
    }
    .await;
    // The source is unpaused whatever happened: a backup must not leave it paused.
    set_paused(
        source.cluster,
        &to_pause,
        source.types,
        false,
        DEFAULT_CONCURRENCY,
        &Silent,
    )
    .await?;
    result
}

/// `--from-directory`: create every object of a backup in the target (after its preflight,
/// whose findings `preflight` carries), then unpause its Clusters and ClusterClasses there.
pub async fn restore(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Connected,
    preflight: Preflight,
    overwrite_existing: bool,
    progress: &dyn Progress,
) -> Result<Created> {
    let created = create_groups(
        plan,
        types,
        target,
        Fresh::default(),
        Creating {
            preexisting: preflight.in_target,
            overwrite_existing,
            restore_status: false,
            concurrency: DEFAULT_CONCURRENCY,
            stop: Stop::default(),
            // A restore keeps no journal: its mark lives as long as this command.
            mark: crate::mover::journal::new_move_id(),
        },
        progress,
        None,
    )
    .await?;
    let restored: Vec<ObjectRef> = plan
        .groups
        .iter()
        .flatten()
        .map(|uid| plan.node(uid).reference.clone())
        .collect();
    set_paused(
        &target.cluster,
        &restored,
        types,
        false,
        DEFAULT_CONCURRENCY,
        progress,
    )
    .await?;
    Ok(created)
}
