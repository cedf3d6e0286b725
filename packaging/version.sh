#!/bin/sh
# The version of a build, for the binaries (mmkd --version) and the .deb:
# the tag of the commit without its "v" when it has one (v1.2.0 -> 1.2.0),
# else 0.0~gitYYYYMMDD.HASH (the commit's date and hash; "~" sorts before
# any release); "+dirty" when the tree has uncommitted changes.
set -eu
cd "$(dirname "$0")/.."
if ! git rev-parse --verify -q HEAD >/dev/null 2>&1; then
	echo 0.0~unknown
	exit 0
fi
if tag=$(git describe --tags --exact-match 2>/dev/null); then
	v=${tag#v}
else
	v=0.0~git$(git log -1 --format=%cd --date=format:%Y%m%d).$(git rev-parse --short=7 HEAD)
fi
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	v=$v+dirty
fi
echo "$v"
