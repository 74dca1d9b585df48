#!/usr/bin/env bash
# Builds a krew release archive for one target: the plugin, its completion executable
# (kubectl_complete-capi, found beside the plugin), LICENSE and README.md at the archive root,
# reproducible (sorted, fixed times and owners). Refuses a binary built for another architecture
# than --target's. Prints the archive path and its sha256, and can write that sha256 into the
# manifest entry whose uri names the archive.
#
#   scripts/package.sh [--binary PATH] [--target TRIPLE] [--out DIR] [--update-manifest FILE]
#
# Without --binary it runs `cargo build --release --locked` for the host.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary="" target="" out="$root/dist" manifest=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --update-manifest) manifest=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "error: unknown argument $1; see --help" >&2; exit 2 ;;
  esac
done
[ -n "$target" ] || target=$(rustc -vV | sed -n 's/^host: //p')
version=v$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)
if [ -z "$binary" ]; then
  (cd "$root" && cargo build --release --locked)
  binary="$root/target/release/kubectl-capi"
fi
[ -f "$binary" ] || { echo "error: binary $binary not found; build it or pass --binary" >&2; exit 2; }
suffix=""
case "$target" in *windows*) suffix=.exe ;; esac
exe=kubectl-capi$suffix
completer="$(dirname "$binary")/kubectl_complete-capi$suffix"
[ -f "$completer" ] || { echo "error: $completer not found; build both binaries (cargo build --release) for $target" >&2; exit 2; }

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
cp "$root/LICENSE" "$root/README.md" "$staging/"
mkdir -p "$out"
archive="$out/kubectl-capi_${version}_${target}.tar.gz"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$staging" -cf - "$exe" "kubectl_complete-capi$suffix" LICENSE README.md | gzip -n -9 > "$archive"
sum=$(sha256sum "$archive" | cut -d' ' -f1)
echo "$archive"
echo "sha256 $sum"

if [ -n "$manifest" ]; then
  name=$(basename "$archive")
  grep -q "/$name\$" "$manifest" || { echo "error: no platform in $manifest has uri .../$name" >&2; exit 2; }
  # The sha256 line that follows the matching uri line gets the new sum.
  awk -v name="/$name" -v sum="$sum" '
    index($0, name) && $1 == "uri:" { found = 1 }
    found && $1 == "sha256:" { sub(/sha256: .*/, "sha256: \"" sum "\""); found = 0 }
    { print }' "$manifest" > "$manifest.tmp" && mv "$manifest.tmp" "$manifest"
  echo "updated $manifest"
fi
