//! The shape of both crates, held as tests: no import cycle between modules (a parent and its
//! children included: `mod.rs` files only wire), every module says what it owns in its first
//! line, only the printer prints, Cluster API vocabulary has one home, and files, functions and
//! test files stay readable. What may break a rule is in [`EXCEPTIONS`], with the reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
const SANDBOX_SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sandbox/src");
const TOOLS_SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sandbox/tools/src");

/// Every `.rs` file under `src/` with its module path (`crate::mover::graph::plan`).
fn modules() -> BTreeMap<String, PathBuf> {
    modules_under(SRC)
}

/// Every `.rs` file under `root` with its module path; `src/bin/*` files are crates of their
/// own, named `bin::NAME`.
pub(crate) fn modules_under(root: &str) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(Path::new(root), &mut files);
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(root).unwrap().with_extension("");
            let mut parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            // The binary's root is a crate of its own beside the library's.
            if parts == ["main"] {
                return ("main".to_string(), path);
            }
            if parts.len() == 2 && parts[0] == "bin" {
                return (format!("bin::{}", parts[1]), path);
            }
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            (
                std::iter::once("crate".to_string())
                    .chain(parts)
                    .collect::<Vec<_>>()
                    .join("::"),
                path,
            )
        })
        .collect()
}

/// The code of a file without its `#[cfg(test)]` items, wherever they are (tests may reach
/// anywhere), nor comments.
pub(crate) fn code(path: &Path) -> String {
    without_tests(&std::fs::read_to_string(path).unwrap())
}

/// How far the literal, comment or lifetime at `at` reaches (its length), if one starts there.
pub(crate) fn skip_literal(text: &[u8], at: usize) -> Option<usize> {
    let rest = &text[at..];
    let find = |from: usize, needle: &[u8]| {
        rest[from..]
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|i| from + i + needle.len())
            .unwrap_or(rest.len())
    };
    match rest {
        [b'/', b'/', ..] => Some(find(2, b"\n") - 1),
        [b'/', b'*', ..] => Some(find(2, b"*/")),
        [b'r', b'#' | b'"', ..] => {
            let hashes = rest[1..].iter().take_while(|b| **b == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                return None;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            Some(find(2 + hashes, &close))
        }
        [b'"', ..] => {
            let mut i = 1;
            while i < rest.len() && rest[i] != b'"' {
                i += if rest[i] == b'\\' { 2 } else { 1 };
            }
            Some((i + 1).min(rest.len()))
        }
        // A char literal ('{', '\''), not a lifetime ('a).
        [b'\'', b'\\', ..] => Some(find(3, b"'")),
        [b'\'', _, b'\'', ..] => Some(3),
        _ => None,
    }
}

/// `text` with every item under `#[cfg(test)]` left out, found by brace matching that skips
/// strings, chars and comments; comments are left out too.
fn without_tests(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < bytes.len() {
        if text[at..].starts_with("#[cfg(test)]") {
            // The item after the attribute: to its `;` or to the brace closing its body.
            let mut depth = 0usize;
            let mut i = at + "#[cfg(test)]".len();
            while i < bytes.len() {
                if let Some(length) = skip_literal(bytes, i) {
                    i += length;
                    continue;
                }
                match bytes[i] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    b';' if depth == 0 => {
                        i += 1;
                        break;
                    }
                    _ => {}
                }
                i += 1;
            }
            at = i;
            continue;
        }
        if let Some(length) = skip_literal(bytes, at) {
            let literal = &text[at..at + length];
            if !literal.starts_with("//") && !literal.starts_with("/*") {
                out.push_str(literal);
            }
            at += length;
            continue;
        }
        let next = text[at..].chars().next().unwrap();
        out.push(next);
        at += next.len_utf8();
    }
    out
}

#[test]
fn test_items_are_left_out_wherever_they_are() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() { let s = \"}\"; let c = '}'; }\n}\n// crate::x\nmod after { use crate::y; }\n#[cfg(test)]\nuse crate::z;\nfn c<'a>(x: &'a str) {}\n";
    let kept = without_tests(text);
    assert!(kept.contains("fn a()") && kept.contains("mod after { use crate::y; }"));
    assert!(kept.contains("fn c<'a>"));
    for gone in ["fn b", "crate::x", "crate::z"] {
        assert!(!kept.contains(gone), "{gone} left out: {kept}");
    }
}

/// The module paths a file refers to through `crate::` and `super::` (including `use` groups).
fn references(module: &str, path: &Path) -> Vec<String> {
    let text = code(path);
    // `super::` is the module above this one, whether it is a file or a directory's `mod.rs`.
    let here: Vec<&str> = module.split("::").collect();
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    for start in ["crate::", "super::"] {
        let mut at = 0;
        while let Some(i) = text[at..].find(start) {
            let begin = at + i;
            at = begin + start.len();
            // Inside a longer path (`super::super::x`, `a::crate::b`): that path was read whole.
            if begin > 0
                && (bytes[begin - 1].is_ascii_alphanumeric()
                    || bytes[begin - 1] == b'_'
                    || bytes[begin - 1] == b':')
            {
                continue;
            }
            // `pub(in crate::mover)` says who may see an item; it uses nothing.
            if text[..begin].ends_with("pub(in ") {
                continue;
            }
            let mut end = begin;
            while end < bytes.len()
                && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] == b':')
            {
                end += 1;
            }
            let path = text[begin..end].trim_end_matches(':');
            let mut segments: Vec<&str> = path.split("::").collect();
            let mut base: Vec<&str> = if segments[0] == "crate" {
                segments.remove(0);
                vec!["crate"]
            } else {
                here.clone()
            };
            while segments.first() == Some(&"super") {
                segments.remove(0);
                base.pop();
            }
            base.extend(segments);
            // `use super::{a, b::c}`: each item of the group (the base itself only as `self`).
            if text[end..].starts_with('{') {
                let group_end = text[end..].find('}').map_or(end, |j| end + j);
                for item in text[end + 1..group_end].split(',') {
                    let item = item.split("::").next().unwrap_or("").trim();
                    match item {
                        "" => {}
                        "self" => found.push(base.join("::")),
                        item => found.push(format!("{}::{item}", base.join("::"))),
                    }
                }
            } else {
                found.push(base.join("::"));
            }
        }
    }
    found
}

/// The longest module path that exists.
fn resolve(reference: &str, modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let parts: Vec<&str> = reference.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|candidate| modules.contains_key(candidate))
}

fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Two modules are in a cycle when each reaches the other.
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            for next in edges.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, seen) in &reachable {
        let mut cycle: Vec<String> = seen
            .iter()
            .filter(|other| reachable.get(other).is_some_and(|back| back.contains(*m)))
            .cloned()
            .collect();
        if !cycle.is_empty() {
            cycle.push((*m).clone());
            cycle.sort();
            cycle.dedup();
            found.insert(cycle);
        }
    }
    found.into_iter().collect()
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let files = module_cycles(&modules(), "the plugin");
    assert!(
        files
            .get("crate::mover::checks::preflight")
            .is_some_and(|t| t.contains("crate::ready")),
        "the scan sees references: {files:?}"
    );
    let files = module_cycles(&modules_under(SANDBOX_SRC), "the sandbox");
    assert!(
        files
            .get("crate::apiserver::handler")
            .is_some_and(|t| t.iter().any(|m| m.starts_with("crate::apiserver::"))),
        "the scan sees the sandbox's references: {files:?}"
    );
    let files = module_cycles(&modules_under(TOOLS_SRC), "the sandbox's tools");
    assert!(
        files.contains_key("crate"),
        "the scan sees the tools' modules: {files:?}"
    );
}

/// Fails on any cycle between the files of `modules`, or between their top-level modules;
/// returns the edges between files.
fn module_cycles(
    modules: &BTreeMap<String, PathBuf>,
    which: &str,
) -> BTreeMap<String, BTreeSet<String>> {
    let top = |m: &str| m.split("::").take(2).collect::<Vec<_>>().join("::");
    let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut tops: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, path) in modules {
        // Test-only modules may reach anywhere, as tests inside a file may.
        if module == "main" || module.starts_with("bin::") || test_only(module, modules) {
            continue;
        }
        // A parent reaches each child it declares: a child that uses what its parent defines or
        // re-exports closes a cycle, so `mod.rs` files only declare and re-export.
        let children = modules
            .keys()
            .filter(|m| {
                m.rsplit_once("::")
                    .is_some_and(|(parent, _)| parent == module)
            })
            .filter(|m| !test_only(m, modules))
            .cloned();
        let targets = references(module, path)
            .into_iter()
            .filter_map(|reference| resolve(&reference, modules))
            .chain(children)
            .filter(|target| target != module);
        for target in targets {
            files
                .entry(module.clone())
                .or_default()
                .insert(target.clone());
            if top(module) != top(&target) {
                tops.entry(top(module)).or_default().insert(top(&target));
            }
        }
    }
    // What closes most cycles: a module using what an ancestor defines or re-exports.
    let upward: Vec<String> = files
        .iter()
        .flat_map(|(module, targets)| {
            targets
                .iter()
                .filter(move |t| *t == "crate" || module.starts_with(&format!("{t}::")))
                .map(move |t| format!("{module} uses {t}"))
        })
        .collect();
    assert_eq!(
        cycles(&files),
        Vec::<Vec<String>>::new(),
        "between files of {which}; modules using an ancestor:\n{}",
        upward.join("\n")
    );
    assert_eq!(
        cycles(&tops),
        Vec::<Vec<String>>::new(),
        "between top-level modules of {which}"
    );
    let knots = room_cycles(&files);
    assert!(
        knots.is_empty(),
        "rooms of one folder that import each other in {which}:\n{}",
        knots.join("\n")
    );
    files
}

/// Every folder's rooms (its files and subfolders, each taken whole) that import each other in
/// a loop, with the imports between files that tie each pair.
fn room_cycles(files: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let folders: BTreeSet<&str> = files
        .keys()
        .chain(files.values().flatten())
        .filter_map(|m| m.rsplit_once("::").map(|(parent, _)| parent))
        .collect();
    let mut knots = Vec::new();
    for folder in folders {
        let prefix = format!("{folder}::");
        let room = |m: &str| {
            m.strip_prefix(&prefix)
                .map(|rest| format!("{prefix}{}", rest.split("::").next().unwrap()))
        };
        let mut rooms: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut behind: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for (from, targets) in files {
            let Some(from_room) = room(from) else {
                continue;
            };
            for to in targets {
                let Some(to_room) = room(to) else { continue };
                if from_room != to_room {
                    rooms
                        .entry(from_room.clone())
                        .or_default()
                        .insert(to_room.clone());
                    behind
                        .entry((from_room.clone(), to_room))
                        .or_default()
                        .push(format!("{from} -> {to}"));
                }
            }
        }
        for cycle in cycles(&rooms) {
            let ties: Vec<String> = behind
                .iter()
                .filter(|((a, b), _)| cycle.contains(a) && cycle.contains(b))
                .flat_map(|(_, imports)| imports.iter().map(|i| format!("    {i}")))
                .collect();
            knots.push(format!("{}:\n{}", cycle.join(", "), ties.join("\n")));
        }
    }
    knots
}

/// What a rule below may not hold for, and why: the one list of exceptions (file, rule, reason).
const EXCEPTIONS: &[(&str, Rule, &str)] = &[
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
enum Rule {
    Prints,
    EndsTheProcess,
    Vocabulary,
}

/// Whether the file at `path` is excepted from `rule` (see [`EXCEPTIONS`]).
fn excepted(path: &Path, rule: Rule) -> bool {
    let file = in_repository(path);
    EXCEPTIONS.iter().any(|(f, r, _)| *f == file && *r == rule)
}

/// `path` as the repository names it (`src/names.rs`).
fn in_repository(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .to_string_lossy()
        .trim_start_matches('/')
        .to_string()
}

/// Every way of writing to the terminal or ending the process that bypasses the printer.
const PRINTING: &[&str] = &[
    "eprintln!",
    "eprint!",
    "println!",
    "print!(",
    "dbg!",
    "io::stdout()",
    "io::stderr()",
    ".print()",
    ".print_help(",
    ".print_long_help(",
];

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
                for call in PRINTING.iter().filter(|call| code.contains(*call)) {
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

#[test]
fn the_exceptions_are_files_that_exist() {
    for (file, rule, why) in EXCEPTIONS {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        assert!(path.is_file(), "{file} ({rule:?}: {why}) exists");
        assert!(!why.is_empty());
    }
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

/// Whether `module` is declared under `#[cfg(test)]` by its parent (`#[cfg(test)] mod x;`).
fn test_only(module: &str, modules: &BTreeMap<String, PathBuf>) -> bool {
    let Some((parent, name)) = module.rsplit_once("::") else {
        return false;
    };
    let Some(path) = modules.get(parent) else {
        return false;
    };
    let text = std::fs::read_to_string(path).unwrap();
    text.split("#[cfg(test)]").skip(1).any(|after| {
        let item = after.trim_start();
        let item = item.strip_prefix("pub ").unwrap_or(item);
        item.starts_with(&format!("mod {name};"))
    })
}

/// The functions of `code` (already without tests and comments) with their length in lines,
/// from the line of `fn` to the line of the brace that closes the body.
fn function_lengths(code: &str) -> Vec<(String, usize, usize)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = code[at..].find("fn ") {
        let start = at + offset;
        at = start + 3;
        let boundary =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let name: String = code[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !boundary || name.is_empty() {
            continue;
        }
        // The body: the first `{` at the signature's own depth, unless a `;` ends it first.
        let mut i = at;
        let mut parens = 0i32;
        let mut open = None;
        while i < bytes.len() {
            if let Some(length) = skip_literal(bytes, i) {
                i += length;
                continue;
            }
            match bytes[i] {
                b'(' | b'[' | b'<' => parens += 1,
                b')' | b']' => parens -= 1,
                b'>' if bytes[i - 1] != b'-' && bytes[i - 1] != b'=' => parens -= 1,
                b';' if parens <= 0 => break,
                b'{' if parens <= 0 => {
                    open = Some(i);
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        let Some(open) = open else { continue };
        let mut depth = 0usize;
        let mut close = open;
        while close < bytes.len() {
            if let Some(length) = skip_literal(bytes, close) {
                close += length;
                continue;
            }
            match bytes[close] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            close += 1;
        }
        let line = code[..start].lines().count() + 1;
        let lines = code[start..(close + 1).min(code.len())].lines().count();
        found.push((name, line, lines));
    }
    found
}

const MOST_LINES_PER_FILE: usize = 700;
const MOST_LINES_PER_FUNCTION: usize = 120;

#[test]
fn files_and_functions_stay_readable() {
    let mut too_long = BTreeMap::new();
    for root in [SRC, SANDBOX_SRC, TOOLS_SRC] {
        for (module, path) in modules_under(root) {
            let code = code(&path);
            let lines = code.lines().count();
            let file = in_repository(&path);
            if lines > MOST_LINES_PER_FILE {
                too_long.insert(file, format!("{lines} lines"));
            }
            for (name, line, lines) in function_lengths(&code) {
                if lines > MOST_LINES_PER_FUNCTION {
                    too_long.insert(
                        format!("{module}::{name}"),
                        format!("line {line}: {lines} lines"),
                    );
                }
            }
        }
    }
    assert!(
        too_long.is_empty(),
        "no file over {MOST_LINES_PER_FILE} lines without its tests, no function over {MOST_LINES_PER_FUNCTION}:\n{too_long:#?}"
    );
}

#[test]
fn a_long_function_is_measured_from_fn_to_its_closing_brace() {
    let code = "fn short() { let s = \"}\"; }\nfn long(x: Vec<u8>) -> Option<()>\nwhere\n    u8: Copy,\n{\n    if x.is_empty() {\n        return None;\n    }\n    Some(())\n}\ntrait T { fn f(&self); }\n";
    let found = function_lengths(code);
    assert_eq!(
        found,
        vec![("short".to_string(), 1, 1), ("long".to_string(), 2, 9),]
    );
}

#[test]
fn mod_rs_files_only_wire() {
    let mut logic = Vec::new();
    for root in [SRC, SANDBOX_SRC, TOOLS_SRC] {
        for (module, path) in modules_under(root) {
            if path.file_name().is_none_or(|name| name != "mod.rs") {
                continue;
            }
            let code = code(&path);
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
                if !(item.starts_with("mod ") || item.starts_with("use ")) {
                    logic.push(format!("{module}: {}", statement.trim()));
                }
                statement.clear();
            }
            if !statement.trim().is_empty() {
                logic.push(format!("{module}: {}", statement.trim()));
            }
        }
    }
    assert!(
        logic.is_empty(),
        "mod.rs files declare and re-export; their logic belongs in a named file:\n{}",
        logic.join("\n")
    );
}

const MOST_LINES_PER_TEST_FILE: usize = 1000;

#[test]
fn test_files_stay_readable_too() {
    let mut too_long = Vec::new();
    let mut read = 0;
    for dir in ["tests/it", "sandbox/tests/it", "sandbox/tools/tests"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            read += 1;
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            if lines > MOST_LINES_PER_TEST_FILE {
                too_long.push(format!("{}: {lines} lines", path.display()));
            }
        }
    }
    assert!(read > 20, "both suites read: {read} files");
    assert!(
        too_long.is_empty(),
        "no test file over {MOST_LINES_PER_TEST_FILE} lines (split it by what it tests):\n{}",
        too_long.join("\n")
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
