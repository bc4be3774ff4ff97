#!/usr/bin/env bash
# Source tarball of a mempath release (docs/install.md, "Release"):
#   site_configs/spack/make_tarball.sh [OUTDIR]     (default: the current folder)
# writes OUTDIR/mempath-VERSION.tar.gz = `git archive --prefix=mempath-VERSION/ vVERSION`,
# VERSION being project(VERSION) of src/CMakeLists.txt, and prints its sha256 (for a
# Spack `version(..., sha256=...)` or a release page). Without the tag vVERSION (before the
# lead tags the release) it archives HEAD and says so. A script, not a CMake target: it
# needs only git, not a configured build (no compiler, HDF5 or libnuma).
# Exit status: 0 ok, 2 bad input (one line on stderr).
set -euo pipefail
die() { echo "make_tarball.sh: error: $*" >&2; exit 2; }
[ $# -le 1 ] || die "too many arguments; valid: make_tarball.sh [OUTDIR]"
outdir=${1:-.}
[ -d "$outdir" ] && [ -w "$outdir" ] || die "$outdir is not a writable folder; valid: an existing folder"
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null) ||
  die "$(dirname "$0") is not inside a git checkout; valid: run it from a clone of mempath"
version=$(sed -nE 's/^project\(mempath VERSION ([0-9][0-9.]*).*/\1/p' "$root/src/CMakeLists.txt")
[ -n "$version" ] || die "no project(mempath VERSION x.y.z) line in $root/src/CMakeLists.txt"
tag="v$version"
if git -C "$root" rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
  ref=$tag
else
  ref=HEAD
  echo "make_tarball.sh: tag $tag not found: archiving HEAD ($(git -C "$root" rev-parse --short HEAD)), not a release" >&2
fi
name="mempath-$version"
out="$(cd "$outdir" && pwd)/$name.tar.gz"
git -C "$root" archive --format=tar.gz --prefix="$name/" -o "$out" "$ref"
echo "$out"
sha256sum "$out"
