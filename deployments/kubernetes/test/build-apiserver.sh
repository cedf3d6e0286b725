#!/usr/bin/env bash
# Builds kube-apiserver and etcd from their Go modules (the Go module proxy
# only, no other download) into DIR, for dra's test against a real API
# server (docs/kubernetes.md):
#
#   deployments/kubernetes/test/build-apiserver.sh DIR
#   MMK_KUBE_APISERVER=DIR/kube-apiserver MMK_ETCD=DIR/etcd go test -run Real ./dra/
#
# k8s.io/kubernetes replaces its staging modules (k8s.io/api, ...) by
# directories of its own repository, so `go install` refuses it; a
# throw-away module here requires it and points each staging module at
# its published version instead. etcd's server is built the same way.
set -euo pipefail
out=${1:?usage: build-apiserver.sh DIR}
K8S_VERSION=${K8S_VERSION:-v1.37.2}
STAGING_VERSION=${STAGING_VERSION:-v0.${K8S_VERSION#v1.}}
ETCD_VERSION=${ETCD_VERSION:-v3.7.0}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cat > go.mod <<MOD
module mmk.local/kubebuild

go 1.26.0
MOD
kmod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
# One replace per staging module, at the version published with this
# Kubernetes.
sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$kmod" | while read -r m; do
	echo "replace $m => $m $STAGING_VERSION" >> go.mod
done
mkdir -p etcd
cat > etcd/main.go <<'GO'
// Command etcd is etcd's server, built from its module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
cat > tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
go get "k8s.io/kubernetes@$K8S_VERSION" "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
go mod tidy
CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$out/etcd" ./etcd
"$out/kube-apiserver" --version
"$out/etcd" --version | head -1
