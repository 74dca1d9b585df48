//! The GitHub workflows, read as GitHub reads them: every runner they name is one kept in
//! `.github/runner-labels.txt` (with the date it was last checked), the release waits for the CI
//! jobs, and CI runs the suite on Linux and builds on macOS and Windows.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn workflow(name: &str) -> Value {
    let path = root().join(".github/workflows").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The labels a job runs on: its `runs-on`, with `${{ matrix.os }}` read from its matrix.
fn runners(job: &Value) -> Vec<String> {
    match job["runs-on"].as_str() {
        Some("${{ matrix.os }}") => {
            let matrix = &job["strategy"]["matrix"];
            let listed = matrix["os"].as_array().cloned().unwrap_or_default();
            let included = matrix["include"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| i["os"].clone());
            listed
                .into_iter()
                .chain(included)
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        }
        Some(label) => vec![label.to_string()],
        None => Vec::new(),
    }
}

#[test]
fn every_runner_a_workflow_names_is_in_the_kept_list() {
    let kept_text = std::fs::read_to_string(root().join(".github/runner-labels.txt")).unwrap();
    assert!(
        kept_text
            .lines()
            .any(|l| l.starts_with('#') && l.contains("Checked") && l.contains("20")),
        "the list says when it was checked"
    );
    let kept: BTreeSet<&str> = kept_text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut named = 0;
    for name in ["ci.yml", "release.yml"] {
        let flow = workflow(name);
        for (job, spec) in flow["jobs"].as_object().unwrap() {
            for label in runners(spec) {
                named += 1;
                assert!(
                    kept.contains(label.as_str()),
                    "{name} job {job} runs on {label}, not in .github/runner-labels.txt"
                );
            }
        }
    }
    assert!(named >= 8, "every matrix read: {named}");
}

#[test]
fn the_release_waits_for_ci_and_ci_covers_every_platform() {
    let release = workflow("release.yml");
    assert_eq!(release["jobs"]["ci"]["uses"], "./.github/workflows/ci.yml");
    assert_eq!(release["jobs"]["build"]["needs"], "ci");
    let ci = workflow("ci.yml");
    assert!(ci["on"]["workflow_call"].is_null() && ci["on"].get("workflow_call").is_some());
    let linux = ci["jobs"]["linux"]["steps"].to_string();
    assert!(
        linux.contains("./.ci/run") && linux.contains("kubectl"),
        "{linux}"
    );
    let built: BTreeSet<String> = runners(&ci["jobs"]["build"]).into_iter().collect();
    assert!(
        built.iter().any(|l| l.starts_with("macos"))
            && built.iter().any(|l| l.starts_with("windows")),
        "{built:?}"
    );
}

/// The publish job's steps, by name.
fn publish_step<'a>(release: &'a Value, name: &str) -> &'a Value {
    release["jobs"]["publish"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .unwrap_or_else(|| panic!("a publish step named {name}"))
}

#[test]
fn the_first_release_is_submitted_by_hand_and_later_ones_by_the_bot() {
    let release = workflow("release.yml");
    let asks = publish_step(&release, "Is capi in krew-index already?");
    assert_eq!(asks["id"], "index");
    let question = asks["run"].as_str().unwrap();
    for answer in [
        "200) echo \"listed=true\"",
        "404) echo \"listed=false\"",
        "exit 1",
    ] {
        assert!(question.contains(answer), "{answer} in {question}");
    }
    let later = publish_step(&release, "Later releases");
    assert_eq!(later["if"], "steps.index.outputs.listed == 'true'");
    assert!(
        later["uses"]
            .as_str()
            .unwrap()
            .starts_with("rajatjindal/krew-release-bot@")
    );
    let first = publish_step(&release, "First release");
    assert_eq!(first["if"], "steps.index.outputs.listed == 'false'");
    let summary = first["run"].as_str().unwrap();
    assert!(
        summary.contains("GITHUB_STEP_SUMMARY") && summary.contains("\\\"Releasing\\\""),
        "{summary}"
    );

    assert!(summary.contains("docs/releasing.md"), "{summary}");
    let page = std::fs::read_to_string(root().join("docs/releasing.md")).unwrap();
    let section = page
        .split("## Releasing\n")
        .nth(1)
        .expect("docs/releasing.md has a Releasing section")
        .split("\n#")
        .next()
        .unwrap();
    for step in [
        "**The first release** goes to krew-index by hand",
        "kubectl krew install --manifest=capi.yaml",
        "`kubernetes-sigs/krew-index` adding it as `plugins/capi.yaml`",
        "**Later releases**",
        "krew-release-bot",
    ] {
        assert!(
            section.contains(step),
            "{step} in docs/releasing.md's Releasing"
        );
    }
}
