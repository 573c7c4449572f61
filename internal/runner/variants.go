package runner

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
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
