//! `scripts/package.sh`: what it packs, what it refuses, and the README's local install run as
//! written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::krew::accepted;
use super::packaging::PACKAGE;

const VERSION: &str = concat!("v", env!("CARGO_PKG_VERSION"));

/// `scripts/package.sh` with `args`, with a `cargo` on PATH that records its arguments in
/// `cargo.log` and "builds" by putting, where cargo would, the headers of an x86_64 glibc build
/// (small, as the script reads nothing else of a binary).
fn package_script(dir: &Path, args: &[&str]) -> (Output, String) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let built = dir.join("built-by-cargo");
    std::fs::create_dir_all(&built).unwrap();
    for name in ["kubectl-capi", "kubectl_complete-capi"] {
        std::fs::write(built.join(name), elf(&[PT_LOAD, PT_INTERP, PT_DYNAMIC])).unwrap();
    }
    let cargo = bin.join("cargo");
    std::fs::write(
        &cargo,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{log}'\nwhile [ $# -gt 0 ]; do [ \"$1\" = --target ] && t=$2; shift; done\n\
             mkdir -p \"$CARGO_TARGET_DIR/$t/release\"\n\
             cp '{built}/kubectl-capi' '{built}/kubectl_complete-capi' \"$CARGO_TARGET_DIR/$t/release/\"\n",
            log = dir.join("cargo.log").display(),
            built = built.display(),
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = Command::new("bash")
        .arg(PACKAGE)
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .unwrap();
    let log = std::fs::read_to_string(dir.join("cargo.log")).unwrap_or_default();
    (run, log)
}

/// What `dir/out` holds, by name.
fn listing(out: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(out)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn stderr(run: &Output) -> String {
    String::from_utf8_lossy(&run.stderr).into_owned()
}

/// The refusal: exit 2, one `error:` line saying `what`.
fn assert_refused(run: &Output, what: &str) {
    let stderr = stderr(run);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains(what),
        "expected {what:?} in: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// This build's plugin is for the host's architecture, linked with glibc: its true target.
fn host_gnu_target() -> &'static str {
    if cfg!(target_arch = "x86_64") {
        "x86_64-unknown-linux-gnu"
    } else {
        "aarch64-unknown-linux-gnu"
    }
}

fn the_other_architecture() -> &'static str {
    if cfg!(target_arch = "x86_64") {
        "aarch64"
    } else {
        "x86_64"
    }
}

fn this_build() -> &'static str {
    env!("CARGO_BIN_EXE_kubectl-capi")
}

#[test]
fn the_package_script_refuses_a_binary_for_another_architecture() {
    let dir = tempfile::tempdir().unwrap();
    let other = format!("{}-unknown-linux-musl", the_other_architecture());
    let (run, cargo) = package_script(
        dir.path(),
        &[
            "--binary",
            this_build(),
            "--target",
            &other,
            "--out",
            "dist",
        ],
    );
    assert_refused(&run, &format!("not for {other}"));
    assert_eq!(listing(&dir.path().join("dist")), Vec::<String>::new());
    assert_eq!(cargo, "", "nothing built");
}

#[test]
fn a_dynamically_linked_binary_is_never_packed_as_a_static_musl_one() {
    let dir = tempfile::tempdir().unwrap();
    let musl = host_gnu_target().replace("-gnu", "-musl");
    let (run, _) = package_script(
        dir.path(),
        &["--binary", this_build(), "--target", &musl, "--out", "dist"],
    );
    assert_refused(&run, "is dynamically linked, not static");
    assert_eq!(listing(&dir.path().join("dist")), Vec::<String>::new());
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
/// The program header naming the dynamic loader: what a static (or static-pie) binary lacks.
const PT_INTERP: u32 = 3;

/// A 64-bit little-endian ELF header for x86_64 and its program headers of `types`: what the
/// script reads of a binary.
fn elf(types: &[u32]) -> Vec<u8> {
    let mut bytes = vec![0u8; 64 + 56 * types.len()];
    bytes[..7].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1]);
    bytes[18..20].copy_from_slice(&62u16.to_le_bytes());
    bytes[32..40].copy_from_slice(&64u64.to_le_bytes());
    bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
    bytes[56..58].copy_from_slice(&(types.len() as u16).to_le_bytes());
    for (i, kind) in types.iter().enumerate() {
        let at = 64 + 56 * i;
        bytes[at..at + 4].copy_from_slice(&kind.to_le_bytes());
    }
    bytes
}

#[test]
fn only_a_binary_without_a_loader_passes_for_musl() {
    for (types, passes) in [
        (&[PT_LOAD, PT_DYNAMIC][..], true),
        (&[PT_LOAD, PT_INTERP, PT_DYNAMIC][..], false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let built = dir.path().join("built");
        std::fs::create_dir(&built).unwrap();
        for name in ["kubectl-capi", "kubectl_complete-capi"] {
            std::fs::write(built.join(name), elf(types)).unwrap();
        }
        let binary = built.join("kubectl-capi");
        let (run, _) = package_script(
            dir.path(),
            &[
                "--binary",
                binary.to_str().unwrap(),
                "--target",
                "x86_64-unknown-linux-musl",
                "--out",
                "dist",
            ],
        );
        if passes {
            assert!(run.status.success(), "{}", stderr(&run));
            accepted(&dir.path().join("dist/capi.yaml"));
        } else {
            assert_refused(&run, "is dynamically linked");
        }
    }
}

#[test]
fn nothing_is_built_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (run, cargo) = package_script(dir.path(), &["--out", "dist"]);
    assert_refused(&run, "nothing to pack; pass --binary PATH");
    assert_eq!(cargo, "", "cargo was not run");
    assert_eq!(listing(&dir.path().join("dist")), Vec::<String>::new());
}

/// The platform of `manifest` whose sha256 is `archive`'s.
fn platform_of_archive(manifest: &Value, archive: &Path) -> Value {
    let sum = format!("{:x}", Sha256::digest(std::fs::read(archive).unwrap()));
    manifest["spec"]["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["sha256"] == sum.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("no platform with {}'s sum {sum}", archive.display()))
}

#[test]
fn the_host_binary_is_packed_as_its_gnu_target_and_fills_its_platform() {
    let dir = tempfile::tempdir().unwrap();
    let target = host_gnu_target();
    let (run, _) = package_script(
        dir.path(),
        &[
            "--binary",
            this_build(),
            "--target",
            target,
            "--out",
            "dist",
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let name = format!("kubectl-capi_{VERSION}_{target}.tar.gz");
    assert_eq!(
        listing(&dir.path().join("dist")),
        vec![
            "capi.yaml".to_string(),
            "checksums.txt".into(),
            name.clone()
        ]
    );
    let archive = dir.path().join("dist").join(&name);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let sum = format!("{:x}", Sha256::digest(std::fs::read(&archive).unwrap()));
    assert!(stdout.contains(&format!("sha256 {sum}")), "{stdout}");

    let manifest = accepted(&dir.path().join("dist/capi.yaml"));
    let platforms = manifest["spec"]["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), 1, "only the archive that was built");
    let platform = platform_of_archive(&manifest, &archive);
    let arch = if cfg!(target_arch = "x86_64") {
        "amd64"
    } else {
        "arm64"
    };
    assert_eq!(platform["selector"]["matchLabels"]["os"], "linux");
    assert_eq!(platform["selector"]["matchLabels"]["arch"], arch);
    assert_eq!(
        platform["uri"],
        format!("https://github.com/kubectl-capi/kubectl-capi/releases/download/{VERSION}/{name}")
            .as_str(),
        "the gnu archive is named as such"
    );

    let entries = Command::new("tar")
        .arg("tzf")
        .arg(&archive)
        .output()
        .unwrap();
    let mut entries: Vec<String> = String::from_utf8_lossy(&entries.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    entries.sort();
    let bin = platform["bin"].as_str().unwrap();
    assert_eq!(
        entries,
        vec!["LICENSE", bin, "kubectl_complete-capi"],
        "the bin the manifest names, the completion executable and LICENSE, at the root"
    );
}

/// `dir/dist` holding stand-in archives named `names`.
fn archives(dir: &Path, names: &[String]) -> PathBuf {
    let out = dir.join("dist");
    std::fs::create_dir_all(&out).unwrap();
    for name in names {
        std::fs::write(out.join(name), name).unwrap();
    }
    out
}

#[test]
fn a_manifest_is_never_rendered_without_a_platform_or_with_an_archive_it_cannot_hold() {
    let archive = |triple: &str| format!("kubectl-capi_{VERSION}_{triple}.tar.gz");
    let cases = [
        (vec![], "no kubectl-capi_"),
        (
            vec![archive("riscv64gc-unknown-linux-gnu")],
            "which no platform of .krew.yaml is for",
        ),
        (
            vec![archive("aarch64-pc-windows-msvc")],
            "is for windows/arm64, which no platform of .krew.yaml is for",
        ),
        (
            vec![
                archive("x86_64-unknown-linux-gnu"),
                archive("x86_64-unknown-linux-musl"),
            ],
            "are both for linux/amd64; keep one of them",
        ),
    ];
    for (names, refusal) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = archives(dir.path(), &names);
        let (run, _) = package_script(dir.path(), &["--render-only", "--out", "dist"]);
        assert_refused(&run, refusal);
        let mut left = names.clone();
        left.sort();
        assert_eq!(listing(&out), left, "nothing written beside the archives");
    }
}

/// The README's local install through krew, its two commands as written: the first makes
/// exactly the manifest and archive the second installs, and krew's rules accept the manifest.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn the_readme_local_install_installs_what_its_package_command_made() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = |start: &str| {
        readme
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("README has a line starting {start}"))
            .to_string()
    };
    let package = line("scripts/package.sh --build");
    let install = line("kubectl krew install --manifest=");
    let args = shlex::split(package.split('#').next().unwrap()).unwrap();
    let args: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let (run, cargo) = package_script(dir.path(), &args);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(
        cargo.trim(),
        "build --release --locked -p kubectl-capi --target x86_64-unknown-linux-gnu",
        "--build builds the release binaries for the target"
    );
    let flag = |name: &str| {
        install
            .split_whitespace()
            .find_map(|word| word.strip_prefix(name))
            .unwrap_or_else(|| panic!("{name} in {install}"))
            .to_string()
    };
    let manifest = accepted(&dir.path().join(flag("--manifest=")));
    let archive = dir.path().join(flag("--archive="));
    let platform = platform_of_archive(&manifest, &archive);
    assert_eq!(platform["selector"]["matchLabels"]["os"], "linux");
    assert_eq!(platform["selector"]["matchLabels"]["arch"], "amd64");
}

/// A file of an archive: its name, bytes and mode.
type Packed<'a> = (&'a str, Vec<u8>, u32);

/// `dir/dist/NAME` as a gzip'd tar holding `files` at its root.
fn tar_archive(dir: &Path, name: &str, files: &[Packed<'_>]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let staging = dir.join(format!("staging-{name}"));
    std::fs::create_dir_all(&staging).unwrap();
    for (file, bytes, mode) in files {
        let path = staging.join(file);
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).unwrap();
    }
    let out = dir.join("dist");
    std::fs::create_dir_all(&out).unwrap();
    let archive = out.join(name);
    let names: Vec<&str> = files.iter().map(|(f, _, _)| *f).collect();
    let packed = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(&staging)
        .args(&names)
        .status()
        .unwrap();
    assert!(packed.success());
    archive
}

/// `--render-only` opens every archive before it renders a manifest from it: one that is not a
/// gzip'd tar, lacks the bin the manifest names at its root, or holds one not executable or
/// built for another platform is refused, naming it, and no manifest is written.
#[test]
fn render_only_refuses_an_archive_krew_could_not_install() {
    let name = format!("kubectl-capi_{VERSION}_x86_64-unknown-linux-musl.tar.gz");
    let good = elf(&[PT_LOAD]);
    let mut arm = good.clone();
    arm[18..20].copy_from_slice(&183u16.to_le_bytes());
    let license = (b"license".to_vec(), 0o644);
    let cases: Vec<(Vec<Packed<'_>>, &str)> = vec![
        (
            vec![
                ("kubectl_complete-capi", good.clone(), 0o755),
                ("LICENSE", license.0.clone(), license.1),
            ],
            "holds no kubectl-capi at its root, the bin the manifest names for linux/amd64",
        ),
        (
            vec![("kubectl-capi", arm, 0o755)],
            "kubectl-capi is built for elf-183, not for linux/amd64",
        ),
        (
            vec![("kubectl-capi", good.clone(), 0o644)],
            "kubectl-capi is not executable",
        ),
    ];
    for (files, refusal) in cases {
        let dir = tempfile::tempdir().unwrap();
        tar_archive(dir.path(), &name, &files);
        let (run, _) = package_script(dir.path(), &["--render-only", "--out", "dist"]);
        assert_refused(&run, refusal);
        assert_eq!(
            listing(&dir.path().join("dist")),
            std::slice::from_ref(&name),
            "no manifest"
        );
    }
    // Gzip'd text, as a stand-in archive once gave a manifest whose bin is in no archive.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dist");
    std::fs::create_dir_all(&out).unwrap();
    let text = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo not an archive | gzip > '{}'",
            out.join(&name).display()
        ))
        .status()
        .unwrap();
    assert!(text.success());
    let (run, _) = package_script(dir.path(), &["--render-only", "--out", "dist"]);
    assert_refused(&run, "is not a gzip'd tar archive");
    assert_eq!(listing(&out), std::slice::from_ref(&name));
    // A well-made one renders.
    let dir = tempfile::tempdir().unwrap();
    tar_archive(dir.path(), &name, &[("kubectl-capi", good, 0o755)]);
    let (run, _) = package_script(dir.path(), &["--render-only", "--out", "dist"]);
    assert!(run.status.success(), "{}", stderr(&run));
}

/// A `--target` names a file in `--out` and a cargo folder: anything but a plain triple is a
/// usage error before anything is built or written.
#[test]
fn a_target_that_is_not_a_plain_triple_is_refused_before_anything() {
    for target in [
        "x86_64-unknown-linux-gnu;touch pwned",
        "x86_64 unknown linux gnu",
        "x86_64-unknown/../../../escaped-gnu",
        "../x86_64-unknown-linux-gnu",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (run, cargo) = package_script(
            dir.path(),
            &["--build", "--target", target, "--out", "dist"],
        );
        assert_refused(
            &run,
            "is not a target triple (like x86_64-unknown-linux-musl)",
        );
        assert_eq!(cargo, "", "{target}: nothing built");
        assert!(
            !dir.path().join("dist").exists(),
            "{target}: nothing written"
        );
        assert!(!dir.path().join("pwned").exists());
    }
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = package_script(dir.path(), &["--target"]);
    assert_refused(&run, "--target needs a value");
}
