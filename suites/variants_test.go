package suites

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
)

// variant is how pods get their RDMA device in one of the field's two setups.
type variant struct {
	Name      string // shared-dev or hostdev
	Resource  string
	Network   string // Multus network (hostdev)
	Netdev    string // interface the probe picks the device from (hostdev)
	NeedsCaps bool   // IPC_LOCK for verbs users
}

func variants() []variant {
	var out []variant
	for _, v := range splitList(*flagVariants) {
		switch v {
		case "shared-dev":
			for _, res := range splitList(*flagRDMARes) {
				out = append(out, variant{Name: "shared-dev", Resource: res, NeedsCaps: true})
			}
		case "hostdev":
			out = append(out, variant{Name: "hostdev", Resource: *flagHostdevRes, Network: *flagHostdevNet, Netdev: *flagHostdevNetdev, NeedsCaps: true})
		}
	}
	return out
}

// spec is a probe pod of this variant on node.
func (v variant) spec(name, node string, args []string, ipcLock bool) podrun.Spec {
	s := podrun.Spec{Name: name, Namespace: runNamespace(), RunID: runID, Node: node, Image: *flagImage,
		Args: args, Resources: map[string]int64{v.Resource: 1}, Labels: map[string]string{"rdmasuite.io/variant": v.Name}}
	if *flagGPUs > 0 {
		s.Resources["nvidia.com/gpu"] = int64(*flagGPUs)
	}
	if ipcLock {
		s.AddCaps = []corev1.Capability{"IPC_LOCK"}
	}
	if v.Network != "" {
		s.Annots = map[string]string{"k8s.v1.cni.cncf.io/networks": v.Network}
	}
	return s
}

// deviceArgs points the probe at the variant's device.
func (v variant) deviceArgs() []string {
	if v.Netdev != "" {
		return []string{"--netdev", v.Netdev}
	}
	if *flagDevice != "" {
		return []string{"--device", *flagDevice}
	}
	return nil
}

// prerequisite explains why the variant cannot run on this cluster, or "".
// hostdev needs Multus' NetworkAttachmentDefinition CRD.
func (v variant) prerequisite(ctx context.Context) string {
	if v.Network == "" {
		return ""
	}
	_, err := kube.Discovery().ServerResourcesForGroupVersion("k8s.cni.cncf.io/v1")
	if apierrors.IsNotFound(err) {
		return "Multus is not installed: the cluster has no NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1); install Multus and the SR-IOV network operator, or run with --variants=shared-dev"
	}
	if err != nil {
		return fmt.Sprintf("cannot check for Multus: %v", err)
	}
	return ""
}

// variantFeatures builds one feature per pod variant: run produces its
// checks, which are recorded for the report, and a check whose status is in
// failOn fails the assessment with its diagnosis.
func variantFeatures(title, check, assess string, run func(context.Context, *testing.T, variant) []reports.Check, failOn ...reports.Status) []features.Feature {
	var feats []features.Feature
	for _, v := range variants() {
		feats = append(feats, features.New(fmt.Sprintf("%s (%s, %s)", title, v.Name, v.Resource)).
			WithLabel("suite", "rdma").WithLabel("check", check).WithLabel("variant", v.Name).
			Assess(assess, func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
				checks := run(ctx, t, v)
				record(checks...)
				for _, c := range checks {
					if slices.Contains(failOn, c.Status) {
						t.Errorf("%s", describeChecks([]reports.Check{c}))
					}
				}
				return ctx
			}).Feature())
	}
	return feats
}

// collectChecks runs fn(0..n-1) concurrently, at most --concurrency at a
// time, stamps each call's checks with how long it took, and returns them in
// index order (stable reports, whatever order the calls finish in).
func collectChecks(n int, fn func(i int) []reports.Check) []reports.Check {
	results := make([][]reports.Check, n)
	sem := make(chan struct{}, max(*flagConcurrency, 1))
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			cs := fn(i)
			for j := range cs {
				cs[j].Duration = time.Since(start).Seconds()
			}
			results[i] = cs
		}()
	}
	wg.Wait()
	var out []reports.Check
	for _, cs := range results {
		out = append(out, cs...)
	}
	return out
}
