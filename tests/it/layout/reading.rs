//! How the guard reads the crates: every file with its module path, its code without tests and
//! comments, and which modules only tests declare.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(super) const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
pub(super) const SANDBOX_SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sandbox/src");
pub(super) const TOOLS_SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sandbox/tools/src");

/// Every `.rs` file under `src/` with its module path (`crate::mover::graph::plan`).
pub(super) fn modules() -> BTreeMap<String, PathBuf> {
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

/// Where the brace closing the one at `open` stands (strings, chars and comments skipped), or
/// the end of `bytes` when it is never closed.
pub(super) fn closing_brace(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    let mut at = open;
    while at < bytes.len() {
        if let Some(length) = skip_literal(bytes, at) {
            at += length;
            continue;
        }
        match bytes[at] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return at;
                }
            }
            _ => {}
        }
        at += 1;
    }
    bytes.len()
}

/// `text` with every item under `#[cfg(test)]` left out, found by brace matching that skips
/// strings, chars and comments; comments are left out too.
pub(super) fn without_tests(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < bytes.len() {
        if text[at..].starts_with("#[cfg(test)]") {
            // The item after the attribute: to its `;` or to the brace closing its body.
            let mut i = at + "#[cfg(test)]".len();
            while i < bytes.len() {
                if let Some(length) = skip_literal(bytes, i) {
                    i += length;
                    continue;
                }
                match bytes[i] {
                    b'{' => {
                        i = closing_brace(bytes, i) + 1;
                        break;
                    }
                    b';' => {
                        i += 1;
                        break;
                    }
                    _ => i += 1,
                }
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

/// Whether `module` is declared under `#[cfg(test)]` by its parent (`#[cfg(test)] mod x;`).
pub(super) fn test_only(module: &str, modules: &BTreeMap<String, PathBuf>) -> bool {
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

/// `path` as the repository names it (`src/names.rs`).
pub(super) fn in_repository(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .to_string_lossy()
        .trim_start_matches('/')
        .to_string()
}
