//! `kubectl capi <TAB>`: kubectl (≥ 1.26) runs `kubectl_complete-capi` with the words typed after
//! `kubectl capi` — the last one the word being completed, empty for a new one — and reads one
//! candidate per line (`word<TAB>description`), then Cobra's `:<directive>`. What to offer is
//! decided from the clap command tree alone; only Cluster names need the cluster (one LIST).

use clap::{Arg, ArgAction, CommandFactory, FromArgMatches};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};

use crate::cli::{Cli, GlobalArgs};
use crate::kube::connect;
use crate::settings::Settings;

/// Cobra's ShellCompDirective bits, as kubectl passes them to the shell.
const NO_FILE_COMPLETION: u32 = 4;
const DEFAULT: u32 = 0;

/// What the word being completed can be.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer {
    /// These words (with a description), and no file names.
    Words(Vec<(String, String)>),
    /// A path: the shell completes file names.
    Files,
    /// The names of the Clusters where the typed flags point.
    ClusterNames,
    /// The contexts of the kubeconfig the flag with this id names (`to_kubeconfig` for
    /// `--to-context`), each after `prefix` (`--to-context=` when completed after `=`).
    Contexts {
        kubeconfig: &'static str,
        prefix: String,
    },
}

/// The flag that takes `word`'s value, if `word` is one (`--context`, `-n`, …).
fn flag_named<'a>(command: &'a clap::Command, word: &str) -> Option<&'a Arg> {
    let arguments = || command.get_arguments();
    if let Some(long) = word.strip_prefix("--") {
        return arguments().find(|a| {
            a.get_long() == Some(long)
                || a.get_all_aliases()
                    .is_some_and(|aliases| aliases.contains(&long))
        });
    }
    let short = word.strip_prefix('-')?.chars().next()?;
    arguments().find(|a| a.get_short() == Some(short))
}

/// Whether the next word is the flag's value (`--dry-run=server` takes it only after `=`).
fn takes_value(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Set | ArgAction::Append) && !arg.is_require_equals_set()
}

/// What to offer for `partial` after `typed` (the words before it, after `kubectl capi`).
pub fn offer(typed: &[String], partial: &str) -> Offer {
    let mut root = Cli::command();
    // Building propagates the global (kubectl) flags to every subcommand.
    root.build();
    let mut command = &root;
    let mut expects_value: Option<&Arg> = None;
    for word in typed {
        if expects_value.take().is_some() {
            continue;
        }
        if word.starts_with('-') {
            if !word.contains('=') {
                expects_value = flag_named(command, word).filter(|a| takes_value(a));
            }
            continue;
        }
        if let Some(sub) = command.find_subcommand(word) {
            command = sub;
        }
    }
    if let Some(arg) = expects_value {
        return value_offer(arg, partial, "");
    }
    // `--dry-run=se`, `--to-context=pr`: the value after `=`, offered with its flag.
    if let Some((flag, value)) = partial.split_once('=')
        && flag.starts_with('-')
    {
        return match flag_named(command, flag) {
            Some(arg) => value_offer(arg, value, &format!("{flag}=")),
            None => Offer::Words(Vec::new()),
        };
    }
    if partial.starts_with('-') {
        let flags = command
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| Some((format!("--{}", a.get_long()?), help_text(a.get_help()))))
            .collect();
        return Offer::Words(starting_with(flags, partial));
    }
    let subcommands: Vec<(String, String)> = command
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| (s.get_name().to_string(), help_text(s.get_about())))
        .collect();
    if !subcommands.is_empty() {
        return Offer::Words(starting_with(subcommands, partial));
    }
    match command.get_name() {
        "ready" | "pause" | "resume" | "move" => Offer::ClusterNames,
        // A positional argument with values of its own: `completion <shell>`.
        _ => match command.get_positionals().next() {
            Some(arg) => value_offer(arg, partial, ""),
            None => Offer::Words(Vec::new()),
        },
    }
}

/// What to offer as `arg`'s value, each word after `prefix`.
fn value_offer(arg: &Arg, partial: &str, prefix: &str) -> Offer {
    let id = arg.get_id().as_str();
    let kubeconfig = match id {
        "context" => Some("kubeconfig"),
        "to_context" => Some("to_kubeconfig"),
        "from_context" => Some("from_kubeconfig"),
        _ => None,
    };
    if let Some(kubeconfig) = kubeconfig {
        return Offer::Contexts {
            kubeconfig,
            prefix: prefix.to_string(),
        };
    }
    // `--to-cluster`: a workload cluster of the source.
    if id == "to_cluster" && prefix.is_empty() {
        return Offer::ClusterNames;
    }
    let values: Vec<(String, String)> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| (format!("{prefix}{}", v.get_name()), help_text(v.get_help())))
        .collect();
    if !values.is_empty() {
        return Offer::Words(starting_with(values, &format!("{prefix}{partial}")));
    }
    match arg.get_value_hint() {
        clap::ValueHint::FilePath | clap::ValueHint::DirPath | clap::ValueHint::AnyPath => {
            Offer::Files
        }
        _ if matches!(
            id,
            "kubeconfig" | "to_kubeconfig" | "from_kubeconfig" | "journal"
        ) || id.ends_with("directory") =>
        {
            Offer::Files
        }
        _ => Offer::Words(Vec::new()),
    }
}

fn help_text(help: Option<&clap::builder::StyledStr>) -> String {
    help.map(|h| h.to_string().lines().next().unwrap_or("").to_string())
        .unwrap_or_default()
}

fn starting_with(words: Vec<(String, String)>, partial: &str) -> Vec<(String, String)> {
    words
        .into_iter()
        .filter(|(w, _)| w.starts_with(partial))
        .collect()
}

/// Prints [`answer`] for `args` on stdout, for `kubectl_complete-capi` and for the completer
/// script's `kubectl capi __complete`.
pub async fn print_answer(args: &[String]) {
    let answer = answer(args).await;
    // A closed pipe is the shell giving up; nothing to say about it.
    let _ = crate::output::Printer::plain(crate::settings::OutputFormat::Table).data(&answer);
}

/// The completion answer for `args` (the words after `kubectl capi`, the last being completed),
/// as kubectl reads it. Errors reaching the cluster are silent: completion offers nothing then.
pub async fn answer(args: &[String]) -> String {
    let (partial, typed) = match args.split_last() {
        Some((partial, typed)) => (partial.as_str(), typed),
        None => ("", &[][..]),
    };
    let (words, directive) = match offer(typed, partial) {
        Offer::Words(words) => (words, NO_FILE_COMPLETION),
        Offer::Files => (Vec::new(), DEFAULT),
        Offer::Contexts { kubeconfig, prefix } => {
            let names = contexts(typed, kubeconfig)
                .unwrap_or_default()
                .into_iter()
                .map(|(name, about)| (format!("{prefix}{name}"), about))
                .collect();
            (starting_with(names, partial), NO_FILE_COMPLETION)
        }
        Offer::ClusterNames => (
            starting_with(cluster_names(typed).await.unwrap_or_default(), partial),
            NO_FILE_COMPLETION,
        ),
    };
    let mut out = String::new();
    for (word, description) in words {
        match description.is_empty() {
            true => out.push_str(&format!("{word}\n")),
            false => out.push_str(&format!("{word}\t{description}\n")),
        }
    }
    out.push_str(&format!(":{directive}\n"));
    out
}

/// The global flags among the typed words (what is not understood is ignored).
fn typed_settings(typed: &[String]) -> Option<Settings> {
    let matches = Cli::command()
        .ignore_errors(true)
        .try_get_matches_from(std::iter::once("kubectl-capi".to_string()).chain(typed.to_vec()))
        .ok()?;
    let global = GlobalArgs::from_arg_matches(&matches).ok()?;
    Settings::from_args(&global).ok()
}

/// The contexts of the kubeconfig the typed flag `kubeconfig_id` names, else of the one
/// `--kubeconfig` (or the environment) names.
fn contexts(typed: &[String], kubeconfig_id: &str) -> Option<Vec<(String, String)>> {
    let settings = typed_settings(typed)?;
    let own = typed_value(typed, kubeconfig_id).map(std::path::PathBuf::from);
    let path = own.or(settings.connection.kubeconfig);
    let kubeconfig = crate::kube::read_kubeconfig(path.as_deref()).ok()?;
    Some(
        kubeconfig
            .contexts
            .into_iter()
            .map(|c| (c.name, String::new()))
            .collect(),
    )
}

/// The value typed for the flag whose id is `id` (`to_kubeconfig`: `--to-kubeconfig X` or
/// `--to-kubeconfig=X`), the last one given.
fn typed_value(typed: &[String], id: &str) -> Option<String> {
    let long = format!("--{}", id.replace('_', "-"));
    let mut found = None;
    let mut words = typed.iter();
    while let Some(word) = words.next() {
        if *word == long {
            found = words.next().cloned();
        } else if let Some(value) = word.strip_prefix(&format!("{long}=")) {
            found = Some(value.to_string());
        }
    }
    found
}

/// Cluster names in the typed scope, with one LIST (v1beta2, else v1beta1 on an older server),
/// each attempt bounded by a short timeout unless the user gave `--request-timeout`.
async fn cluster_names(typed: &[String]) -> Option<Vec<(String, String)>> {
    let mut settings = typed_settings(typed)?;
    settings
        .connection
        .request_timeout
        .get_or_insert(std::time::Duration::from_secs(5));
    let cluster = connect(&settings.connection).await.ok()?;
    let namespace = (!settings.scope.all_namespaces)
        .then(|| cluster.namespace(settings.scope.namespace.as_deref()));
    for version in crate::names::PREFERRED_VERSIONS {
        let resource = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(
                crate::names::CORE_GROUP,
                version,
                crate::names::CLUSTER,
            ),
            "clusters",
        );
        let api: Api<DynamicObject> = match &namespace {
            Some(ns) => Api::namespaced_with(cluster.client.clone(), ns, &resource),
            None => Api::all_with(cluster.client.clone(), &resource),
        };
        match api.list_metadata(&ListParams::default()).await {
            Ok(list) => {
                return Some(
                    list.items
                        .into_iter()
                        .filter_map(|c| {
                            let name = c.metadata.name?;
                            let where_ = c.metadata.namespace.unwrap_or_default();
                            Some((name, format!("Cluster in {where_}")))
                        })
                        .collect(),
                );
            }
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(_) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(offer: Offer) -> Vec<String> {
        match offer {
            Offer::Words(words) => words.into_iter().map(|(w, _)| w).collect(),
            other => panic!("words expected, got {other:?}"),
        }
    }

    fn typed(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn subcommands_flags_values_and_names() {
        assert_eq!(
            words(offer(&[], "")),
            [
                "ready",
                "pause",
                "resume",
                "move",
                "verify",
                "version",
                "completion"
            ]
        );
        assert_eq!(words(offer(&[], "re")), ["ready", "resume"]);
        assert!(words(offer(&typed(&["move"]), "--to-c")).contains(&"--to-context".to_string()));
        assert!(words(offer(&typed(&["ready"]), "--")).contains(&"--kubeconfig".to_string()));
        assert_eq!(
            words(offer(&typed(&["ready", "-o"]), "j")),
            ["json"],
            "an option's values"
        );
        let contexts = |kubeconfig, prefix: &str| Offer::Contexts {
            kubeconfig,
            prefix: prefix.into(),
        };
        assert_eq!(
            offer(&typed(&["move", "--to-context"]), ""),
            contexts("to_kubeconfig", "")
        );
        assert_eq!(
            offer(&typed(&["move"]), "--to-context=pr"),
            contexts("to_kubeconfig", "--to-context=")
        );
        assert_eq!(
            offer(&typed(&["--context"]), "s"),
            contexts("kubeconfig", "")
        );
        assert_eq!(
            words(offer(&typed(&["move"]), "--dry-run=")),
            ["--dry-run=none", "--dry-run=client", "--dry-run=server"]
        );
        assert_eq!(
            words(offer(&typed(&["move"]), "--dry-run=s")),
            ["--dry-run=server"]
        );
        assert_eq!(words(offer(&typed(&["ready"]), "-o=y")), ["-o=yaml"]);
        assert_eq!(
            words(offer(&typed(&["ready", "--color"]), "")),
            ["auto", "always", "never"]
        );
        assert_eq!(
            words(offer(&typed(&["completion"]), "")),
            ["bash", "zsh", "fish", "elvish", "powershell", "kubectl"]
        );
        assert_eq!(
            typed_value(
                &typed(&["move", "--to-kubeconfig", "k", "--to-context"]),
                "to_kubeconfig"
            ),
            Some("k".into())
        );
        assert_eq!(offer(&typed(&["move", "--journal"]), ""), Offer::Files);
        assert_eq!(
            offer(&typed(&["move", "--to-cluster"]), ""),
            Offer::ClusterNames,
            "a workload cluster of the source"
        );
        assert_eq!(
            offer(&typed(&["verify", "--from-context"]), ""),
            contexts("from_kubeconfig", "")
        );
        assert_eq!(
            offer(&typed(&["move", "--to-kubeconfig"]), ""),
            Offer::Files
        );
        assert_eq!(
            offer(&typed(&["--context", "prod", "ready"]), ""),
            Offer::ClusterNames,
            "a flag's value is not a subcommand"
        );
        assert_eq!(
            offer(&typed(&["pause", "-n", "ns1", "a"]), ""),
            Offer::ClusterNames
        );
        assert_eq!(words(offer(&typed(&["version"]), "")), Vec::<String>::new());
    }
}
