#!/usr/bin/env bash
# Packs kubectl-capi for krew and renders its manifest.
#
#   scripts/package.sh [--binary PATH] [--target TRIPLE] [--out DIR]   pack one target, then render
#   scripts/package.sh --render-only [--out DIR]                         render from DIR's archives
#
# Packing: DIR/kubectl-capi_<version>_<target>.tar.gz holds the plugin, its completion executable
# (kubectl_complete-capi, found beside the plugin) and LICENSE at its root, reproducibly (sorted,
# fixed times and owners). A binary built for another architecture than the target's is refused.
# Without --binary it runs `cargo build --release --locked` for the host.
# Rendering: DIR/capi.yaml from the template .krew.yaml, with a platform for every archive in DIR
# (its uri and real sha256; platforms not built are left out), and DIR/checksums.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary="" target="" out="$root/dist" render_only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --render-only) render_only=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "error: unknown argument $1; see --help" >&2; exit 2 ;;
  esac
done
version=v$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)

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

pack() {
  [ -n "$target" ] || target=$(rustc -vV | sed -n 's/^host: //p')
  if [ -z "$binary" ]; then
    (cd "$root" && cargo build --release --locked)
    binary="$root/target/release/kubectl-capi"
  fi
  [ -f "$binary" ] || { echo "error: binary $binary not found; build it or pass --binary" >&2; exit 2; }
  local suffix="" want got
  case "$target" in *windows*) suffix=.exe ;; esac
  local exe=kubectl-capi$suffix completer
  completer="$(dirname "$binary")/kubectl_complete-capi$suffix"
  [ -f "$completer" ] || { echo "error: $completer not found; build both binaries (cargo build --release) for $target" >&2; exit 2; }
  case "$target" in
    x86_64-*-linux-*) want=elf-62 ;;
    aarch64-*-linux-*) want=elf-183 ;;
    x86_64-apple-darwin) want=macho-16777223 ;;
    aarch64-apple-darwin) want=macho-16777228 ;;
    x86_64-pc-windows-*) want=pe-34404 ;;
    aarch64-pc-windows-*) want=pe-43620 ;;
    *) echo "error: unknown target $target; pass one of the manifest's triples" >&2; exit 2 ;;
  esac
  for file in "$binary" "$completer"; do
    got=$(machine_of "$file")
    [ "$got" = "$want" ] || { echo "error: $file is built for $got, not for $target ($want); build it with --target $target" >&2; exit 2; }
  done
  staging=$(mktemp -d)
  trap 'rm -rf "$staging"' EXIT
  cp "$binary" "$staging/$exe"
  cp "$completer" "$staging/kubectl_complete-capi$suffix"
  cp "$root/LICENSE" "$staging/"
  mkdir -p "$out"
  archive="$out/kubectl-capi_${version}_${target}.tar.gz"
  "$tar" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$staging" -cf - "$exe" "kubectl_complete-capi$suffix" LICENSE | gzip -n -9 > "$archive"
  echo "$archive"
  echo "sha256 $(sha256 "$archive" | cut -d' ' -f1)"
}

# The template with the version set and, per platform, the uri and sha256 of its archive in $out;
# a platform whose archive is not there is left out.
render() {
  local archives sums
  shopt -s nullglob
  archives=("$out"/kubectl-capi_"$version"_*.tar.gz)
  shopt -u nullglob
  [ ${#archives[@]} -gt 0 ] || { echo "error: no kubectl-capi_${version}_*.tar.gz in $out to render the manifest from; pack one first" >&2; exit 2; }
  sums=$(cd "$out" && for archive in "${archives[@]}"; do sha256 "$(basename "$archive")"; done)
  echo "$sums" > "$out/checksums.txt"
  awk -v version="$version" -v sums="$sums" '
    BEGIN { n = split(sums, lines, "\n"); for (i = 1; i <= n; i++) { split(lines[i], f, " "); sum[f[2]] = f[1] } }
    /^#/ && !started { next }
    { started = 1; gsub(/\{\{ \.TagName \}\}/, version) }
    /^  - selector:/ { buffer = ""; platform = 1; keep = 0 }
    platform && /addURIAndSha/ {
      match($0, /"[^"]*"/); uri = substr($0, RSTART + 1, RLENGTH - 2)
      file = uri; sub(/.*\//, "", file)
      if (file in sum) { keep = 1; buffer = buffer "    uri: " uri "\n    sha256: \"" sum[file] "\"\n" }
      next
    }
    platform { buffer = buffer $0 "\n"; if ($1 == "bin:") { if (keep) printf "%s", buffer; platform = 0 }; next }
    { print }
  ' "$root/.krew.yaml" > "$out/capi.yaml"
  echo "$out/capi.yaml"
}

[ -n "$render_only" ] || pack
render
