//! krew's validation rules for a plugin manifest, applied to every manifest the suite renders.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

/// krew's `ValidatePlugin` and `validate-krew-manifest` rules; returns every violation.
pub fn krew_violations(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let manifest: Value = serde_saphyr::from_str(&text).unwrap();
    let mut errors = Vec::new();
    let mut check = |ok: bool, what: &str| {
        if !ok {
            errors.push(what.to_string());
        }
    };
    check(
        path.extension().is_some_and(|e| e == "yaml"),
        "file extension .yaml",
    );
    check(
        manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2",
        "apiVersion",
    );
    check(manifest["kind"] == "Plugin", "kind Plugin");
    let name = manifest["metadata"]["name"].as_str().unwrap_or("");
    check(
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-'),
        "name matches ^[\\w-]+$",
    );
    check(
        Some(name) == path.file_stem().and_then(|s| s.to_str()),
        "name equals the file name",
    );
    let reserved = [
        "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "LPT1", "LPT2", "LPT3",
    ];
    check(
        !reserved.contains(&name.to_uppercase().as_str()),
        "not a Windows reserved name",
    );
    let spec = &manifest["spec"];
    let short = spec["shortDescription"].as_str().unwrap_or("");
    check(
        !short.is_empty() && !short.contains('\n'),
        "shortDescription is one non-empty line",
    );
    check(short.len() <= 50, "shortDescription within 50 characters");
    let version = spec["version"].as_str().unwrap_or("");
    let semver = version.strip_prefix('v').is_some_and(|v| {
        let core = v.split(['-', '+']).next().unwrap_or("");
        let parts: Vec<&str> = core.split('.').collect();
        parts.len() == 3
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    });
    check(semver, "version is semver with a leading v");
    let platforms = spec["platforms"].as_array().cloned().unwrap_or_default();
    check(!platforms.is_empty(), "at least one platform");
    let supported: BTreeSet<(&str, &str)> = [
        ("windows", "386"),
        ("windows", "amd64"),
        ("windows", "arm64"),
        ("linux", "386"),
        ("linux", "amd64"),
        ("linux", "arm"),
        ("linux", "arm64"),
        ("linux", "ppc64le"),
        ("darwin", "386"),
        ("darwin", "amd64"),
        ("darwin", "arm64"),
    ]
    .into_iter()
    .collect();
    let mut covered: Vec<BTreeSet<(String, String)>> = Vec::new();
    for (i, platform) in platforms.iter().enumerate() {
        for field in ["uri", "sha256", "bin"] {
            check(
                platform[field].as_str().is_some_and(|s| !s.is_empty()),
                &format!("platform {i} has {field}"),
            );
        }
        let sha = platform["sha256"].as_str().unwrap_or("");
        check(
            sha.len() == 64
                && sha
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
            &format!("platform {i} sha256 is 64 lowercase hex"),
        );
        let labels = platform["selector"]["matchLabels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        check(
            !labels.is_empty() && platform["selector"].get("matchExpressions").is_none(),
            &format!("platform {i} has a selector"),
        );
        check(
            labels.keys().all(|k| k == "os" || k == "arch"),
            &format!("platform {i} selector uses only os/arch"),
        );
        if let Some(files) = platform.get("files") {
            let files = files.as_array().cloned().unwrap_or_default();
            check(
                !files.is_empty(),
                &format!("platform {i} files is absent or non-empty"),
            );
        }
        let matched: BTreeSet<(String, String)> = supported
            .iter()
            .filter(|(os, arch)| {
                labels.get("os").is_none_or(|v| v == os)
                    && labels.get("arch").is_none_or(|v| v == arch)
            })
            .map(|(o, a)| (o.to_string(), a.to_string()))
            .collect();
        check(
            !matched.is_empty(),
            &format!("platform {i} matches a supported os/arch"),
        );
        for earlier in &covered {
            check(
                earlier.is_disjoint(&matched),
                &format!("platform {i} overlaps an earlier selector"),
            );
        }
        covered.push(matched);
    }
    errors
}

/// The manifest at `path`, parsed, after krew's rules found nothing wrong with it.
pub fn accepted(path: &Path) -> Value {
    assert_eq!(
        krew_violations(path),
        Vec::<String>::new(),
        "{}",
        std::fs::read_to_string(path).unwrap()
    );
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_validator_catches_broken_manifests() {
    let out = tempfile::tempdir().unwrap();
    let (manifest, _) = super::packaging::render_every_platform(out.path());
    let text = std::fs::read_to_string(manifest).unwrap();
    let sum = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("sha256: "))
        .unwrap()
        .to_string();
    let broken = text
        .replacen(
            concat!("version: v", env!("CARGO_PKG_VERSION")),
            "version: 0.1",
            1,
        )
        .replacen("arch: arm64\n", "arch: amd64\n", 1)
        .replacen(&format!("sha256: {sum}"), "sha256: ABC", 1);
    let path = out.path().join("other.yaml");
    std::fs::write(&path, broken).unwrap();
    let errors = krew_violations(&path);
    for expected in [
        "name equals the file name",
        "version is semver with a leading v",
        "platform 0 sha256 is 64 lowercase hex",
        "platform 1 overlaps an earlier selector",
    ] {
        assert!(
            errors.iter().any(|e| e == expected),
            "{expected} in {errors:?}"
        );
    }
}
