#!/usr/bin/env bash
# Packs kubectl-capi for krew and renders its manifest.
#
#   scripts/package.sh --binary PATH [--target TRIPLE] [--out DIR]   pack built binaries, then render
#   scripts/package.sh --build [--target TRIPLE] [--out DIR]         build them first, then the same
#   scripts/package.sh --render-only [--out DIR]                      render from DIR's archives
#
# Packing: DIR/kubectl-capi_<version>_<target>.tar.gz holds the plugin, its completion executable
# (kubectl_complete-capi, found beside the plugin) and LICENSE at its root, reproducibly (sorted,
# fixed times and owners). TRIPLE defaults to the host's (`rustc -vV`); --build runs
# `cargo build --release --locked -p kubectl-capi --target TRIPLE` (into $CARGO_TARGET_DIR or
# target/); nothing is built without it. Refused: a binary built for another architecture than
# the target's, and a dynamically linked one for a *-linux-musl target (those archives are static).
# Rendering: DIR/capi.yaml from the template .krew.yaml, and DIR/checksums.txt. Each archive in DIR
# fills the template's platform of its os/arch: the uri names that archive (a *-linux-gnu one
# built here as such), the sha256 is its own; platforms without an archive are left out. Refused,
# writing nothing: no archive, an archive no platform is for, two archives for one platform, an
# archive that is not a gzip'd tar or lacks its platform's bin at its root, a bin not executable
# or built for another platform. A --target that is not a plain triple is refused before anything.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary="" target="" out="$root/dist" render_only="" build=""
fail() {
  echo "error: $*" >&2
  exit 2
}
value() {
  [ $# -ge 2 ] && [ -n "$2" ] || fail "$1 needs a value; see --help"
}
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) value "$@"; binary=$2; shift 2 ;;
    --target) value "$@"; target=$2; shift 2 ;;
    --out) value "$@"; out=$2; shift 2 ;;
    --build) build=1; shift ;;
    --render-only) render_only=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) fail "unknown argument $1; see --help" ;;
  esac
done
version=v$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)
# A target names a file in --out and a cargo folder: a plain triple only, checked before anything
# is written.
if [ -n "$target" ] && ! [[ "$target" =~ ^[a-z0-9_]+(-[a-z0-9_.]+){1,3}$ ]]; then
  fail "--target '$target' is not a target triple (like x86_64-unknown-linux-musl); pass one of the triples the manifest's platforms are built for"
fi

# GNU tar (for --sort and fixed owners; `gtar` on macOS) and a sha256 tool, wherever this runs.
tar=tar
command -v gtar >/dev/null && tar=gtar
sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi
}

# The machine a binary is for, from its header: ELF e_machine, Mach-O cputype, PE Machine.
machine_of() {
  local magic
  magic=$(od -An -tx1 -N4 "$1" | tr -d ' \n')
  case "$magic" in
    7f454c46) echo "elf-$(od -An -tu2 -j18 -N2 "$1" | tr -d ' ')" ;;
    cffaedfe) echo "macho-$(od -An -tu4 -j4 -N4 "$1" | tr -d ' ')" ;;
    4d5a*) local pe; pe=$(od -An -tu4 -j60 -N4 "$1" | tr -d ' ')
           echo "pe-$(od -An -tu2 -j$((pe + 4)) -N2 "$1" | tr -d ' ')" ;;
    *) echo unknown ;;
  esac
}

# Whether a 64-bit little-endian ELF asks for a dynamic loader: a PT_INTERP (3) program header.
# A static (or static-pie) musl binary has none; a glibc one names ld-linux.
asks_for_a_loader() {
  local phoff size count i
  phoff=$(od -An -tu8 -j32 -N8 "$1" | tr -d ' ')
  size=$(od -An -tu2 -j54 -N2 "$1" | tr -d ' ')
  count=$(od -An -tu2 -j56 -N2 "$1" | tr -d ' ')
  for ((i = 0; i < count; i++)); do
    [ "$(od -An -tu4 -j$((phoff + i * size)) -N4 "$1" | tr -d ' ')" = 3 ] && return 0
  done
  return 1
}

# The manifest's os/arch of a target triple; nothing for a triple no platform could be for.
platform_of() {
  local os arch
  case "$1" in
    *-linux-*) os=linux ;;
    *-apple-darwin) os=darwin ;;
    *-windows-*) os=windows ;;
    *) return 0 ;;
  esac
  case "$1" in
    x86_64-*) arch=amd64 ;;
    aarch64-*) arch=arm64 ;;
    *) return 0 ;;
  esac
  echo "$os/$arch"
}

# The header a binary for an os/arch carries (see machine_of); nothing for another platform.
machine_for() {
  case "$1" in
    linux/amd64) echo elf-62 ;;
    linux/arm64) echo elf-183 ;;
    darwin/amd64) echo macho-16777223 ;;
    darwin/arm64) echo macho-16777228 ;;
    windows/amd64) echo pe-34404 ;;
    windows/arm64) echo pe-43620 ;;
  esac
}

# The bin the manifest names for an os/arch.
bin_for() {
  case "$1" in
    windows/*) echo kubectl-capi.exe ;;
    *) echo kubectl-capi ;;
  esac
}

# An archive holds, at its root, the bin the manifest names for its platform ($2), executable
# and built for that platform; else refused, naming the archive.
check_archive() {
  local file bin want listing unpacked got
  file=$(basename "$1")
  bin=$(bin_for "$2")
  want=$(machine_for "$2")
  # A tar's first header says "ustar" at byte 257 (tar itself lists some non-tars as empty).
  [ "$(gzip -dc "$1" 2>/dev/null | dd bs=1 skip=257 count=5 2>/dev/null)" = ustar ] &&
    listing=$("$tar" -tzf "$1" 2>/dev/null) ||
    fail "$file is not a gzip'd tar archive; pack it with scripts/package.sh --binary PATH"
  grep -qx "$bin" <<<"$listing" ||
    fail "$file holds no $bin at its root, the bin the manifest names for $2; pack it with scripts/package.sh --binary PATH"
  unpacked=$(mktemp -d)
  "$tar" -xzf "$1" -C "$unpacked" "$bin"
  got=$(machine_of "$unpacked/$bin")
  local executable=1
  [ -x "$unpacked/$bin" ] || executable=""
  rm -rf "$unpacked"
  [ "$got" = "$want" ] ||
    fail "$file's $bin is built for $got, not for $2 ($want); pack a binary built for $2"
  [ -n "$executable" ] || case "$2" in
    windows/*) ;;
    *) fail "$file's $bin is not executable; pack it with scripts/package.sh --binary PATH" ;;
  esac
}

pack() {
  [ -n "$target" ] || target=$(rustc -vV | sed -n 's/^host: //p')
  local suffix="" want got
  want=$(machine_for "$(platform_of "$target")")
  [ -n "$want" ] || fail "unknown target $target; pass one of the manifest's triples"
  case "$target" in
    *-windows-*) suffix=.exe ;;
  esac
  if [ -n "$build" ]; then
    [ -z "$binary" ] || fail "--build and --binary both given; pass one"
    (cd "$root" && cargo build --release --locked -p kubectl-capi --target "$target")
    binary="${CARGO_TARGET_DIR:-$root/target}/$target/release/kubectl-capi$suffix"
  fi
  [ -n "$binary" ] || fail "nothing to pack; pass --binary PATH (built for $target) or --build"
  [ -f "$binary" ] || fail "binary $binary not found; build it or pass --build"
  local exe=kubectl-capi$suffix completer
  completer="$(dirname "$binary")/kubectl_complete-capi$suffix"
  [ -f "$completer" ] || fail "$completer not found; build both binaries (cargo build --release) for $target"
  for file in "$binary" "$completer"; do
    got=$(machine_of "$file")
    [ "$got" = "$want" ] || fail "$file is built for $got, not for $target ($want); build it with --target $target"
    case "$target" in
      *-linux-musl*) ! asks_for_a_loader "$file" ||
        fail "$file is dynamically linked, not static as a $target archive must be; build it with --target $target, or pack it as the gnu target it is" ;;
    esac
  done
  staging=$(mktemp -d)
  trap 'rm -rf "$staging"' EXIT
  cp "$binary" "$staging/$exe"
  cp "$completer" "$staging/kubectl_complete-capi$suffix"
  cp "$root/LICENSE" "$staging/"
  # Modes as an install needs them, whatever the copies had.
  chmod 0755 "$staging/$exe" "$staging/kubectl_complete-capi$suffix"
  chmod 0644 "$staging/LICENSE"
  mkdir -p "$out"
  archive="$out/kubectl-capi_${version}_${target}.tar.gz"
  "$tar" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$staging" -cf - "$exe" "kubectl_complete-capi$suffix" LICENSE | gzip -n -9 > "$archive"
  echo "$archive"
  echo "sha256 $(sha256 "$archive" | cut -d' ' -f1)"
}

# The template with the version set and, per platform, the uri and sha256 of the archive in $out
# for its os/arch; a platform without an archive is left out.
render() {
  local archives file triple platform sums="" entries="" checks=""
  shopt -s nullglob
  archives=("$out"/kubectl-capi_"$version"_*.tar.gz)
  shopt -u nullglob
  [ ${#archives[@]} -gt 0 ] || fail "no kubectl-capi_${version}_*.tar.gz in $out to render the manifest from; pack one first"
  for archive in "${archives[@]}"; do
    file=$(basename "$archive")
    triple=${file#kubectl-capi_"${version}"_}
    triple=${triple%.tar.gz}
    platform=$(platform_of "$triple")
    [ -n "$platform" ] || fail "$file is for $triple, which no platform of .krew.yaml is for; remove it from $out"
    sums+="$(cd "$out" && sha256 "$file")"$'\n'
    entries+="$platform $file $(cd "$out" && sha256 "$file" | cut -d' ' -f1)"$'\n'
    checks+="$platform $archive"$'\n'
  done
  local manifest
  manifest=$(mktemp "$out/.capi.yaml.XXXXXX")
  if ! awk -v version="$version" -v entries="$entries" -v out="$out" '
    BEGIN {
      n = split(entries, lines, "\n")
      for (i = 1; i <= n; i++) {
        if (lines[i] == "") continue
        split(lines[i], f, " ")
        if (f[1] in archive) { printf "error: %s and %s are both for %s; keep one of them in %s\n", archive[f[1]], f[2], f[1], out > "/dev/stderr"; failed = 1 }
        archive[f[1]] = f[2]; sum[f[1]] = f[3]
      }
    }
    /^#/ && !started { next }
    { started = 1; gsub(/\{\{ \.TagName \}\}/, version) }
    /^  - selector:/ { buffer = ""; platform = 1; keep = 0; os = ""; arch = "" }
    platform && $1 == "os:" { os = $2 }
    platform && $1 == "arch:" { arch = $2 }
    platform && /addURIAndSha/ {
      key = os "/" arch
      match($0, /"[^"]*"/); base = substr($0, RSTART + 1, RLENGTH - 2); sub(/[^\/]*$/, "", base)
      if (key in archive) { keep = 1; used[key] = 1; kept++; buffer = buffer "    uri: " base archive[key] "\n    sha256: \"" sum[key] "\"\n" }
      next
    }
    platform { buffer = buffer $0 "\n"; if ($1 == "bin:") { if (keep) printf "%s", buffer; platform = 0 }; next }
    { print }
    END {
      for (key in archive) if (!(key in used)) { printf "error: %s is for %s, which no platform of .krew.yaml is for; remove it from %s\n", archive[key], key, out > "/dev/stderr"; failed = 1 }
      if (!kept && !failed) { printf "error: no archive in %s is for a platform of .krew.yaml; pack one first\n", out > "/dev/stderr"; failed = 1 }
      exit failed ? 2 : 0
    }
  ' "$root/.krew.yaml" > "$manifest"; then
    rm -f "$manifest"
    exit 2
  fi
  # Each archive's contents, once the platforms are settled (a subshell, so that a refusal
  # leaves no manifest behind).
  if ! (while read -r platform archive; do
    [ -z "$platform" ] || check_archive "$archive" "$platform"
  done <<<"$checks"); then
    rm -f "$manifest"
    exit 2
  fi
  chmod 0644 "$manifest"
  mv "$manifest" "$out/capi.yaml"
  printf '%s' "$sums" > "$out/checksums.txt"
  echo "$out/capi.yaml"
}

[ -n "$render_only" ] || pack
render
