// Package resnames learns the extended resource names a cluster's RDMA
// device plugins advertise, for the doctor (what a node must advertise) and
// the suite (what its probe pods ask for): one definition for both.
//
// Sources, most specific first:
//   - the NVIDIA Network Operator's NicClusterPolicy (mellanox.com/v1alpha1):
//     spec.rdmaSharedDevicePlugin.config (JSON, configList[].resourceName,
//     resourcePrefix default "rdma") for the shared-dev variant and
//     spec.sriovDevicePlugin.config (JSON, resourceList[].resourceName,
//     resourcePrefix default "nvidia.com") for hostdev;
//   - the SR-IOV Network Operator's SriovNetworkNodePolicies
//     (sriovnetwork.openshift.io/v1, spec.resourceName; the prefix is the
//     operator's, "openshift.io" unless its deployment says otherwise, so the
//     prefix a node advertises the name under wins);
//   - the nodes' allocatable: resources under rdma/ (shared-dev) and names
//     holding "hostdev" or "sriov" (hostdev).
//
// A CRD that is absent or not readable is no error: the next source is used
// and Learned.Notes says why.
package resnames

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The resources the suite names when nothing else is known.
const (
	DefaultRDMA    = "rdma/rdma_shared_device_a"
	DefaultHostdev = "nvidia.com/hostdev"
	// SriovDefaultPrefix is the SR-IOV Network Operator's resource prefix
	// unless its deployment sets another (chart value operator.resourcePrefix,
	// k8snetworkplumbingwg/sriov-network-operator
	// deployment/sriov-network-operator-chart/values.yaml).
	SriovDefaultPrefix = "openshift.io"
)

// The custom resources read.
var (
	NicClusterPolicyGVR = schema.GroupVersionResource{Group: "mellanox.com", Version: "v1alpha1", Resource: "nicclusterpolicies"}
	SriovNodePolicyGVR  = schema.GroupVersionResource{Group: "sriovnetwork.openshift.io", Version: "v1", Resource: "sriovnetworknodepolicies"}
)

// Name is one learned resource with where it came from and how many of the
// nodes looked at advertise it above 0.
type Name struct {
	Resource string
	Source   string // "NicClusterPolicy nic-cluster-policy rdmaSharedDevicePlugin", "allocatable"
	Nodes    int
}

// Learned are the resource names per variant.
type Learned struct {
	RDMA    []Name // the RDMA shared device plugin's (shared-dev)
	Hostdev []Name // the SR-IOV device plugin's (hostdev)
	// ConfigErrors: a device-plugin config that could not be parsed.
	ConfigErrors []string
	// PolicyErr and SriovErr say why the NicClusterPolicy or the
	// SriovNetworkNodePolicies were not read ("" when they were).
	PolicyErr, SriovErr string
}

// Inputs are what Learn reads; Read fills them from the API.
type Inputs struct {
	Policy        *unstructured.Unstructured // nil: none (PolicyErr says why)
	PolicyErr     string
	SriovPolicies []unstructured.Unstructured
	SriovErr      string // "" when the list was read (empty or not)
	Nodes         []corev1.Node
}

// FromPolicy returns the resources a NicClusterPolicy's device plugins
// advertise: rdmaSharedDevicePlugin's and sriovDevicePlugin's, in config
// order, and the configs that are not valid JSON.
func FromPolicy(u *unstructured.Unstructured) (rdma, hostdev []Name, errs []string) {
	if u == nil {
		return nil, nil, nil
	}
	for _, dp := range []struct {
		field, list, prefix string
		out                 *[]Name
	}{
		{"rdmaSharedDevicePlugin", "configList", "rdma", &rdma},
		{"sriovDevicePlugin", "resourceList", "nvidia.com", &hostdev},
	} {
		cfg, found, _ := unstructured.NestedString(u.Object, "spec", dp.field, "config")
		if !found || strings.TrimSpace(cfg) == "" {
			continue
		}
		var parsed map[string]json.RawMessage
		var list []struct {
			ResourceName   string `json:"resourceName"`
			ResourcePrefix string `json:"resourcePrefix"`
		}
		err := json.Unmarshal([]byte(cfg), &parsed)
		if err == nil && parsed[dp.list] != nil {
			err = json.Unmarshal(parsed[dp.list], &list)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("spec.%s.config is not valid JSON: %v", dp.field, err))
			continue
		}
		for _, r := range list {
			if r.ResourceName == "" {
				continue
			}
			res := r.ResourceName
			if !strings.Contains(res, "/") {
				prefix := r.ResourcePrefix
				if prefix == "" {
					prefix = dp.prefix
				}
				res = prefix + "/" + res
			}
			*dp.out = appendName(*dp.out, Name{Resource: res, Source: "NicClusterPolicy " + u.GetName() + " " + dp.field})
		}
	}
	return rdma, hostdev, errs
}

// Learn applies the sources in order: the NicClusterPolicy, then (hostdev)
// the SriovNetworkNodePolicies, then the nodes' allocatable.
func Learn(in Inputs) Learned {
	var l Learned
	l.RDMA, l.Hostdev, l.ConfigErrors = FromPolicy(in.Policy)
	if in.Policy == nil {
		l.PolicyErr = in.PolicyErr
	}
	l.SriovErr = in.SriovErr
	if len(l.Hostdev) == 0 {
		for _, p := range in.SriovPolicies {
			name, _, _ := unstructured.NestedString(p.Object, "spec", "resourceName")
			if name == "" {
				continue
			}
			res := sriovResource(name, in.Nodes)
			l.Hostdev = appendName(l.Hostdev, Name{Resource: res, Source: fmt.Sprintf("SriovNetworkNodePolicy %s/%s", p.GetNamespace(), p.GetName())})
		}
	}
	if len(l.RDMA) == 0 {
		l.RDMA = fromAllocatable(in.Nodes, func(r string) bool { return strings.HasPrefix(r, "rdma/") })
	}
	if len(l.Hostdev) == 0 {
		l.Hostdev = fromAllocatable(in.Nodes, isHostdevName)
	}
	for _, list := range [][]Name{l.RDMA, l.Hostdev} {
		for i := range list {
			list[i].Nodes = advertisedBy(in.Nodes, list[i].Resource)
		}
	}
	return l
}

// sriovResource is a policy's resourceName with the prefix a node
// advertises it under, else the operator's default prefix.
func sriovResource(name string, nodes []corev1.Node) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, n := range nodes {
		for r := range n.Status.Allocatable {
			if p, rest, ok := strings.Cut(string(r), "/"); ok && rest == name {
				return p + "/" + name
			}
		}
	}
	return SriovDefaultPrefix + "/" + name
}

func isHostdevName(r string) bool {
	prefix, name, ok := strings.Cut(r, "/")
	if !ok || prefix == "rdma" {
		return false
	}
	return strings.Contains(name, "hostdev") || strings.Contains(name, "sriov")
}

func fromAllocatable(nodes []corev1.Node, want func(string) bool) []Name {
	var out []Name
	seen := map[string]bool{}
	for _, n := range nodes {
		for r := range n.Status.Allocatable {
			if want(string(r)) && !seen[string(r)] {
				seen[string(r)] = true
				out = append(out, Name{Resource: string(r), Source: "allocatable"})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

func advertisedBy(nodes []corev1.Node, res string) int {
	c := 0
	for _, n := range nodes {
		if q, ok := n.Status.Allocatable[corev1.ResourceName(res)]; ok && !q.IsZero() {
			c++
		}
	}
	return c
}

func appendName(list []Name, n Name) []Name {
	for _, o := range list {
		if o.Resource == n.Resource {
			return list
		}
	}
	return append(list, n)
}

// Resources returns the names' resources.
func Resources(ns []Name) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.Resource)
	}
	return out
}

// Most returns the name most nodes advertise (the first in source order on
// a tie) and why it was picked when there were several; ok is false when
// ns is empty.
func Most(ns []Name) (n Name, why string, ok bool) {
	if len(ns) == 0 {
		return Name{}, "", false
	}
	best := 0
	for i, c := range ns {
		if c.Nodes > ns[best].Nodes {
			best = i
		}
	}
	if len(ns) > 1 {
		var others []string
		for i, c := range ns {
			if i != best {
				others = append(others, fmt.Sprintf("%s on %d", c.Resource, c.Nodes))
			}
		}
		why = fmt.Sprintf("advertised by the most nodes (%d; %s)", ns[best].Nodes, strings.Join(others, ", "))
	}
	return ns[best], why, true
}

// Describe is one name for the resources line: "rdma/ib (NicClusterPolicy
// nic-cluster-policy rdmaSharedDevicePlugin)".
func (n Name) Describe() string { return n.Resource + " (" + n.Source + ")" }

// Lister lists every object of a custom resource, all namespaces.
type Lister func(ctx context.Context, gvr schema.GroupVersionResource) (*unstructured.UnstructuredList, error)

// DynamicLister lists through a dynamic client (the doctor's).
func DynamicLister(dyn dynamic.Interface) Lister {
	return func(ctx context.Context, gvr schema.GroupVersionResource) (*unstructured.UnstructuredList, error) {
		return dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
	}
}

// RESTLister lists with plain GETs through any REST client (a clientset's
// discovery client, whose decoder knows no custom resource): the body is
// decoded here as unstructured JSON.
func RESTLister(rc rest.Interface) Lister {
	return func(ctx context.Context, gvr schema.GroupVersionResource) (*unstructured.UnstructuredList, error) {
		body, err := rc.Get().AbsPath("/apis", gvr.Group, gvr.Version, gvr.Resource).DoRaw(ctx)
		if err != nil {
			return nil, err
		}
		var out unstructured.UnstructuredList
		if err := out.UnmarshalJSON(body); err != nil {
			return nil, fmt.Errorf("decode %s: %w", gvr.Resource, err)
		}
		return &out, nil
	}
}

// Read lists the NicClusterPolicy and the SriovNetworkNodePolicies; what
// cannot be read (no CRD, no permission) is said in the Inputs' errors,
// never returned as one. The first NicClusterPolicy is used (the operator
// honours one, named nic-cluster-policy).
func Read(ctx context.Context, lister Lister) (in Inputs) {
	if lister == nil {
		in.PolicyErr, in.SriovErr = "NicClusterPolicy not read (no client)", "SriovNetworkNodePolicies not read (no client)"
		return in
	}
	list, err := lister(ctx, NicClusterPolicyGVR)
	switch {
	case apierrors.IsNotFound(err):
		in.PolicyErr = "the cluster has no NicClusterPolicy CRD (nicclusterpolicies.mellanox.com/v1alpha1): NVIDIA Network Operator not installed"
	case err != nil: // forbidden included: not an error, the next source is used
		in.PolicyErr = "cannot read NicClusterPolicy: " + err.Error()
	case len(list.Items) == 0:
		in.PolicyErr = "no NicClusterPolicy object exists (the Network Operator deploys nothing without one)"
	default:
		in.Policy = &unstructured.Unstructured{Object: list.Items[0].Object}
	}
	sl, err := lister(ctx, SriovNodePolicyGVR)
	switch {
	case apierrors.IsNotFound(err):
		in.SriovErr = "no SriovNetworkNodePolicy CRD (SR-IOV Network Operator not installed)"
	case err != nil:
		in.SriovErr = "cannot read SriovNetworkNodePolicies: " + err.Error()
	default:
		in.SriovPolicies = sl.Items
	}
	return in
}

// Describe lists names for the resources line: "rdma/ib (NicClusterPolicy
// nic-cluster-policy rdmaSharedDevicePlugin), rdma/ib2 (…)".
func Describe(ns []Name) string {
	parts := make([]string, 0, len(ns))
	for _, n := range ns {
		parts = append(parts, n.Describe())
	}
	return strings.Join(parts, ", ")
}

// Fallback says why nothing was learned for a variant (hostdev: the SR-IOV
// sources too): the sources that could not be read or named none, and that
// no node advertises such a resource.
func (l Learned) Fallback(hostdev bool) string {
	var why []string
	switch {
	case l.PolicyErr != "":
		why = append(why, l.PolicyErr)
	case hostdev:
		why = append(why, "the NicClusterPolicy has no sriovDevicePlugin resource")
	default:
		why = append(why, "the NicClusterPolicy has no rdmaSharedDevicePlugin resource")
	}
	what := "a resource under rdma/"
	if hostdev {
		if l.SriovErr != "" {
			why = append(why, l.SriovErr)
		} else {
			why = append(why, "no SriovNetworkNodePolicy names a resource")
		}
		what = "a hostdev or sriov resource"
	}
	return strings.Join(append(why, "no node advertises "+what), "; ")
}
