//! The user's documentation: a README read in minutes, the rest in `docs/`, every relative link
//! leading somewhere, and no lab notes (commit hashes, times of day) in what users read.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README, the changelog and every page of `docs/`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Markdown links `[text](target)` of `text`, without external ones.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    for piece in text.split("](").skip(1) {
        let Some(end) = piece.find(')') else { continue };
        let target = &piece[..end];
        if !target.contains("://") && !target.starts_with("mailto:") {
            links.push(target.to_string());
        }
    }
    links
}

/// GitHub's anchor for a heading: lower case, spaces to dashes, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn the_readme_is_read_in_minutes_and_the_rest_has_its_page() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; move detail into docs/"
    );
    for page in [
        "docs/usage.md",
        "docs/ready.md",
        "docs/pause-resume.md",
        "docs/move.md",
        "docs/verify.md",
        "docs/safety.md",
        "docs/threat-model.md",
        "docs/benchmark.md",
        "docs/sandbox.md",
        "docs/development.md",
        "docs/releasing.md",
        "CHANGELOG.md",
    ] {
        assert!(
            readme.contains(&format!("]({page}")),
            "the README links {page}"
        );
    }
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading_that_exist() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for link in relative_links(&text) {
            let (file, heading) = link.split_once('#').unwrap_or((&link, ""));
            let target = match file {
                "" => page.clone(),
                file => page.parent().unwrap().join(file),
            };
            if !target.exists() {
                broken.push(format!("{}: {link}", page.display()));
                continue;
            }
            if !heading.is_empty() && target.extension().is_some_and(|e| e == "md") {
                let headings: Vec<String> = std::fs::read_to_string(&target)
                    .unwrap()
                    .lines()
                    .filter_map(|l| l.strip_prefix('#'))
                    .map(|l| anchor(l.trim_start_matches('#')))
                    .collect();
                if !headings.iter().any(|h| h == heading) {
                    broken.push(format!("{}: {link} (no such heading)", page.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn no_lab_notes_in_what_users_read() {
    // A commit named by its hash: "commit 59e2399", "build 7fb3ffc".
    let names_a_commit = |line: &str| {
        let words: Vec<&str> = line
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        words.windows(2).any(|pair| {
            ["commit", "commits", "build"].contains(&pair[0])
                && (7..=40).contains(&pair[1].len())
                && pair[1].chars().all(|c| c.is_ascii_hexdigit())
                && pair[1].chars().any(|c| c.is_ascii_digit())
        })
    };
    let mut found = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (number, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if names_a_commit(&lower)
                || [
                    "in the evening",
                    "in the afternoon",
                    "that evening",
                    "that afternoon",
                ]
                .iter()
                .any(|note| lower.contains(note))
            {
                found.push(format!("{}:{}: {line}", page.display(), number + 1));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_anchor_rule_matches_githubs() {
    assert_eq!(anchor(" Capacity benchmark"), "capacity-benchmark");
    assert_eq!(
        anchor("`kubectl capi verify` and `move --verify`"),
        "kubectl-capi-verify-and-move---verify"
    );
}

/// Every subcommand's `--help` ends with kubectl-style examples, and every example is a command
/// the plugin's own parser accepts as written.
#[test]
fn every_help_ends_with_examples_the_parser_accepts() {
    use clap::{CommandFactory, Parser};
    let command = kubectl_capi::cli::with_exit_codes(kubectl_capi::cli::Cli::command());
    for sub in command.get_subcommands() {
        let name = sub.get_name();
        if name == "help" {
            continue;
        }
        let help = sub.clone().render_long_help().to_string();
        let examples = help
            .rsplit_once("Examples:\n")
            .unwrap_or_else(|| panic!("`{name} --help` ends with examples:\n{help}"))
            .1;
        let commands: Vec<&str> = examples
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("kubectl capi "))
            .collect();
        assert!(!commands.is_empty(), "{name}: {examples}");
        for example in commands {
            let words = shlex::split(example.split(" > ").next().unwrap()).unwrap();
            let argv =
                std::iter::once("kubectl-capi".to_string()).chain(words[2..].iter().cloned());
            if let Err(e) = kubectl_capi::cli::Cli::try_parse_from(argv) {
                panic!("{name}: `{example}` does not parse: {e}");
            }
        }
    }
}
