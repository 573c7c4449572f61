// Package deploy carries the in-cluster manifests into the rdmasuite
// binary, so that `rdmasuite run` applies the objects `kubectl apply -k
// suites/deploy/overlays/acceptance` does (internal/incluster reads them):
// the namespace, the runner's ServiceAccount and least-privilege RBAC, the
// thresholds overlay ConfigMap, and the acceptance Job. The kustomize
// files stay the source; nothing here is a second copy.
package deploy

import "embed"

// Files holds base/namespace.yaml, base/rbac.yaml, base/skus.yaml and
// overlays/acceptance/job.yaml. The results PVC is left out on purpose:
// `rdmasuite run` brings the results back through the ConfigMap, and a
// claim on a cluster without a default StorageClass would hold the Job
// Pending forever.
//
//go:embed base/namespace.yaml base/rbac.yaml base/skus.yaml overlays/acceptance/job.yaml
var Files embed.FS
