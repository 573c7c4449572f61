package doctor

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The RDMA resource names are the cluster's own: learned from its
// NicClusterPolicy, its SriovNetworkNodePolicies or its nodes' allocatable
// (internal/resnames), never assumed; an explicit list wins.

// realWorldObject parses a testdata/realworld YAML excerpt.
func realWorldObject(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(realWorld(t, name)), &obj); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// gb300IB is a healthy cluster run by the AICR GB300 recipe's policy: its
// nodes advertise rdma/ib, no rdma/rdma_shared_device_a.
func gb300IB(t *testing.T) State {
	s := healthy()
	s.Policy = realWorldObject(t, "nicclusterpolicy-aicr-gb300-rdma-ib.txt")
	for i := range s.Nodes {
		delete(s.Nodes[i].Status.Allocatable, "rdma/rdma_shared_device_a")
		s.Nodes[i].Status.Allocatable["rdma/ib"] = resource.MustParse("64")
	}
	return s
}

func (s *State) dropAllocatable(res corev1.ResourceName) {
	for i := range s.Nodes {
		delete(s.Nodes[i].Status.Allocatable, res)
	}
}

var _ = answer(knownAnswer{rule: ResourceMissing, name: "AICR GB300 policy names rdma/ib, the nodes advertise rdma/ib", source: "realworld/nicclusterpolicy-aicr-gb300-rdma-ib.txt", clean: true,
	state: gb300IB})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "AICR GB300 policy: a node lost rdma/ib", source: "realworld/nicclusterpolicy-aicr-gb300-rdma-ib.txt",
	raises: true, node: "node-2", evidence: `allocatable rdma/ib: missing \(expected from NicClusterPolicy nic-cluster-policy device-plugin config`,
	state: func(t *testing.T) State {
		s := gb300IB(t)
		delete(s.Nodes[1].Status.Allocatable, "rdma/ib")
		return s
	}})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "no NicClusterPolicy CRD: the other nodes' allocatable names rdma/ib, a node lacks it", source: "staged (CRD absent)",
	raises: true, node: "node-2", evidence: `allocatable rdma/ib: missing \(expected from the allocatable of the selected nodes \(1 advertise it\)`,
	state: func(t *testing.T) State {
		s := gb300IB(t)
		s.Policy, s.PolicyErr, s.NoNetworkOperator = nil, "the cluster has no NicClusterPolicy CRD", true
		delete(s.Nodes[1].Status.Allocatable, "rdma/ib")
		return s
	}})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "no NicClusterPolicy CRD, every node advertises rdma/ib", source: "staged (CRD absent)", clean: true,
	state: func(t *testing.T) State {
		s := gb300IB(t)
		s.Policy, s.PolicyErr, s.NoNetworkOperator = nil, "the cluster has no NicClusterPolicy CRD", true
		return s
	}})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "explicit resources flag wins over the policy's rdma/ib", source: "realworld/nicclusterpolicy-aicr-gb300-rdma-ib.txt",
	raises: true, node: "node-1", evidence: `allocatable rdma/rdma_shared_device_a: missing \(expected from the resources flag`,
	state: func(t *testing.T) State {
		s := gb300IB(t)
		s.Resources = []string{"rdma/rdma_shared_device_a"}
		return s
	}})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "SR-IOV operator policy names mlnxnics_a, advertised as openshift.io/mlnxnics_a", source: "realworld/sriovnetworknodepolicy-ib-rdma.txt", clean: true,
	state: func(t *testing.T) State {
		s := healthy()
		s.Policy, s.PolicyErr, s.NoNetworkOperator = nil, "the cluster has no NicClusterPolicy CRD", true
		s.SriovPolicies = []unstructured.Unstructured{*realWorldObject(t, "sriovnetworknodepolicy-ib-rdma.txt")}
		s.dropAllocatable("rdma/rdma_shared_device_a")
		for i := range s.Nodes {
			s.Nodes[i].Status.Allocatable["openshift.io/mlnxnics_a"] = resource.MustParse("8")
		}
		return s
	}})

// The line says which names were used and where they came from.
func TestResourcesLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*testing.T, *State)
		want string
	}{
		{"AICR GB300 policy", func(*testing.T, *State) {}, "resources: rdma/ib (NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin)"},
		{"policy and allocatable hostdev", func(_ *testing.T, s *State) {
			s.Nodes[0].Status.Allocatable["nvidia.com/hostdev"] = resource.MustParse("4")
		}, "resources: rdma/ib (NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin), nvidia.com/hostdev (allocatable)"},
		{"CRD absent", func(_ *testing.T, s *State) {
			s.Policy, s.PolicyErr = nil, "the cluster has no NicClusterPolicy CRD (nicclusterpolicies.mellanox.com/v1alpha1): NVIDIA Network Operator not installed"
		}, "resources: rdma/ib (allocatable)"},
		{"nothing known", func(_ *testing.T, s *State) {
			s.Policy, s.PolicyErr = nil, "cannot read NicClusterPolicy: forbidden"
			s.dropAllocatable("rdma/ib")
		}, "resources: no RDMA shared-device resource known (cannot read NicClusterPolicy: forbidden; no node advertises a resource under rdma/): RDMA nodes not judged on their allocatable (pass --resources)"},
		{"explicit flag", func(_ *testing.T, s *State) { s.Resources = []string{"rdma/hca_a"} },
			"resources: rdma/hca_a (the resources flag, required of every selected node)"},
		{"two in the config", func(_ *testing.T, s *State) { s.Policy = policy(nil, nil) },
			"resources: rdma/rdma_shared_device_a (NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin), rdma/rdma_shared_device_b (NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin); an RDMA node must advertise one of them at least"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := gb300IB(t)
			tc.edit(t, &s)
			if got := ResourcesLine(s); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !strings.HasPrefix(ResourcesLine(s), "resources: ") {
				t.Error("not one resources line")
			}
		})
	}
}
