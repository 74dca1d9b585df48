//! Imports as arrows: no module imports one that imports it back, and at every folder level no
//! two rooms (a folder's files and subfolders) import each other, in the plugin, the sandbox and
//! its tools.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::reading::{
    SANDBOX_SRC, TOOLS_SRC, closing_brace, code, modules, modules_under, skip_literal, test_only,
};

/// The module paths a file refers to through `crate::` and `super::` (including `use` groups).
fn references(module: &str, path: &Path) -> Vec<String> {
    references_in(module, &code(path))
}

/// The inline modules of `text` (`mod inner { … }`): where each body opens and closes, and its
/// name.
fn inline_modules(text: &str) -> Vec<(usize, usize, String)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if let Some(length) = skip_literal(bytes, at) {
            at += length;
            continue;
        }
        let word_starts =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        if word_starts && text[at..].starts_with("mod ") {
            let rest = text[at + 4..].trim_start();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let after = rest[name.len()..].trim_start();
            if !name.is_empty() && after.starts_with('{') {
                let brace = text.len() - after.len();
                found.push((brace, closing_brace(bytes, brace), name));
            }
        }
        at += 1;
    }
    found
}

/// The module paths `text`, the code of `module`, refers to through `crate::` and `super::`: a
/// `super::` inside an inline module is the module around that one.
fn references_in(module: &str, text: &str) -> Vec<String> {
    let inline = inline_modules(text);
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
                // Where this `super::` stands: the file's module, then the inline modules
                // around it, outermost first.
                let mut here: Vec<&str> = module.split("::").collect();
                let mut around: Vec<&(usize, usize, String)> = inline
                    .iter()
                    .filter(|(open, close, _)| *open < begin && begin < *close)
                    .collect();
                around.sort_by_key(|(open, _, _)| *open);
                here.extend(around.iter().map(|(_, _, name)| name.as_str()));
                here
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

#[test]
fn super_in_an_inline_module_is_the_module_around_it() {
    let text = "use super::a;\nmod inner {\n    use super::b;\n    fn f() { let s = \"}\"; }\n    mod deeper { use super::super::c; }\n}\nuse super::d;\n";
    assert_eq!(
        references_in("crate::x::y", text),
        vec![
            "crate::x::a",
            "crate::x::y::b",
            "crate::x::y::c",
            "crate::x::d"
        ]
    );
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
    // Every folder above a module, however deep.
    let folders: BTreeSet<&str> = files
        .keys()
        .chain(files.values().flatten())
        .flat_map(|m| m.match_indices("::").map(|(at, _)| &m[..at]))
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

#[test]
fn rooms_that_import_each_other_are_found_at_any_depth() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in pairs {
            files
                .entry(from.to_string())
                .or_default()
                .insert(to.to_string());
        }
        files
    };
    // `a::x` and `a::y` tie through files deeper in each, never file to file in a loop.
    let knotted = edges(&[
        ("crate::a::x::one", "crate::a::y::two"),
        ("crate::a::y::three", "crate::a::x::four"),
        ("crate::a::x::four", "crate::b"),
    ]);
    let knots = room_cycles(&knotted);
    assert_eq!(knots.len(), 1, "{knots:?}");
    assert!(
        knots[0].starts_with("crate::a::x, crate::a::y:"),
        "{knots:?}"
    );
    assert!(knots[0].contains("crate::a::y::three -> crate::a::x::four"));
    let downward = edges(&[
        ("crate::a::x::one", "crate::a::y::two"),
        ("crate::a::x::four", "crate::a::y::three"),
    ]);
    assert!(room_cycles(&downward).is_empty());
}
