package runner

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/resnames"
)

// Variant names.
const (
	VariantSharedDev = "shared-dev"
	VariantHostdev   = "hostdev"
)

// Variant is how pods get their RDMA device in one of the field's two setups.
type Variant struct {
	Name      string // shared-dev or hostdev
	Label     string // what checks carry: Name, plus the resource when one variant has several
	Resource  string
	Network   string // Multus network (hostdev)
	Netdev    string // interface the probe picks the device from (hostdev)
	NeedsCaps bool   // IPC_LOCK for verbs users
}

// Variants lists the configured variants, one per shared-dev resource.
func (c Config) VariantList() []Variant {
	var out []Variant
	for _, v := range c.Variants {
		switch v {
		case VariantSharedDev:
			for _, res := range c.RDMAResources {
				label := VariantSharedDev
				if len(c.RDMAResources) > 1 {
					label += ":" + res // two shared-dev resources must not share check keys
				}
				out = append(out, Variant{Name: VariantSharedDev, Label: label, Resource: res, NeedsCaps: true})
			}
		case VariantHostdev:
			out = append(out, Variant{Name: VariantHostdev, Label: VariantHostdev, Resource: c.HostdevRes, Network: c.HostdevNet, Netdev: c.HostdevNetdev, NeedsCaps: true})
		}
	}
	return out
}

// Spec is a probe pod of this variant on node.
func (r *Runner) Spec(v Variant, name, node string, args []string, ipcLock bool) podrun.Spec {
	s := podrun.Spec{Name: name, Namespace: r.Namespace(), RunID: r.RunID, Node: node, Image: r.Cfg.Image,
		Args: args, Resources: map[string]int64{v.Resource: 1}, Labels: map[string]string{"rdmasuite.io/variant": v.Name}, Keep: r.Cfg.KeepOnFailure}
	if r.Cfg.GPUs > 0 {
		s.Resources["nvidia.com/gpu"] = int64(r.Cfg.GPUs)
	}
	if ipcLock {
		s.AddCaps = []corev1.Capability{"IPC_LOCK"}
	}
	if v.Network != "" {
		s.Annots = map[string]string{"k8s.v1.cni.cncf.io/networks": v.Network}
	}
	return s
}

// DeviceArgs points the probe at the variant's device(s): the netdev's
// device for hostdev, --device when the operator named one, else every
// device the pod was given (every rail).
func (r *Runner) DeviceArgs(v Variant) []string {
	if v.Netdev != "" {
		return []string{"--netdev", v.Netdev}
	}
	if r.Cfg.Device != "" {
		return []string{"--device", r.Cfg.Device}
	}
	return nil
}

// Prerequisite explains why the variant cannot run on this cluster, or "".
// hostdev needs Multus' NetworkAttachmentDefinition CRD.
func Prerequisite(kube kubernetes.Interface, v Variant) string {
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

// VariantsAuto is --variants' default: the variants the cluster can run.
const VariantsAuto = "auto"

// VariantFacts is what deciding --variants auto reads from the cluster.
type VariantFacts struct {
	// Nodes are the nodes the run may cover (the --node-selector's, or
	// every node but the control plane).
	Nodes []corev1.Node
	// MultusErr is the NetworkAttachmentDefinition CRD lookup's outcome
	// (Prerequisite's wording), "" when the CRD is served.
	MultusErr string
	// NADErr is why --hostdev-network cannot be used ("" when it exists).
	NADErr string
	// Names are the RDMA resource names learned from the cluster
	// (resnames.Learn: NicClusterPolicy, SriovNetworkNodePolicies, the
	// nodes' allocatable); they replace --rdma-resource / --hostdev-resource
	// left at their defaults.
	Names resnames.Learned
	// RDMAFlagSet, HostdevFlagSet: the operator named the resource; an
	// explicit flag always wins over what was learned.
	RDMAFlagSet, HostdevFlagSet bool
}

// ResourceFlagsSet reports whether --rdma-resource and --hostdev-resource
// were given on the command line (the suite parses its flags into
// flag.CommandLine); tests replace it.
var ResourceFlagsSet = func() (rdma, hostdev bool) {
	flag.CommandLine.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "rdma-resource":
			rdma = true
		case "hostdev-resource":
			hostdev = true
		}
	})
	return rdma, hostdev
}

// learnResources replaces the resources left at their defaults with the
// ones learned from the cluster, and says in one line which are used for
// each variant and where they came from: every learned shared-dev resource
// (each is a variant; those no node advertises are skipped), and for
// hostdev the one most nodes advertise. A resource the operator named, or
// one that is not the default, is kept.
func learnResources(c Config, f VariantFacts) (Config, string) {
	var parts []string
	rdmaDefault := !f.RDMAFlagSet && slices.Equal(c.RDMAResources, []string{resnames.DefaultRDMA})
	switch {
	case !rdmaDefault:
		parts = append(parts, strings.Join(c.RDMAResources, ", ")+" (--rdma-resource)")
	case len(f.Names.RDMA) > 0:
		c.RDMAResources = resnames.Resources(f.Names.RDMA)
		d := resnames.Describe(f.Names.RDMA)
		if len(f.Names.RDMA) > 1 {
			d += " (one shared-dev variant each)"
		}
		parts = append(parts, d)
	default:
		parts = append(parts, resnames.DefaultRDMA+" (default: "+f.Names.Fallback(false)+")")
	}
	hostdevDefault := !f.HostdevFlagSet && c.HostdevRes == resnames.DefaultHostdev
	if n, why, ok := resnames.Most(f.Names.Hostdev); hostdevDefault && ok {
		c.HostdevRes = n.Resource
		d := n.Describe()
		if why != "" {
			d = n.Resource + " (" + n.Source + "; " + why + ")"
		}
		parts = append(parts, d)
	} else if hostdevDefault {
		parts = append(parts, resnames.DefaultHostdev+" (default: "+f.Names.Fallback(true)+")")
	} else {
		parts = append(parts, c.HostdevRes+" (--hostdev-resource)")
	}
	return c, "resources: " + strings.Join(parts, ", ")
}

// ResolveVariants narrows an auto run to the variants the cluster can run
// and says, per variant, what it runs and what it skipped and why. A
// variant the operator named is never dropped here: it runs and fails
// with its reason. When no variant can run, shared-dev is kept so the run
// fails saying why instead of measuring nothing and passing.
func ResolveVariants(c Config, f VariantFacts) (Config, []string) {
	c, resLine := learnResources(c, f)
	if !c.VariantsAuto {
		// Variants named: the resource names are still the cluster's
		// unless a flag named them.
		return c, []string{resLine}
	}
	advertised := func(r string) bool {
		return slices.ContainsFunc(f.Nodes, func(n corev1.Node) bool { return advertises(n, r) })
	}
	var keep, skipped []string
	var shared []string
	for _, r := range c.RDMAResources {
		if advertised(r) {
			shared = append(shared, r)
		} else {
			skipped = append(skipped, fmt.Sprintf("shared-dev %s (no node advertises it)", r))
		}
	}
	if len(shared) > 0 {
		keep = append(keep, VariantSharedDev)
	}
	switch {
	case f.MultusErr != "":
		skipped = append(skipped, "hostdev ("+f.MultusErr+")")
	case f.NADErr != "":
		skipped = append(skipped, "hostdev ("+f.NADErr+")")
	case !advertised(c.HostdevRes):
		skipped = append(skipped, fmt.Sprintf("hostdev (no node advertises %s)", c.HostdevRes))
	default:
		keep = append(keep, VariantHostdev)
	}
	out := c
	if len(keep) == 0 {
		out.Variants = []string{VariantSharedDev}
		return out, []string{resLine, fmt.Sprintf("variants: auto found none the cluster can run (skipped %s); running shared-dev so the run reports why "+
			"(name the variants with --variants, the resources with --rdma-resource / --hostdev-resource)", strings.Join(skipped, "; "))}
	}
	out.Variants = keep
	if len(shared) > 0 {
		out.RDMAResources = shared
	}
	line := "variants: " + strings.Join(keep, ", ") + " (auto: what the cluster can run"
	if len(skipped) > 0 {
		line += "; skipped " + strings.Join(skipped, "; ") + "; name a variant with --variants to require it"
	}
	return out, []string{resLine, line + ")"}
}

// learnNames reads the resource names the cluster advertises
// (resnames.Read over the clientset's REST client, then resnames.Learn over
// the nodes the run may cover); a client without REST access (a fake)
// learns from the nodes alone.
func learnNames(ctx context.Context, kube kubernetes.Interface, nodes []corev1.Node) resnames.Learned {
	in := resnames.Inputs{PolicyErr: "NicClusterPolicy not read (no REST client)", SriovErr: "SriovNetworkNodePolicies not read (no REST client)"}
	if rc, _ := kube.Discovery().RESTClient().(*rest.RESTClient); rc != nil {
		in = resnames.Read(ctx, resnames.RESTLister(rc))
	}
	in.Nodes = nodes
	return resnames.Learn(in)
}

// GatherVariantFacts reads what ResolveVariants needs: the nodes the run
// may cover, the Multus CRD and the hostdev network's
// NetworkAttachmentDefinition.
func GatherVariantFacts(ctx context.Context, kube kubernetes.Interface, c Config) (VariantFacts, error) {
	var f VariantFacts
	list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: c.NodeSelector})
	if err != nil {
		return f, fmt.Errorf("list nodes: %w", err)
	}
	for _, n := range list.Items {
		if c.NodeSelector != "" || !isControlPlane(n) {
			f.Nodes = append(f.Nodes, n)
		}
	}
	f.RDMAFlagSet, f.HostdevFlagSet = ResourceFlagsSet()
	f.Names = learnNames(ctx, kube, f.Nodes)
	f.MultusErr = Prerequisite(kube, Variant{Network: c.HostdevNet})
	if f.MultusErr != "" {
		return f, nil
	}
	ns, name, ok := strings.Cut(c.HostdevNet, "/")
	if !ok {
		ns, name = "default", c.HostdevNet
	}
	rc, _ := kube.Discovery().RESTClient().(*rest.RESTClient)
	if rc == nil { // a client without REST access (a fake): nothing to read
		return f, nil
	}
	err = rc.Get().AbsPath("/apis/k8s.cni.cncf.io/v1/namespaces", ns, "network-attachment-definitions", name).Do(ctx).Error()
	switch {
	case apierrors.IsNotFound(err):
		f.NADErr = fmt.Sprintf("no NetworkAttachmentDefinition %s/%s (--hostdev-network)", ns, name)
	case err != nil:
		f.NADErr = fmt.Sprintf("cannot read NetworkAttachmentDefinition %s/%s: %v", ns, name, err)
	}
	return f, nil
}
