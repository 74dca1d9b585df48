//! Rules of the code's shape beyond imports: every module says what it owns, only the printer
//! prints, only the command line knows clap, Cluster API vocabulary has one home, `mod.rs` and
//! `lib.rs` only wire, and neighbours are told apart by more than a letter.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::exceptions::{Rule, excepted};
use super::reading::{SANDBOX_SRC, SRC, TOOLS_SRC, code, modules, modules_under, test_only};

/// Every way of writing to the terminal or ending the process that bypasses the printer (read
/// with the space between a macro's `!` and its `(` taken out): clap's `parse()` and
/// `get_matches()` print and exit on a usage error themselves.
const PRINTING: &[&str] = &[
    "eprintln!(",
    "eprint!(",
    "println!(",
    "print!(",
    "dbg!(",
    "stdout()",
    "stderr()",
    ".print()",
    ".print_help(",
    ".print_long_help(",
    "::parse()",
    "::parse_from(",
    ".get_matches()",
    ".get_matches_from(",
];

/// The ways of [`PRINTING`] that `code` uses.
fn print_paths(code: &str) -> Vec<&'static str> {
    let mut joined = String::with_capacity(code.len());
    let mut rest = code;
    // `print! (` is `print!(`.
    while let Some(bang) = rest.find('!') {
        joined.push_str(&rest[..=bang]);
        rest = rest[bang + 1..].trim_start();
    }
    joined.push_str(rest);
    PRINTING
        .iter()
        .copied()
        .filter(|call| joined.contains(call))
        .collect()
}

#[test]
fn every_path_to_the_terminal_is_seen() {
    for code in [
        "print! (\"x\")",
        "println!\n(\"x\")",
        "let out = stdout(); out.lock();",
        "std::io::stderr().write_all(b\"x\")",
        "let cli = Cli::parse();",
        "let m = command.get_matches();",
        "Cli::parse_from([\"x\"])",
    ] {
        assert!(!print_paths(code).is_empty(), "{code}");
    }
    for code in [
        "let n: u8 = s.parse()?;",
        "s.parse::<u16>()",
        "command.try_get_matches_from(args)",
        "if !done { x }",
    ] {
        assert_eq!(print_paths(code), Vec::<&str>::new(), "{code}");
    }
}

#[test]
fn every_module_says_what_it_owns_and_only_the_printer_prints() {
    let mut broken = Vec::new();
    for root in [SRC, SANDBOX_SRC, TOOLS_SRC] {
        for (module, path) in modules_under(root) {
            let text = std::fs::read_to_string(&path).unwrap();
            if !text.starts_with("//! ") {
                broken.push(format!(
                    "{}: no first line saying what it owns",
                    path.display()
                ));
            }
            let code = code(&path);
            if !excepted(&path, Rule::EndsTheProcess) && code.contains("process::exit") {
                broken.push(format!(
                    "{module} ends the process itself; only main.rs maps an ExitStatus to the exit code"
                ));
            }
            if !excepted(&path, Rule::Prints) {
                for call in print_paths(&code) {
                    broken.push(format!(
                        "{}: writes with {call}; every line goes through the Printer",
                        path.display()
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The plugin's rooms that may name clap: the command line and the commands that hand argv to
/// it. Below them flags arrive resolved: as `choices`, `settings` and each command's request.
const KNOWS_CLAP: &[&str] = &["crate::cli", "crate::commands", "main"];

/// Whether `code` names clap (`use clap::…`, `clap::Error`, `clap_complete`).
fn names_clap(code: &str) -> bool {
    code.contains("clap::") || code.contains("clap_complete")
}

/// Whether `module` may read the command line's types: the commands, `settings` and each
/// command's request, where flags are resolved.
fn resolves_flags(module: &str) -> bool {
    module.starts_with("crate::cli")
        || module.starts_with("crate::commands")
        || module == "crate::settings"
        || module.ends_with("::request")
}

#[test]
fn only_the_command_line_knows_clap() {
    assert!(names_clap("use clap::ValueEnum;") && !names_clap("// clap spells it"));
    assert!(resolves_flags("crate::ready::request") && !resolves_flags("crate::mover::plan"));
    let mut broken = Vec::new();
    for (module, path) in modules() {
        let code = code(&path);
        let room = module.split("::").take(2).collect::<Vec<_>>().join("::");
        if names_clap(&code) && !KNOWS_CLAP.contains(&room.as_str()) {
            broken.push(format!(
                "{module} names clap; take a resolved value (`choices`, a request) instead"
            ));
        }
        if code.contains("crate::cli") && !resolves_flags(&module) {
            broken.push(format!(
                "{module} reads the command line; resolve the flag in the command's request"
            ));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// How Cluster API's names may not be spelled outside `src/names.rs`, and what to use instead.
const SPELLINGS: &[(&str, &str)] = &[
    (
        "x-k8s.io",
        "a group, annotation, label or type constant of names.rs",
    ),
    ("\"Cluster\"", "names::CLUSTER / is_core_cluster"),
    ("\"ClusterClass\"", "names::CLUSTER_CLASS"),
    ("\"Machine\"", "names::MACHINE"),
    ("\"MachineDeployment\"", "names::MACHINE_DEPLOYMENT"),
    ("\"MachineSet\"", "names::MACHINE_SET"),
    ("\"MachinePool\"", "names::MACHINE_POOL"),
    ("\"MachineHealthCheck\"", "names::MACHINE_HEALTH_CHECK"),
    ("\"Provider\"", "names::PROVIDER_KIND"),
    ("\"providers\"", "names::PROVIDER_PLURAL"),
    ("coordination.k8s.io", "names::LEASE_GROUP"),
    ("app.kubernetes.io/managed-by", "names::MANAGED_BY_LABEL"),
    ("\"kubectl-capi-", "a prefix or name constant of names.rs"),
    ("\"v1beta1\"", "names::V1BETA1"),
    ("\"v1beta2\"", "names::V1BETA2 / PREFERRED_VERSIONS"),
    (
        "kubectl-capi.dev/",
        "a label or annotation constant of names.rs",
    ),
    ("\"kubectl-capi/v1\"", "names::DOCUMENT_API_VERSION"),
    (".rsplit('/')", "names::group_and_version"),
    ("api_version.split", "names::group_and_version"),
];

#[test]
fn cluster_api_vocabulary_has_one_home() {
    let modules = modules();
    let mut spelled_elsewhere = Vec::new();
    for (module, path) in &modules {
        if excepted(path, Rule::Vocabulary) || test_only(module, &modules) {
            continue;
        }
        let code = code(path);
        for (number, line) in code.lines().enumerate() {
            for (spelled, instead) in SPELLINGS {
                if line.contains(spelled) {
                    spelled_elsewhere.push(format!(
                        "{module}:{}: {} — use {instead}",
                        number + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        spelled_elsewhere.is_empty(),
        "Cluster API's names live in crate::names:\n{}",
        spelled_elsewhere.join("\n")
    );
}

/// What `code` (a `mod.rs` or `lib.rs`) holds besides declarations of modules in their own files
/// (`mod x;`) and re-exports (`use …;`), a statement a line.
fn logic_in_wiring(code: &str) -> Vec<String> {
    let mut logic = Vec::new();
    let mut statement = String::new();
    for line in code.lines().map(str::trim).filter(|l| !l.is_empty()) {
        statement.push_str(line);
        statement.push(' ');
        if !line.ends_with(';') {
            continue;
        }
        let item = statement
            .trim()
            .trim_start_matches("#[cfg(test)]")
            .trim_start();
        let item = item
            .strip_prefix("pub(crate) ")
            .or_else(|| item.strip_prefix("pub "))
            .unwrap_or(item);
        // `mod x;` only: an inline `mod x { … }` is logic in the wiring.
        let declares = item.strip_prefix("mod ").is_some_and(|rest| {
            rest.strip_suffix(';')
                .is_some_and(|name| name.trim().chars().all(|c| c.is_alphanumeric() || c == '_'))
        });
        if !(declares || item.starts_with("use ")) {
            logic.push(statement.trim().to_string());
        }
        statement.clear();
    }
    if !statement.trim().is_empty() {
        logic.push(statement.trim().to_string());
    }
    logic
}

#[test]
fn wiring_is_declarations_and_re_exports_only() {
    assert!(logic_in_wiring("pub mod a;\n#[cfg(test)]\nmod b;\npub use a::{c, d};\n").is_empty());
    for logic in [
        "mod inner {\n    fn f() {\n        let x = 1;\n    }\n}\n",
        "pub mod a;\nfn run() {}\n",
        "pub const N: usize = 1;\n",
    ] {
        assert!(!logic_in_wiring(logic).is_empty(), "{logic}");
    }
}

#[test]
fn mod_rs_and_lib_rs_files_only_wire() {
    let mut logic = Vec::new();
    for root in [SRC, SANDBOX_SRC, TOOLS_SRC] {
        for (module, path) in modules_under(root) {
            let wiring = path
                .file_name()
                .is_some_and(|name| name == "mod.rs" || name == "lib.rs");
            if wiring {
                for statement in logic_in_wiring(&code(&path)) {
                    logic.push(format!("{module}: {statement}"));
                }
            }
        }
    }
    assert!(
        logic.is_empty(),
        "mod.rs and lib.rs files declare and re-export; their logic belongs in a named file:\n{}",
        logic.join("\n")
    );
}

/// Whether one name is the other with one letter more (`request`, `requests`; `write`, `writes`).
fn a_letter_apart(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
    long.len() == short.len() + 1
        && (0..long.len()).any(|i| {
            long.is_char_boundary(i) && {
                let mut without = long.to_string();
                without.remove(i);
                without == short
            }
        })
}

#[test]
fn no_two_neighbours_are_named_a_letter_apart() {
    assert!(a_letter_apart("request", "requests") && a_letter_apart("writes", "write"));
    assert!(!a_letter_apart("plan", "planning") && !a_letter_apart("patch", "watch"));
    let mut close = Vec::new();
    for root in [SRC, SANDBOX_SRC, TOOLS_SRC] {
        let mut by_folder: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
        for path in modules_under(root).into_values() {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let (folder, name) = match stem.as_str() {
                "mod" => {
                    let folder = path.parent().unwrap();
                    let name = folder.file_name().unwrap().to_string_lossy().into_owned();
                    (folder.parent().unwrap().to_path_buf(), name)
                }
                _ => (path.parent().unwrap().to_path_buf(), stem),
            };
            by_folder.entry(folder).or_default().push(name);
        }
        for (folder, names) in by_folder {
            for (i, a) in names.iter().enumerate() {
                for b in &names[i + 1..] {
                    if a_letter_apart(a, b) {
                        close.push(format!("{}: {a} and {b}", folder.display()));
                    }
                }
            }
        }
    }
    assert!(
        close.is_empty(),
        "files beside each other are told apart by more than a letter:\n{}",
        close.join("\n")
    );
}
