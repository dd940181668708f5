// Command etcd is upstream etcd's server entry point, built from the Go module proxy by
// scripts/kube-binaries.sh for sparklink's local Kubernetes API server (sparklink.platform.kube).
// It lives in its own module so that etcd's dependencies never move the versions kube-apiserver pins.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
