//! The shape of `src/`, held as tests: no import cycle between modules, every module says what
//! it owns in its first line, and every line a user sees goes through the printer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// Every `.rs` file under `src/` with its module path (`crate::mover::plan`).
fn modules() -> BTreeMap<String, PathBuf> {
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
    walk(Path::new(SRC), &mut files);
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(SRC).unwrap().with_extension("");
            let mut parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
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

/// The code of a file without its `#[cfg(test)] mod tests` (tests may reach anywhere).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// The module paths a file refers to through `crate::` and `super::` (including `use` groups).
fn references(module: &str, path: &Path) -> Vec<String> {
    let text = code(path);
    let is_dir_module = path.file_stem().is_some_and(|s| s == "mod" || s == "lib");
    let mut parent: Vec<&str> = module.split("::").collect();
    if !is_dir_module {
        parent.pop();
    }
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    for start in ["crate::", "super::"] {
        let mut at = 0;
        while let Some(i) = text[at..].find(start) {
            let begin = at + i;
            at = begin + start.len();
            if begin > 0 && (bytes[begin - 1].is_ascii_alphanumeric() || bytes[begin - 1] == b'_') {
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
                parent.clone()
            };
            while segments.first() == Some(&"super") {
                segments.remove(0);
                base.pop();
            }
            base.extend(segments);
            found.push(base.join("::"));
            // `use super::{a, b::c}`: each item of the group.
            if text[end..].starts_with('{') {
                let group_end = text[end..].find('}').map_or(end, |j| end + j);
                for item in text[end + 1..group_end].split(',') {
                    let item = item.split("::").next().unwrap_or("").trim();
                    if !item.is_empty() && item != "self" {
                        found.push(format!("{}::{item}", base.join("::")));
                    }
                }
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
    let modules = modules();
    let top = |m: &str| m.split("::").take(2).collect::<Vec<_>>().join("::");
    let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut tops: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, path) in &modules {
        for reference in references(module, path) {
            let Some(target) = resolve(&reference, &modules) else {
                continue;
            };
            // A module using what its own parent declares or re-exports is not a cycle.
            if target == *module || module.starts_with(&format!("{target}::")) {
                continue;
            }
            files
                .entry(module.clone())
                .or_default()
                .insert(target.clone());
            if top(module) != top(&target) && target != "crate" {
                tops.entry(top(module)).or_default().insert(top(&target));
            }
        }
    }
    assert!(
        files
            .get("crate::mover::preflight")
            .is_some_and(|t| t.contains("crate::ready")),
        "the scan sees references: {files:?}"
    );
    assert_eq!(cycles(&files), Vec::<Vec<String>>::new(), "between files");
    assert_eq!(
        cycles(&tops),
        Vec::<Vec<String>>::new(),
        "between top-level modules"
    );
}

#[test]
fn every_module_says_what_it_owns_and_only_the_printer_prints() {
    for (module, path) in modules() {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("//! "),
            "{module} starts with a one-line comment saying what it owns"
        );
        if module != "crate::output::printer" {
            for call in ["eprintln!", "eprint!", "println!", "print!("] {
                assert!(
                    !code(&path).contains(call),
                    "{module} writes with {call}; every line goes through the Printer"
                );
            }
        }
    }
}
