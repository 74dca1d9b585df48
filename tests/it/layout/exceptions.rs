//! What may break a rule of the guard, and why: the one list.

use std::path::Path;

use super::reading::in_repository;

/// What a rule below may not hold for, and why: the one list of exceptions (file, rule, reason).
pub(super) const EXCEPTIONS: &[(&str, Rule, &str)] = &[
    (
        "src/output/printer.rs",
        Rule::Prints,
        "the printer: every line a user sees goes through it",
    ),
    (
        "src/main.rs",
        Rule::EndsTheProcess,
        "the binary maps the command's ExitStatus to the exit code",
    ),
    (
        "sandbox/tools/src/bin/capi-sandbox.rs",
        Rule::Prints,
        "the sandbox's own binary, a developer's tool, not the plugin: it says what it serves",
    ),
    (
        "src/names.rs",
        Rule::Vocabulary,
        "the home of Cluster API's names",
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rule {
    Prints,
    EndsTheProcess,
    Vocabulary,
}

/// Whether the file at `path` is excepted from `rule` (see [`EXCEPTIONS`]).
pub(super) fn excepted(path: &Path, rule: Rule) -> bool {
    let file = in_repository(path);
    EXCEPTIONS.iter().any(|(f, r, _)| *f == file && *r == rule)
}

#[test]
fn the_exceptions_are_files_that_exist() {
    for (item, rule, why) in EXCEPTIONS {
        let file = item.split("::").next().unwrap();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        assert!(path.is_file(), "{file} ({rule:?}: {why}) exists");
        assert!(!why.is_empty());
    }
}
