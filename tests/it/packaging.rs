//! The krew manifest against krew's validation rules, and the release archive's contents.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The manifest's template (krew-release-bot's syntax); `plugin-manifest/capi.yaml` links to it.
const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/.krew.yaml");
const PACKAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/package.sh");

/// krew's `ValidatePlugin` and `validate-krew-manifest` rules; returns every violation.
fn krew_violations(path: &Path) -> Vec<String> {
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

/// The archive names the template has a platform for, at this version.
fn archive_names() -> Vec<String> {
    let version = concat!("v", env!("CARGO_PKG_VERSION"));
    std::fs::read_to_string(TEMPLATE)
        .unwrap()
        .lines()
        .filter(|l| l.trim_start().starts_with("{{addURIAndSha"))
        .map(|l| {
            let uri = l.split('"').nth(1).unwrap();
            uri.rsplit('/')
                .next()
                .unwrap()
                .replace("{{ .TagName }}", version)
        })
        .collect()
}

/// The manifest `package.sh --render-only` renders when every platform's archive is in `out`
/// (stand-ins whose sums are known).
fn render_every_platform(out: &Path) -> (std::path::PathBuf, Vec<(String, String)>) {
    let mut sums = Vec::new();
    for name in archive_names() {
        std::fs::write(out.join(&name), format!("archive {name}")).unwrap();
        let sum = format!("{:x}", Sha256::digest(format!("archive {name}").as_bytes()));
        sums.push((name, sum));
    }
    let run = std::process::Command::new("bash")
        .arg(PACKAGE)
        .arg("--render-only")
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    (out.join("capi.yaml"), sums)
}

#[test]
fn the_committed_manifest_is_a_template_that_says_so() {
    let template = std::fs::read_to_string(TEMPLATE).unwrap();
    assert!(template.starts_with("# The krew manifest of kubectl capi — a template"));
    assert!(!template.contains("sha256:"), "no sums presented as real");
    assert_eq!(archive_names().len(), 5, "a platform per release target");
    let linked = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/plugin-manifest/capi.yaml"
    ))
    .unwrap();
    assert_eq!(
        linked, template,
        "plugin-manifest/capi.yaml is the template"
    );
}

#[test]
fn the_rendered_manifest_passes_krew_validation_with_every_archive_sum() {
    let out = tempfile::tempdir().unwrap();
    let (manifest, sums) = render_every_platform(out.path());
    assert_eq!(krew_violations(&manifest), Vec::<String>::new());
    let text = std::fs::read_to_string(&manifest).unwrap();
    for (name, sum) in &sums {
        let uri = format!(
            "https://github.com/kubectl-capi/kubectl-capi/releases/download/v{}/{name}",
            env!("CARGO_PKG_VERSION")
        );
        assert!(
            text.contains(&format!("uri: {uri}\n    sha256: \"{sum}\"")),
            "{name}: {text}"
        );
    }
    let checksums = std::fs::read_to_string(out.path().join("checksums.txt")).unwrap();
    assert_eq!(checksums.lines().count(), sums.len(), "{checksums}");
}

#[test]
fn the_validator_catches_broken_manifests() {
    let out = tempfile::tempdir().unwrap();
    let (manifest, _) = render_every_platform(out.path());
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

#[test]
fn the_manifest_is_one_libc_family_with_a_short_description_and_the_crate_homepage() {
    let out = tempfile::tempdir().unwrap();
    let (manifest, _) = render_every_platform(out.path());
    let manifest: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    let spec = &manifest["spec"];
    let words = spec["shortDescription"]
        .as_str()
        .unwrap()
        .split(' ')
        .count();
    assert!(words <= 8, "a few words: {}", spec["shortDescription"]);
    let cargo =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let homepage = spec["homepage"].as_str().unwrap();
    assert!(
        cargo.contains(&format!("homepage = \"{homepage}\"")),
        "the manifest's homepage is the crate's"
    );
    let linux: BTreeSet<&str> = spec["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["selector"]["matchLabels"]["os"] == "linux")
        .map(|p| {
            let uri = p["uri"].as_str().unwrap();
            uri.rsplit('-').next().unwrap().trim_end_matches(".tar.gz")
        })
        .collect();
    assert_eq!(
        linux,
        BTreeSet::from(["musl"]),
        "every Linux archive links the same libc"
    );
}

/// `scripts/package.sh` for this build's plugin, as built for `target`, into `out`.
fn package(target: &str, out: &Path) -> std::process::Command {
    let mut command = std::process::Command::new("bash");
    command
        .arg(PACKAGE)
        .args([
            "--binary",
            env!("CARGO_BIN_EXE_kubectl-capi"),
            "--target",
            target,
            "--out",
        ])
        .arg(out);
    command
}

#[test]
fn the_package_script_refuses_a_binary_for_another_architecture() {
    let out = tempfile::tempdir().unwrap();
    let other = if cfg!(target_arch = "x86_64") {
        "aarch64-unknown-linux-musl"
    } else {
        "x86_64-unknown-linux-musl"
    };
    let run = package(other, out.path()).output().unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains(&format!("not for {other}")), "{stderr}");
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "nothing written"
    );
}

/// The host's target in the manifest's family (Linux archives are musl, static).
fn host_target() -> &'static str {
    if cfg!(target_arch = "x86_64") {
        "x86_64-unknown-linux-musl"
    } else {
        "aarch64-unknown-linux-musl"
    }
}

#[test]
fn the_package_script_packs_the_host_archive_and_renders_its_manifest() {
    let out = tempfile::tempdir().unwrap();
    let target = host_target();
    let run = package(target, out.path()).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let archive = out.path().join(format!(
        "kubectl-capi_v{}_{target}.tar.gz",
        env!("CARGO_PKG_VERSION")
    ));
    let sum = format!("{:x}", Sha256::digest(std::fs::read(&archive).unwrap()));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains(&format!("sha256 {sum}")), "{stdout}");

    let manifest = out.path().join("capi.yaml");
    assert_eq!(krew_violations(&manifest), Vec::<String>::new());
    let rendered: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let platforms = rendered["spec"]["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), 1, "only the archive that was built");
    assert_eq!(
        platforms[0]["sha256"],
        sum.as_str(),
        "the archive's own sum"
    );
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        platforms[0]["uri"],
        format!(
            "https://github.com/kubectl-capi/kubectl-capi/releases/download/v{version}/kubectl-capi_v{version}_{target}.tar.gz"
        )
        .as_str()
    );

    let listing = std::process::Command::new("tar")
        .arg("tzf")
        .arg(&archive)
        .output()
        .unwrap();
    let mut entries: Vec<String> = String::from_utf8_lossy(&listing.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    entries.sort();
    let bin = platforms[0]["bin"].as_str().unwrap();
    assert_eq!(
        entries,
        vec!["LICENSE", bin, "kubectl_complete-capi"],
        "the bin the manifest names, the completion executable and LICENSE, at the root"
    );
}

#[test]
fn the_demo_script_says_what_it_builds_and_shows_cargo_progress() {
    // A stand-in cargo on PATH records its arguments and stops the script there.
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("cargo");
    std::fs::write(&fake, "#!/bin/sh\necho \"cargo $*\" >&2\nexit 3\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let run = std::process::Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh"))
        .env("PATH", path)
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(3),
        "the build's failure ends the script"
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines[0].starts_with("building kubectl-capi and capi-sandbox"),
        "{stderr}"
    );
    assert_eq!(
        lines[1], "cargo build --locked -p kubectl-capi -p capi-sandbox",
        "cargo's own progress is shown (no --quiet)"
    );
}

#[test]
fn the_release_workflow_builds_every_platform_of_the_manifest() {
    let workflow: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/.github/workflows/release.yml"
        ))
        .unwrap(),
    )
    .unwrap();
    let built: BTreeSet<String> = workflow["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["target"].as_str().unwrap().to_string())
        .collect();
    let version = concat!("v", env!("CARGO_PKG_VERSION"));
    let listed: BTreeSet<String> = archive_names()
        .iter()
        .map(|name| {
            name.trim_start_matches(&format!("kubectl-capi_{version}_"))
                .trim_end_matches(".tar.gz")
                .to_string()
        })
        .collect();
    assert_eq!(built, listed);
    let publish = serde_json::to_string(&workflow["jobs"]["publish"]).unwrap();
    for step in [
        "scripts/package.sh --render-only --out dist",
        "dist/checksums.txt",
        "krew-release-bot",
    ] {
        assert!(publish.contains(step), "{step} in {publish}");
    }
}
