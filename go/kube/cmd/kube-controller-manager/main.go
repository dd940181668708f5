// Command kube-controller-manager is upstream Kubernetes' controller manager, built from the
// published k8s.io/kubernetes module by scripts/kube-binaries.sh for sparklink's local cluster
// (namespaces, garbage collection, service accounts, Deployments and ReplicaSets).
package main

import (
	"os"
	_ "time/tzdata" // CronJob time zones work without the host's zoneinfo, as in upstream builds

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics on /metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the build-info metric
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
