//! The krew manifest's template, what the release renders from it, and the scripts beside it.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The manifest's template (krew-release-bot's syntax); `plugin-manifest/capi.yaml` links to it.
const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/.krew.yaml");
pub const PACKAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/package.sh");

/// The archive names the template has a platform for, at this version.
pub fn archive_names() -> Vec<String> {
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

/// The header of a binary for the platform of the archive `name` (its triple): what the script
/// reads of one — ELF's e_machine, Mach-O's cputype, PE's Machine.
fn stand_in_binary(name: &str) -> Vec<u8> {
    let arm = name.contains("aarch64");
    let mut bytes = vec![0u8; 128];
    if name.contains("linux") {
        bytes[..4].copy_from_slice(&[0x7f, b'E', b'L', b'F']);
        bytes[18..20].copy_from_slice(&(if arm { 183u16 } else { 62 }).to_le_bytes());
    } else if name.contains("darwin") {
        bytes[..4].copy_from_slice(&[0xcf, 0xfa, 0xed, 0xfe]);
        let cpu: u32 = if arm { 0x0100_000c } else { 0x0100_0007 };
        bytes[4..8].copy_from_slice(&cpu.to_le_bytes());
    } else {
        bytes[..2].copy_from_slice(b"MZ");
        bytes[60..64].copy_from_slice(&64u32.to_le_bytes());
        bytes[64..68].copy_from_slice(b"PE\0\0");
        bytes[68..70].copy_from_slice(&(if arm { 0xaa64u16 } else { 0x8664 }).to_le_bytes());
    }
    bytes
}

/// A gzip'd tar `out/name` holding, at its root and executable, a stand-in of the bin the
/// manifest names for its platform.
fn stand_in_archive(out: &Path, name: &str) {
    use std::os::unix::fs::PermissionsExt;
    let staging = out.join(format!(".staging-{name}"));
    std::fs::create_dir_all(&staging).unwrap();
    let bin = if name.contains("windows") {
        "kubectl-capi.exe"
    } else {
        "kubectl-capi"
    };
    std::fs::write(staging.join(bin), stand_in_binary(name)).unwrap();
    std::fs::set_permissions(staging.join(bin), std::fs::Permissions::from_mode(0o755)).unwrap();
    let packed = std::process::Command::new("tar")
        .arg("-czf")
        .arg(out.join(name))
        .arg("-C")
        .arg(&staging)
        .arg(bin)
        .status()
        .unwrap();
    assert!(packed.success());
    std::fs::remove_dir_all(&staging).unwrap();
}

/// The manifest `package.sh --render-only` renders when every platform's archive is in `out`
/// (stand-ins whose sums are known), after krew's rules accepted it.
pub fn render_every_platform(out: &Path) -> (std::path::PathBuf, Vec<(String, String)>) {
    let mut sums = Vec::new();
    for name in archive_names() {
        stand_in_archive(out, &name);
        let sum = format!(
            "{:x}",
            Sha256::digest(std::fs::read(out.join(&name)).unwrap())
        );
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
    let manifest = out.join("capi.yaml");
    super::krew::accepted(&manifest);
    (manifest, sums)
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
        lines[0].starts_with("building kubectl-capi and capi-sandbox-tools"),
        "{stderr}"
    );
    assert_eq!(
        lines[1], "cargo build --locked -p kubectl-capi -p capi-sandbox-tools",
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
