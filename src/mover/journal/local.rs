//! Where journals live on this machine: the state directory, files written privately (0600 in
//! 0700 directories) and atomically, set aside or pruned when they no longer decide anything.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::mover::journal::document::Journal;

/// Checks, before anything is written in a cluster, that a journal can be written at `path`
/// (`--journal`), or in the default directory: the directory is made (0700) and a probe file is
/// written and removed.
pub fn check_writable(path: Option<&Path>) -> Result<()> {
    // What a message names, the directory to make, the file to probe.
    let (shown, dir, probe) = match path {
        Some(path) => (
            path.to_path_buf(),
            path.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_path_buf),
            path.with_extension("json.partial"),
        ),
        None => {
            let default = default_dir()?;
            let probe = default.join(format!(".probe-{}", std::process::id()));
            (default.clone(), Some(default), probe)
        }
    };
    let fail = |e: std::io::Error| {
        Error::Usage(format!(
            "cannot write the move journal in {}: {e}; pass a writable --journal PATH",
            shown.display()
        ))
    };
    if let Some(dir) = &dir {
        create_private_dir(dir).map_err(fail)?;
    }
    if path.is_some_and(Path::is_dir) {
        return Err(Error::Usage(format!(
            "--journal {} is a directory; pass a file path",
            shown.display()
        )));
    }
    private_file(&probe).map_err(fail)?;
    std::fs::remove_file(&probe).map_err(fail)
}

/// Writes a journal's JSON ([`Journal::to_json`]) to `path` atomically (temporary file, then
/// rename), 0600 in a 0700 directory.
pub fn save_text(text: &str, path: &Path) -> Result<()> {
    save_parts(&[text], path)
}

/// [`save_text`] of the text `parts` join into.
pub fn save_parts(parts: &[impl AsRef<str>], path: &Path) -> Result<()> {
    save_parts_if(parts, path, || Ok(()))
}

/// [`save_parts`], replacing the file only if `still_allowed` says so once the new text is
/// written beside it (the last moment before the rename that makes it the journal).
fn save_parts_if(
    parts: &[impl AsRef<str>],
    path: &Path,
    still_allowed: impl Fn() -> Result<()>,
) -> Result<()> {
    let fail = |e: std::io::Error| {
        Error::Usage(format!(
            "cannot write the move journal {}: {e}; pass a writable --journal PATH",
            path.display()
        ))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir).map_err(fail)?;
    }
    let temporary = path.with_extension("json.partial");
    {
        let mut file = private_file(&temporary).map_err(fail)?;
        for part in parts {
            file.write_all(part.as_ref().as_bytes()).map_err(fail)?;
        }
        file.sync_all().map_err(fail)?;
    }
    if let Err(refused) = still_allowed() {
        let _ = std::fs::remove_file(&temporary);
        return Err(refused);
    }
    std::fs::rename(&temporary, path).map_err(fail)
}

/// [`save_text`] on the blocking pool: the write and its fsync must not hold up the runtime,
/// which meanwhile renews the lease, serves watches and takes in the answers of writes in flight.
/// `gate`: the source's write gate — a process that lost the move's lease (stopped past it,
/// and overtaken by another command) writes its journal no more than it writes to a cluster, so
/// it never puts back a stage its successor moved past.
pub(super) async fn save_off_the_runtime(
    parts: std::sync::Arc<[String]>,
    path: &Path,
    gate: Option<crate::kube::gate::WriteGate>,
) -> Result<()> {
    let path = path.to_path_buf();
    let still_held = move || match &gate {
        Some(gate) => gate.held().map_err(Error::LeaseLost),
        None => Ok(()),
    };
    still_held()?;
    tokio::task::spawn_blocking(move || save_parts_if(&parts, &path, still_held))
        .await
        .map_err(|e| Error::Usage(format!("saving the move journal failed: {e}")))?
}

/// Sets a journal file aside (`set-aside-<name>` beside it, pruned like a finished record):
/// no command acts on it, and it is still there to read. Returns where it went.
pub fn set_aside(path: &Path) -> Result<PathBuf> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let aside = path.with_file_name(format!("{SET_ASIDE_PREFIX}{name}"));
    let fail = |e: std::io::Error| {
        Error::Usage(format!(
            "cannot set the move journal {} aside: {e}; move it away by hand",
            path.display()
        ))
    };
    std::fs::rename(path, &aside).map_err(fail)?;
    // Pruned by age from now on, not from when it was written.
    std::fs::File::options()
        .write(true)
        .open(&aside)
        .and_then(|f| f.set_modified(std::time::SystemTime::now()))
        .map_err(fail)?;
    Ok(aside)
}

/// The beginning of the name of a journal file set aside.
pub const SET_ASIDE_PREFIX: &str = "set-aside-";

/// How long the record of a finished move is kept.
pub const FINISHED_RECORDS_KEPT: std::time::Duration =
    std::time::Duration::from_secs(30 * 24 * 3600);

/// Removes the records of moves that finished longer ago than [`FINISHED_RECORDS_KEPT`] from
/// `dir` (files it cannot read or that hold an unfinished move are left alone).
pub fn prune_finished(dir: &Path) {
    let Ok(files) = std::fs::read_dir(dir) else {
        return;
    };
    for path in files.flatten().map(|f| f.path()) {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let set_aside = name.starts_with(SET_ASIDE_PREFIX);
        let is_journal = name
            .trim_start_matches(SET_ASIDE_PREFIX)
            .starts_with("move-")
            && name.ends_with(".json");
        let old = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > FINISHED_RECORDS_KEPT);
        if is_journal
            && old
            && (set_aside || Journal::load(&path).is_ok_and(|j| j.stage.finished()))
        {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The newest finished record in `dir` of a `--to-cluster` move of `cluster` of `namespace` out
/// of the source whose `kube-system` UID is `source`, with its path.
pub fn finished_pivot(
    dir: &Path,
    source: &str,
    (namespace, cluster): (&str, &str),
) -> Option<(PathBuf, Journal)> {
    let files = std::fs::read_dir(dir).ok()?;
    files
        .flatten()
        .map(|f| f.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("move-") && n.ends_with(".json"))
        })
        .filter_map(|p| Journal::load(&p).ok().map(|j| (p, j)))
        .filter(|(_, j)| {
            j.stage == crate::mover::journal::document::Stage::Done
                && j.source.identity.as_deref() == Some(source)
                && j.target.cluster.as_deref() == Some(cluster)
                && j.namespace.as_deref() == Some(namespace)
        })
        .max_by(|(_, a), (_, b)| a.finished_at.cmp(&b.finished_at))
}

/// `kubectl-capi/moves` in the user's state directory ([`crate::platform::state_dir`]:
/// `$XDG_STATE_HOME` or `~/.local/state`, `%LOCALAPPDATA%` on Windows). Never a temporary
/// directory: a journal a reboot may delete is no journal.
pub fn default_dir() -> Result<PathBuf> {
    let state = crate::platform::state_dir().ok_or_else(|| {
        Error::Usage(
            "cannot tell where to keep the move journal: this machine's home directory is unknown; pass --journal PATH".into(),
        )
    })?;
    Ok(state.join("kubectl-capi").join("moves"))
}

#[cfg(unix)]
pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
pub(super) fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
pub(super) fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::create(path)
}
