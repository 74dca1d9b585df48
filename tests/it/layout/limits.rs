//! Files and functions stay readable: their lines are counted without tests and comments, and
//! none is over a limit (the last exception was split away; a new one is split, not listed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::reading::{
    SANDBOX_SRC, SRC, TOOLS_SRC, closing_brace, code, in_repository, modules_under, skip_literal,
    test_only,
};

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
        let close = closing_brace(bytes, open);
        let line = code[..start].lines().count() + 1;
        let lines = code[start..(close + 1).min(code.len())].lines().count();
        found.push((name, line, lines));
    }
    found
}

const MOST_LINES_PER_FILE: usize = 500;
const MOST_LINES_PER_FUNCTION: usize = 80;

/// Every function (`FILE::NAME`) and file of the three crates over its limit, with its lines.
fn over_the_limits() -> BTreeMap<String, usize> {
    let mut over = BTreeMap::new();
    for root in [SRC, SANDBOX_SRC, TOOLS_SRC] {
        let modules = modules_under(root);
        for (module, path) in &modules {
            let file = in_repository(path);
            // A module only tests declare is test code, held to a test file's length.
            if test_only(module, &modules) {
                let lines = std::fs::read_to_string(path).unwrap().lines().count();
                if lines > MOST_LINES_PER_TEST_FILE {
                    over.insert(file, lines);
                }
                continue;
            }
            let code = code(path);
            let lines = code.lines().count();
            if lines > MOST_LINES_PER_FILE {
                over.insert(file.clone(), lines);
            }
            for (name, _, lines) in function_lengths(&code) {
                if lines > MOST_LINES_PER_FUNCTION {
                    let longest = over.entry(format!("{file}::{name}")).or_insert(0);
                    *longest = (*longest).max(lines);
                }
            }
        }
    }
    over
}

#[test]
fn files_and_functions_stay_readable() {
    let over: Vec<String> = over_the_limits()
        .into_iter()
        .map(|(item, lines)| format!("{item}: {lines} lines; split it"))
        .collect();
    assert!(
        over.is_empty(),
        "no file over {MOST_LINES_PER_FILE} lines without its tests, no function over {MOST_LINES_PER_FUNCTION} (there are no exceptions):\n{}",
        over.join("\n")
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

const MOST_LINES_PER_TEST_FILE: usize = 1000;

#[test]
fn test_files_stay_readable_too() {
    let mut too_long = Vec::new();
    let mut read = 0;
    for dir in ["tests/it", "sandbox/tests/it", "sandbox/tools/tests"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for path in rust_files(&dir) {
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

/// Every `.rs` file under `dir`, in its subfolders too.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found
}
