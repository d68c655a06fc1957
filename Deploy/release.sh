#!/usr/bin/env bash
# Deploy/release.sh [VERSION]: a release tarball of klaxon from a clean export of HEAD.
#
#   dist/klaxon-VERSION-linux-ARCH.tar.gz         klaxon (stripped, Swift runtime linked in),
#                                                 README.md, CHANGELOG.md, Deploy/klaxon.yaml,
#                                                 Deploy/klaxon.service, Rules/
#   dist/klaxon-VERSION-linux-ARCH.tar.gz.sha256  its SHA-256 (check with `sha256sum -c`)
#
# VERSION: the argument, else `git describe --tags` (without a leading v), else BuildInfo's version
# without `-dev`. The export's BuildInfo.swift is stamped with it, the commit (`git rev-parse HEAD`)
# and the build date (UTC, ISO 8601; SOURCE_DATE_EPOCH when set, for a reproducible build). The work
# tree is never modified: uncommitted changes are not in the release.
#
# The build keeps its scratch in .build-release/ (git-ignored): a second run rebuilds only what
# changed. Package.resolved, when the work tree has one, pins the dependencies of the export too.
set -euo pipefail

usage="usage: Deploy/release.sh [VERSION]   (a release tarball in dist/; VERSION defaults to git describe)"
case "${1:-}" in
    -h | --help)
        echo "$usage"
        exit 0
        ;;
    -*)
        echo "$usage" >&2
        exit 64
        ;;
esac
if [ $# -gt 1 ]; then
    echo "$usage" >&2
    exit 64
fi

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scratch="$root/.build-release"
src="$scratch/src"
dist="$root/dist"

revision=$(git rev-parse HEAD)
version=${1:-}
if [ -z "$version" ]; then
    version=$(git describe --tags 2>/dev/null || true)
    version=${version#v}
fi
if [ -z "$version" ]; then
    version=$(sed -nE 's/.*static let version = "([^"]*)".*stamped.*/\1/p' Sources/KlaxonCore/BuildInfo.swift)
    version=${version%-dev}
fi
if ! [[ "$version" =~ ^[0-9A-Za-z.+-]+$ ]]; then
    echo "release: \"$version\" is not a version (digits, letters, . + -)" >&2
    exit 64
fi
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
    epoch=$SOURCE_DATE_EPOCH
else
    epoch=$(date +%s)
fi
date=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
arch=$(uname -m)
name="klaxon-$version-linux-$arch"

echo "release: $name (revision $revision, built $date)"

# The clean export, kept in place: files whose content did not change keep their times, so the
# build after this one recompiles only what changed.
export_dir=$(mktemp -d)
trap 'rm -rf "$export_dir"' EXIT
git archive --format=tar HEAD | tar -x -C "$export_dir"
[ -f Package.resolved ] && cp Package.resolved "$export_dir/"
sed -E -i \
    -e "s|(static let version = )\"[^\"]*\"(.*// stamped)|\1\"$version\"\2|" \
    -e "s|(static let stampedRevision = )\"[^\"]*\"(.*// stamped)|\1\"$revision\"\2|" \
    -e "s|(static let date = )\"[^\"]*\"(.*// stamped)|\1\"$date\"\2|" \
    "$export_dir/Sources/KlaxonCore/BuildInfo.swift"
if [ "$(grep -c '// stamped' "$export_dir/Sources/KlaxonCore/BuildInfo.swift")" -ne 3 ] \
    || ! grep -q "\"$revision\"" "$export_dir/Sources/KlaxonCore/BuildInfo.swift"; then
    echo "release: could not stamp Sources/KlaxonCore/BuildInfo.swift" >&2
    exit 1
fi
mkdir -p "$src"
(cd "$export_dir" && find . -type f -print0) | while IFS= read -r -d '' f; do
    if ! cmp -s "$export_dir/$f" "$src/$f"; then
        mkdir -p "$(dirname "$src/$f")"
        cp "$export_dir/$f" "$src/$f"
    fi
done
(cd "$src" && find . -type f -print0) | while IFS= read -r -d '' f; do
    [ -e "$export_dir/$f" ] || rm -f "$src/$f"
done

swift build -c release --static-swift-stdlib --product klaxon --package-path "$src" --scratch-path "$scratch"

stage=$(mktemp -d)
trap 'rm -rf "$export_dir" "$stage"' EXIT
mkdir -p "$stage/$name/Deploy"
strip -o "$stage/$name/klaxon" "$scratch/release/klaxon"
cp "$src/README.md" "$src/CHANGELOG.md" "$stage/$name/"
cp "$src/Deploy/klaxon.yaml" "$src/Deploy/klaxon.service" "$stage/$name/Deploy/"
cp -R "$src/Rules" "$stage/$name/Rules"

# The binary runs, and says what it is.
said=$("$stage/$name/klaxon" --version)
echo "release: $said"
case "$said" in
    "klaxon $version (revision ${revision:0:12}, built $date,"*) ;;
    *)
        echo "release: the binary says \"$said\", not version $version" >&2
        exit 1
        ;;
esac

mkdir -p "$dist"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$stage" -cf - "$name" \
    | gzip -n -9 >"$dist/$name.tar.gz"
(cd "$dist" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "release: dist/$name.tar.gz ($(du -h "$stage/$name/klaxon" | cut -f1) binary, stripped)"
cat "$dist/$name.tar.gz.sha256"
