//! Where this machine keeps the plugin's files by default, by its platform's conventions (through
//! `etcetera`, never by reading the environment here): the kubeconfig kubectl reads when neither
//! `--kubeconfig` nor `KUBECONFIG` says, and the state directory move journals are kept in.

use std::path::PathBuf;

use etcetera::BaseStrategy;

/// `~/.kube/config`, as kubectl finds it: under `$HOME` on Unix, `%USERPROFILE%` on Windows.
pub fn default_kubeconfig() -> Option<PathBuf> {
    let home = etcetera::home_dir().ok()?;
    Some(home.join(".kube").join("config"))
}

/// The user's state directory, which outlives a reboot (never a temporary directory):
/// `%LOCALAPPDATA%` on Windows; `$XDG_STATE_HOME`, else `~/.local/state`, elsewhere (macOS
/// included, as for kubectl's own `~/.kube`). None only when the home directory is unknown.
pub fn state_dir() -> Option<PathBuf> {
    if cfg!(windows) {
        windows_state_dir()
    } else {
        xdg_state_dir()
    }
}

/// `%LOCALAPPDATA%` (etcetera's Windows cache directory: local to the machine, not roaming).
fn windows_state_dir() -> Option<PathBuf> {
    Some(etcetera::base_strategy::Windows::new().ok()?.cache_dir())
}

fn xdg_state_dir() -> Option<PathBuf> {
    etcetera::base_strategy::Xdg::new().ok()?.state_dir()
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::Path;
    use std::sync::Mutex;

    use super::*;

    /// The variables these tests set are read by no other test; the lock keeps them apart.
    static ENVIRONMENT: Mutex<()> = Mutex::new(());

    /// Runs `check` with `vars` set (None: removed), then puts the environment back.
    fn with_environment(vars: &[(&str, Option<&str>)], check: impl FnOnce()) {
        let _held = ENVIRONMENT.lock().unwrap_or_else(|e| e.into_inner());
        let saved: Vec<(&str, Option<OsString>)> = vars
            .iter()
            .map(|(name, _)| (*name, std::env::var_os(name)))
            .collect();
        let set = |name: &str, value: Option<&std::ffi::OsStr>| {
            // SAFETY: the lock above serialises every test that touches these variables, and
            // no code under test runs on another thread meanwhile.
            unsafe {
                match value {
                    Some(value) => std::env::set_var(name, value),
                    None => std::env::remove_var(name),
                }
            }
        };
        for (name, value) in vars {
            set(name, value.map(std::ffi::OsStr::new));
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(check));
        for (name, value) in &saved {
            set(name, value.as_deref());
        }
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }

    /// A path of this platform's kind under a made-up root.
    fn root(parts: &[&str]) -> String {
        let base = if cfg!(windows) { r"C:\Users" } else { "/home" };
        parts
            .iter()
            .fold(PathBuf::from(base), |path, part| path.join(part))
            .display()
            .to_string()
    }

    #[test]
    fn local_app_data_is_the_windows_state_directory() {
        let local = root(&["ada", "AppData", "Local"]);
        with_environment(&[("LOCALAPPDATA", Some(&local))], || {
            assert_eq!(windows_state_dir(), Some(PathBuf::from(&local)));
        });
    }

    #[cfg(windows)]
    #[test]
    fn on_windows_the_profile_holds_the_kubeconfig_and_local_app_data_the_journals() {
        let profile = root(&["ada"]);
        let local = root(&["ada", "AppData", "Local"]);
        let vars = [
            ("HOME", None),
            ("USERPROFILE", Some(profile.as_str())),
            ("LOCALAPPDATA", Some(local.as_str())),
        ];
        with_environment(&vars, || {
            assert_eq!(
                default_kubeconfig(),
                Some(Path::new(&profile).join(".kube").join("config"))
            );
            assert_eq!(state_dir(), Some(PathBuf::from(&local)));
        });
    }

    #[cfg(unix)]
    #[test]
    fn on_unix_home_holds_the_kubeconfig_and_xdg_state_home_the_journals() {
        let home = root(&["ada"]);
        let state = root(&["ada", "state"]);
        let vars = [
            ("HOME", Some(home.as_str())),
            ("XDG_STATE_HOME", Some(state.as_str())),
            ("USERPROFILE", Some("/elsewhere")),
            ("LOCALAPPDATA", Some("/elsewhere")),
        ];
        with_environment(&vars, || {
            assert_eq!(
                default_kubeconfig(),
                Some(Path::new(&home).join(".kube").join("config"))
            );
            assert_eq!(state_dir(), Some(PathBuf::from(&state)));
        });
        // Unset or relative (which the XDG spec says to ignore): ~/.local/state.
        for unset in [None, Some("relative/state")] {
            with_environment(
                &[("HOME", Some(home.as_str())), ("XDG_STATE_HOME", unset)],
                || {
                    assert_eq!(
                        state_dir(),
                        Some(Path::new(&home).join(".local").join("state"))
                    );
                },
            );
        }
    }
}
