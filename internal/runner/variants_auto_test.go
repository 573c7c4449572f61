package runner

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/internal/resnames"
)

// --variants auto (the default) runs what the cluster can run
// and names what it skipped and why; a variant the operator names is
// never dropped; when nothing can run, the run still fails saying why.
func TestResolveVariantsAuto(t *testing.T) {
	both := []corev1.Node{selNode("gpu-a", nil, map[string]int64{res: 8, hostdevRes: 4}), selNode("gpu-b", nil, map[string]int64{res: 8, hostdevRes: 4})}
	sharedOnly := []corev1.Node{selNode("gpu-a", nil, map[string]int64{res: 8}), selNode("gpu-b", nil, map[string]int64{res: 8})}
	base := Config{Variants: []string{VariantSharedDev, VariantHostdev}, VariantsAuto: true, RDMAResources: []string{res},
		HostdevRes: hostdevRes, HostdevNet: "default/sriov-rdma", HostdevNetdev: "net1"}
	for _, tc := range []struct {
		name      string
		facts     VariantFacts
		cfg       func(Config) Config
		want      string
		lineWants []string
	}{
		{"both can run", VariantFacts{Nodes: both}, nil, "shared-dev,hostdev", []string{"variants: shared-dev, hostdev (auto: what the cluster can run)"}},
		{"no Multus", VariantFacts{Nodes: both, MultusErr: "Multus is not installed: the cluster has no NetworkAttachmentDefinition CRD"}, nil,
			"shared-dev", []string{"variants: shared-dev (auto", "skipped hostdev (Multus is not installed", "--variants to require it"}},
		{"no NAD", VariantFacts{Nodes: both, NADErr: "no NetworkAttachmentDefinition default/sriov-rdma (--hostdev-network)"}, nil,
			"shared-dev", []string{"skipped hostdev (no NetworkAttachmentDefinition default/sriov-rdma"}},
		{"no hostdev resource", VariantFacts{Nodes: sharedOnly}, nil, "shared-dev", []string{"skipped hostdev (no node advertises nvidia.com/hostdev)"}},
		{"hostdev only", VariantFacts{Nodes: []corev1.Node{selNode("gpu-a", nil, map[string]int64{hostdevRes: 4})}}, nil,
			"hostdev", []string{"variants: hostdev (auto", "skipped shared-dev " + res + " (no node advertises it)"}},
		{"nothing can run", VariantFacts{Nodes: []corev1.Node{selNode("cpu-1", nil, nil)}, MultusErr: "Multus is not installed"}, nil,
			"shared-dev", []string{"auto found none the cluster can run", "running shared-dev so the run reports why"}},
		{"two shared resources, one advertised", VariantFacts{Nodes: sharedOnly},
			func(c Config) Config { c.RDMAResources = []string{res, "rdma/rdma_shared_device_b"}; return c },
			"shared-dev", []string{"skipped shared-dev rdma/rdma_shared_device_b (no node advertises it)"}},
		{"named variants are kept", VariantFacts{Nodes: sharedOnly, MultusErr: "Multus is not installed"},
			func(c Config) Config { c.VariantsAuto = false; return c }, "shared-dev,hostdev", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			if tc.cfg != nil {
				c = tc.cfg(c)
			}
			got, lines := ResolveVariants(c, tc.facts)
			if strings.Join(got.Variants, ",") != tc.want {
				t.Errorf("variants %v, want %s", got.Variants, tc.want)
			}
			all := strings.Join(lines, "\n")
			for _, w := range tc.lineWants {
				if !strings.Contains(all, w) {
					t.Errorf("header lacks %q:\n%s", w, all)
				}
			}
			if tc.lineWants == nil && (len(lines) != 1 || !strings.HasPrefix(lines[0], "resources: ")) {
				t.Errorf("named variants need no auto line, only the resources one: %q", lines)
			}
			if tc.name == "two shared resources, one advertised" && strings.Join(got.RDMAResources, ",") != res {
				t.Errorf("resources %v, want only the advertised one", got.RDMAResources)
			}
		})
	}
	if _, auto := ParseVariants("auto"); !auto {
		t.Error("auto not parsed")
	}
	mixed := testConfig(t)
	mixed.Variants = []string{"auto", "hostdev"}
	if err := mixed.Validate(); err == nil || !strings.Contains(err.Error(), "auto stands alone") {
		t.Errorf("auto mixed with a variant: %v", err)
	}
}

// GatherVariantFacts leaves the control plane out of an auto decision and
// reads the Multus CRD.
func TestGatherVariantFacts(t *testing.T) {
	cp := selNode("cp-1", map[string]string{"node-role.kubernetes.io/control-plane": ""}, map[string]int64{hostdevRes: 1})
	a := selNode("gpu-a", nil, map[string]int64{res: 1})
	kube := fake.NewClientset(&cp, &a)
	f, err := GatherVariantFacts(context.Background(), kube, Config{HostdevNet: "default/sriov-rdma"})
	if err != nil || len(f.Nodes) != 1 || f.Nodes[0].Name != "gpu-a" {
		t.Fatalf("nodes %v, %v", f.Nodes, err)
	}
	if !strings.Contains(f.MultusErr, "Multus is not installed") {
		t.Errorf("no CRD in the fake: %q", f.MultusErr)
	}
}

// The resources left at their defaults are the cluster's own (learned by
// resnames: the NicClusterPolicy, SriovNetworkNodePolicies, allocatable);
// a flag the operator set always wins; the line says which and why.
func TestResolveVariantsLearnsResources(t *testing.T) {
	ib := []corev1.Node{selNode("gpu-a", nil, map[string]int64{"rdma/ib": 64, "nvidia.com/hostdev_b": 4}),
		selNode("gpu-b", nil, map[string]int64{"rdma/ib": 64, "nvidia.com/hostdev_b": 4, "nvidia.com/hostdev_a": 1})}
	// The AICR GB300 recipe's policy names "ib" (NVIDIA/aicr
	// recipes/components/network-operator/manifests/nic-cluster-policy-generic-gb300.yaml,
	// commit 733eabec413145ad20bec2f69157dc34bdc9daa2).
	policy := resnames.Learned{
		RDMA:    []resnames.Name{{Resource: "rdma/ib", Source: "NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin", Nodes: 2}},
		Hostdev: []resnames.Name{{Resource: "nvidia.com/hostdev_a", Source: "allocatable", Nodes: 1}, {Resource: "nvidia.com/hostdev_b", Source: "allocatable", Nodes: 2}},
	}
	base := Config{Variants: []string{VariantSharedDev, VariantHostdev}, VariantsAuto: true, RDMAResources: []string{resnames.DefaultRDMA},
		HostdevRes: resnames.DefaultHostdev, HostdevNet: "default/sriov-rdma", HostdevNetdev: "net1"}
	for _, tc := range []struct {
		name       string
		cfg        func(Config) Config
		facts      VariantFacts
		rdma, hdev string
		variants   string
		line       string
	}{
		{"learned from the policy and allocatable", nil, VariantFacts{Nodes: ib, Names: policy}, "rdma/ib", "nvidia.com/hostdev_b", "shared-dev,hostdev",
			"resources: rdma/ib (NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin), nvidia.com/hostdev_b (allocatable; advertised by the most nodes (2; nvidia.com/hostdev_a on 1))"},
		{"explicit flags win", nil, VariantFacts{Nodes: ib, Names: policy, RDMAFlagSet: true, HostdevFlagSet: true}, resnames.DefaultRDMA, resnames.DefaultHostdev, "shared-dev",
			"resources: rdma/rdma_shared_device_a (--rdma-resource), nvidia.com/hostdev (--hostdev-resource)"},
		{"a non-default value is the operator's", func(c Config) Config { c.RDMAResources = []string{"rdma/hca"}; return c },
			VariantFacts{Nodes: ib, Names: policy}, "rdma/hca", "nvidia.com/hostdev_b", "hostdev", "resources: rdma/hca (--rdma-resource), nvidia.com/hostdev_b"},
		{"nothing learned: the defaults, saying why", nil, VariantFacts{Nodes: sharedDefault(), Names: resnames.Learned{PolicyErr: "the cluster has no NicClusterPolicy CRD", SriovErr: "no SriovNetworkNodePolicy CRD"}},
			resnames.DefaultRDMA, resnames.DefaultHostdev, "shared-dev",
			"resources: rdma/rdma_shared_device_a (default: the cluster has no NicClusterPolicy CRD; no node advertises a resource under rdma/), nvidia.com/hostdev (default: the cluster has no NicClusterPolicy CRD; no SriovNetworkNodePolicy CRD; no node advertises a hostdev or sriov resource)"},
		{"two learned shared-dev resources: a variant each", nil, VariantFacts{Nodes: ib, Names: resnames.Learned{RDMA: []resnames.Name{
			{Resource: "rdma/ib", Source: "NicClusterPolicy p rdmaSharedDevicePlugin", Nodes: 2}, {Resource: "rdma/roce", Source: "NicClusterPolicy p rdmaSharedDevicePlugin"}}}},
			"rdma/ib", resnames.DefaultHostdev, "shared-dev", "(one shared-dev variant each)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			if tc.cfg != nil {
				c = tc.cfg(c)
			}
			got, lines := ResolveVariants(c, tc.facts)
			if strings.Join(got.RDMAResources, ",") != tc.rdma || got.HostdevRes != tc.hdev || strings.Join(got.Variants, ",") != tc.variants {
				t.Errorf("resources %v / %s, variants %v; want %s / %s, %s", got.RDMAResources, got.HostdevRes, got.Variants, tc.rdma, tc.hdev, tc.variants)
			}
			if len(lines) == 0 || !strings.Contains(lines[0], tc.line) {
				t.Errorf("line %q lacks %q", lines, tc.line)
			}
		})
	}
}

func sharedDefault() []corev1.Node {
	return []corev1.Node{selNode("gpu-a", nil, map[string]int64{resnames.DefaultRDMA: 8})}
}

// The suite's flags are its command line's: a flag the operator gave is
// seen as set.
func TestResourceFlagsSet(t *testing.T) {
	if r, h := ResourceFlagsSet(); r || h {
		t.Fatalf("the test binary has no such flags: %v %v", r, h)
	}
}
