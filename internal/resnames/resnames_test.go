package resnames

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// aicrGB300 is the rdmaSharedDevicePlugin config of NVIDIA/aicr
// recipes/components/network-operator/manifests/nic-cluster-policy-generic-gb300.yaml
// (commit 733eabec413145ad20bec2f69157dc34bdc9daa2): resourceName "ib", no
// prefix -> rdma/ib.
const aicrGB300 = `{"configList": [{"resourceName": "ib", "rdmaHcaMax": 64,
  "selectors": {"linkTypes": ["infiniband"], "vendors": ["15b3"], "deviceIDs": ["1021", "1023"]}}]}`

// hostdevCfg is the sriovDevicePlugin config of Mellanox/network-operator
// example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr-ocp-hostdev.yaml
// (commit 019be60c76cc67be3c9a75b004d8ac652cffaa85) -> nvidia.com/hostdev.
const hostdevCfg = `{"resourceList": [{"resourcePrefix": "nvidia.com", "resourceName": "hostdev",
  "selectors": {"vendors": ["15b3"], "isRdma": true}}]}`

func nicPolicy(rdma, sriov string) *unstructured.Unstructured {
	spec := map[string]any{}
	if rdma != "" {
		spec["rdmaSharedDevicePlugin"] = map[string]any{"config": rdma}
	}
	if sriov != "" {
		spec["sriovDevicePlugin"] = map[string]any{"config": sriov}
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
		"metadata": map[string]any{"name": "nic-cluster-policy"}, "spec": spec}}
}

func node(name string, res map[string]string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{}}}
	for r, q := range res {
		n.Status.Allocatable[corev1.ResourceName(r)] = resource.MustParse(q)
	}
	return n
}

func TestLearn(t *testing.T) {
	ib := []corev1.Node{node("a", map[string]string{"rdma/ib": "64", "nvidia.com/gpu": "4"}), node("b", map[string]string{"rdma/ib": "64"})}
	for _, tc := range []struct {
		name          string
		in            Inputs
		rdma, hostdev string
	}{
		{"AICR GB300 policy", Inputs{Policy: nicPolicy(aicrGB300, ""), Nodes: ib},
			"rdma/ib (NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin)", ""},
		{"policy with both plugins", Inputs{Policy: nicPolicy(aicrGB300, hostdevCfg), Nodes: ib},
			"rdma/ib (NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin)", "nvidia.com/hostdev (NicClusterPolicy nic-cluster-policy sriovDevicePlugin)"},
		{"resourcePrefix honoured", Inputs{Policy: nicPolicy(`{"configList":[{"resourceName":"hca","resourcePrefix":"example.com"}]}`, "")},
			"example.com/hca (NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin)", ""},
		{"CRD absent: allocatable", Inputs{PolicyErr: "no CRD", Nodes: append(ib, node("c", map[string]string{"nvidia.com/hostdev": "2"}))},
			"rdma/ib (allocatable)", "nvidia.com/hostdev (allocatable)"},
		{"SriovNetworkNodePolicy, prefix as advertised", Inputs{PolicyErr: "no CRD", Nodes: []corev1.Node{node("a", map[string]string{"nvidia.com/mlnxnics_a": "8"})},
			SriovPolicies: []unstructured.Unstructured{{Object: map[string]any{"metadata": map[string]any{"name": "policy-a", "namespace": "nvidia-network-operator"},
				"spec": map[string]any{"resourceName": "mlnxnics_a"}}}}},
			"", "nvidia.com/mlnxnics_a (SriovNetworkNodePolicy nvidia-network-operator/policy-a)"},
		{"SriovNetworkNodePolicy, nothing advertised: the operator's default prefix", Inputs{PolicyErr: "no CRD",
			SriovPolicies: []unstructured.Unstructured{{Object: map[string]any{"metadata": map[string]any{"name": "p", "namespace": "sriov"},
				"spec": map[string]any{"resourceName": "mlnxnics_a"}}}}},
			"", "openshift.io/mlnxnics_a (SriovNetworkNodePolicy sriov/p)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Learn(tc.in)
			if got := Describe(l.RDMA); got != tc.rdma {
				t.Errorf("rdma %q, want %q", got, tc.rdma)
			}
			if got := Describe(l.Hostdev); got != tc.hostdev {
				t.Errorf("hostdev %q, want %q", got, tc.hostdev)
			}
		})
	}
	if _, _, errs := FromPolicy(nicPolicy("{configList: [", "")); len(errs) != 1 || !strings.Contains(errs[0], "spec.rdmaSharedDevicePlugin.config is not valid JSON") {
		t.Errorf("bad config: %v", errs)
	}
}

// Several names: the one most nodes advertise, saying why.
func TestMost(t *testing.T) {
	n, why, ok := Most([]Name{{Resource: "nvidia.com/hostdev_a", Nodes: 1}, {Resource: "nvidia.com/hostdev_b", Nodes: 3}})
	if !ok || n.Resource != "nvidia.com/hostdev_b" || why != "advertised by the most nodes (3; nvidia.com/hostdev_a on 1)" {
		t.Fatalf("%v %q", n, why)
	}
	if _, why, _ := Most([]Name{{Resource: "x/y"}}); why != "" {
		t.Errorf("one name needs no why: %q", why)
	}
}

// A missing CRD or no permission is no error: it is said, and the next
// source is used.
func TestReadFallsBack(t *testing.T) {
	scheme := runtime.NewScheme()
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		NicClusterPolicyGVR: "NicClusterPolicyList", SriovNodePolicyGVR: "SriovNetworkNodePolicyList"})
	dyn.PrependReactor("list", "nicclusterpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "mellanox.com", Resource: "nicclusterpolicies"}, "")
	})
	dyn.PrependReactor("list", "sriovnetworknodepolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "sriovnetwork.openshift.io", Resource: "sriovnetworknodepolicies"}, "", nil)
	})
	in := Read(context.Background(), DynamicLister(dyn))
	if in.Policy != nil || !strings.Contains(in.PolicyErr, "no NicClusterPolicy CRD") || !strings.Contains(in.SriovErr, "forbidden") {
		t.Fatalf("%+v", in)
	}
	in.Nodes = []corev1.Node{node("a", map[string]string{"rdma/ib": "64"})}
	l := Learn(in)
	if Describe(l.RDMA) != "rdma/ib (allocatable)" || !strings.Contains(l.Fallback(true), "forbidden") {
		t.Fatalf("%+v / %s", l, l.Fallback(true))
	}
}

// The suite reads through its clientset's REST client: plain GETs.
func TestRESTLister(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/apis/mellanox.com/v1alpha1/nicclusterpolicies":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"apiVersion":"mellanox.com/v1alpha1","kind":"NicClusterPolicyList","items":[{"apiVersion":"mellanox.com/v1alpha1","kind":"NicClusterPolicy",` +
				`"metadata":{"name":"nic-cluster-policy"},"spec":{"rdmaSharedDevicePlugin":{"config":"{\"configList\":[{\"resourceName\":\"ib\"}]}"}}}]}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		}
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	in := Read(context.Background(), RESTLister(cs.Discovery().RESTClient()))
	if in.Policy == nil || in.Policy.GetName() != "nic-cluster-policy" || !strings.Contains(in.SriovErr, "no SriovNetworkNodePolicy CRD") {
		t.Fatalf("%+v", in)
	}
	if got := Describe(Learn(in).RDMA); got != "rdma/ib (NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin)" {
		t.Fatal(got)
	}
}
