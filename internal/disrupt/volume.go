package disrupt

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/names"
)

// CSINFSDriver is the NFS CSI driver (kubernetes-csi/csi-driver-nfs).
const CSINFSDriver = "nfs.csi.k8s.io"

// Volume is what the feature found behind the operator's PVC.
type Volume struct {
	PVC    string // namespace/name
	PV     string
	Kind   string // "nfs", "csi nfs.csi.k8s.io", "hostPath", …
	NFS    bool
	Server string
	Path   string
	// Options are the PV's mount options (and a CSI volume's
	// mountOptions attribute), one option a string.
	Options []string
	RDMA    bool
	Forced  bool // not NFS, run anyway (--stall-force)
	// ScopedPV and ScopedPVC are the run's copy (cluster-scoped PV, PVC in
	// the run namespace).
	ScopedPV, ScopedPVC string
}

// ClassifyPV says what kind of volume pv is and whether it is NFS, and
// reads its transport from the mount options.
func ClassifyPV(pvcRef string, pv *corev1.PersistentVolume) Volume {
	v := Volume{PVC: pvcRef, PV: pv.Name, Kind: sourceKind(pv.Spec.PersistentVolumeSource)}
	for _, o := range pv.Spec.MountOptions {
		v.Options = append(v.Options, splitOptions(o)...)
	}
	switch s := pv.Spec.PersistentVolumeSource; {
	case s.NFS != nil:
		v.NFS, v.Server, v.Path = true, s.NFS.Server, s.NFS.Path
	case s.CSI != nil && s.CSI.Driver == CSINFSDriver:
		v.NFS, v.Server, v.Path = true, s.CSI.VolumeAttributes["server"], s.CSI.VolumeAttributes["share"]
		for k, val := range s.CSI.VolumeAttributes {
			if strings.EqualFold(k, "mountOptions") {
				v.Options = append(v.Options, splitOptions(val)...)
			}
		}
	}
	v.RDMA = rdmaOption(strings.Join(v.Options, ","))
	return v
}

// NotNFSReason is the not-run reason for a volume that is not NFS.
func (v Volume) NotNFSReason() string {
	return fmt.Sprintf("PVC %s is bound to PV %s, %s volume, not NFS: the stall check measures NFS I/O; --stall-force runs it anyway",
		v.PVC, v.PV, article(v.Kind))
}

// Transport is the evidence line for the mount's transport.
func (v Volume) Transport() string {
	switch {
	case !v.NFS:
		return fmt.Sprintf("not NFS (%s volume, run with --stall-force): the stall measures whatever this volume does on a driver restart", v.Kind)
	case v.RDMA:
		return fmt.Sprintf("NFS over RDMA (%s)", strings.Join(rdmaOptions(v.Options), ","))
	}
	return "NFS over TCP: the driver restart will not touch this mount's transport"
}

// Describe is the volume in one evidence line.
func (v Volume) Describe() string {
	s := fmt.Sprintf("volume: PVC %s → PV %s (%s", v.PVC, v.PV, v.Kind)
	if v.Server != "" || v.Path != "" {
		s += fmt.Sprintf(" %s:%s", v.Server, v.Path)
	}
	if len(v.Options) > 0 {
		s += ", mountOptions " + strings.Join(v.Options, ",")
	}
	s += ")"
	if v.ScopedPV != "" {
		s += fmt.Sprintf(", mounted through the run's copy PV %s / PVC %s (reclaim Retain)", v.ScopedPV, v.ScopedPVC)
	}
	return s
}

func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiouAEIOU", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

func sourceKind(s corev1.PersistentVolumeSource) string {
	switch {
	case s.NFS != nil:
		return "nfs"
	case s.CSI != nil:
		return "csi " + s.CSI.Driver
	case s.HostPath != nil:
		return "hostPath"
	case s.Local != nil:
		return "local"
	case s.ISCSI != nil:
		return "iscsi"
	case s.FC != nil:
		return "fc"
	case s.CephFS != nil:
		return "cephfs"
	case s.RBD != nil:
		return "rbd"
	case s.Glusterfs != nil:
		return "glusterfs"
	case s.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case s.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case s.AzureDisk != nil:
		return "azureDisk"
	case s.AzureFile != nil:
		return "azureFile"
	}
	return "unknown-source"
}

func splitOptions(s string) []string {
	var out []string
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// rdmaOption reports whether comma-separated mount options select the
// RDMA transport (proto=rdma, proto=rdma6, or the bare rdma option).
func rdmaOption(opts string) bool { return hasRDMA(splitOptions(opts)) }

func hasRDMA(opts []string) bool {
	for _, o := range opts {
		switch strings.ToLower(o) {
		case "rdma", "proto=rdma", "proto=rdma6":
			return true
		}
	}
	return false
}

// rdmaOptions are the transport options worth quoting: proto/rdma and port.
func rdmaOptions(opts []string) []string {
	var out []string
	for _, o := range opts {
		l := strings.ToLower(o)
		if l == "rdma" || strings.HasPrefix(l, "proto=") || strings.HasPrefix(l, "port=") {
			out = append(out, o)
		}
	}
	return out
}

// ScopedNames are the run's PV and PVC names for the operator's PV. Both
// carry the run id: with --namespace several runs share one namespace.
func ScopedNames(runID, pv string) (pvName, pvcName string) {
	return names.Object("rdmasuite-"+runID+"-stall", pv), names.Object("stall-data", runID)
}

// ScopedPV is the run's copy of pv: the same volume source and mount
// options, ReadWriteMany, reclaim Retain (deleting it never touches the
// export), labelled with the run so cleanup finds it, and pre-bound to the
// run's PVC.
func ScopedPV(pv *corev1.PersistentVolume, runID, namespace string) *corev1.PersistentVolume {
	pvName, pvcName := ScopedNames(runID, pv.Name)
	spec := pv.Spec.DeepCopy()
	spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: namespace, Name: pvcName}
	spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	spec.StorageClassName = ""
	fs := corev1.PersistentVolumeFilesystem
	spec.VolumeMode = &fs
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName,
			Labels:      map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.RunLabel: runID},
			Annotations: map[string]string{"rdmasuite.io/copy-of": pv.Name}},
		Spec: *spec,
	}
}

// ScopedPVC claims the run's PV by name from the run namespace.
func ScopedPVC(pv *corev1.PersistentVolume, runID, namespace string) *corev1.PersistentVolumeClaim {
	_, pvcName := ScopedNames(runID, pv.Name)
	empty := ""
	fs := corev1.PersistentVolumeFilesystem
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: pvcName, Namespace: namespace,
			Labels: map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.RunLabel: runID}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: &empty,
			VolumeName:       ScopedPV(pv, runID, namespace).Name,
			VolumeMode:       &fs,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
}

// setupError is a problem found before anything was disrupted; NotRun
// says whether it is the cluster's state (not-run) or a broken call (error).
type setupError struct {
	NotRun bool
	Msg    string
}

func (e *setupError) Error() string { return e.Msg }

// lookupVolume reads the operator's PVC and the PV bound to it.
func lookupVolume(ctx context.Context, kube kubernetes.Interface, ns, name string) (*corev1.PersistentVolume, Volume, error) {
	ref := ns + "/" + name
	pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, Volume{}, &setupError{NotRun: true, Msg: fmt.Sprintf("PVC %s not found: create a PVC bound to the NFS(-over-RDMA) export to test, or name one with --stall-pvc / --stall-pvc-namespace", ref)}
	}
	if err != nil {
		return nil, Volume{}, &setupError{Msg: fmt.Sprintf("read PVC %s: %v", ref, err)}
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return nil, Volume{}, &setupError{NotRun: true, Msg: fmt.Sprintf("PVC %s is %s and bound to no PV: the feature copies the bound PV's NFS source", ref, pvcPhase(pvc))}
	}
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return nil, Volume{}, &setupError{NotRun: apierrors.IsNotFound(err), Msg: fmt.Sprintf("PV %s of PVC %s: %v", pvc.Spec.VolumeName, ref, err)}
	}
	return pv, ClassifyPV(ref, pv), nil
}

func pvcPhase(p *corev1.PersistentVolumeClaim) string {
	if p.Status.Phase == "" {
		return "Pending"
	}
	return string(p.Status.Phase)
}

// createScoped creates the run's PV and PVC and waits until the PVC is
// bound. The returned cleanup deletes both, whatever happened.
func createScoped(ctx context.Context, env Env, pv *corev1.PersistentVolume, runID, ns string, timeout time.Duration) (func(), error) {
	spv, spvc := ScopedPV(pv, runID, ns), ScopedPVC(pv, runID, ns)
	cleanup := func() { deleteScoped(env.Kube, ns, spv.Name, spvc.Name) }
	if _, err := env.Kube.CoreV1().PersistentVolumes().Create(ctx, spv, metav1.CreateOptions{}); err != nil {
		return func() {}, fmt.Errorf("create the run's PV %s (a copy of %s; needs persistentvolumes create): %w", spv.Name, pv.Name, err)
	}
	if _, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, spvc, metav1.CreateOptions{}); err != nil {
		return cleanup, fmt.Errorf("create PVC %s/%s: %w", ns, spvc.Name, err)
	}
	var last *corev1.PersistentVolumeClaim
	err := poll(ctx, env.clock(), env.every(), timeout, func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, spvc.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return p.Status.Phase == corev1.ClaimBound, nil
	})
	if err != nil {
		phase := "not found"
		if last != nil {
			phase = pvcPhase(last)
		}
		return cleanup, fmt.Errorf("the run's PVC %s/%s did not bind to PV %s within %s (it is %s): %v", ns, spvc.Name, spv.Name, timeout, phase, err)
	}
	return cleanup, nil
}

// deleteScoped deletes the run's PVC, then its PV, on its own context (it
// runs after a cancelled run too). Retain keeps the export's files.
func deleteScoped(kube kubernetes.Interface, ns, pv, pvc string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, pvc, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		fmt.Printf("rdmasuite: could not delete PVC %s/%s: %v (the run's cleanup will retry)\n", ns, pvc, err)
	}
	if err := kube.CoreV1().PersistentVolumes().Delete(ctx, pv, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		fmt.Printf("rdmasuite: could not delete PV %s: %v (delete it by hand: kubectl delete pv %s; its reclaim policy is Retain, nothing on the export is removed)\n", pv, err, pv)
	}
}
