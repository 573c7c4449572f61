package disrupt

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
)

func pvWith(name string, src corev1.PersistentVolumeSource, opts ...string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: src, MountOptions: opts,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, StorageClassName: "nfs",
			ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "rdmasuite-nfs"}}}
}

func nfsSource() corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "10.0.0.5", Path: "/export/scratch"}}
}

func boundPVC(ns, name, pv string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
}

func TestClassifyPV(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pv        *corev1.PersistentVolume
		nfs, rdma bool
		kind      string
		transport string
	}{
		{"in-tree nfs over rdma", pvWith("pv-1", nfsSource(), "nfsvers=4.1", "proto=rdma,port=20049"), true, true, "nfs", "NFS over RDMA (proto=rdma,port=20049)"},
		{"in-tree nfs over tcp", pvWith("pv-1", nfsSource(), "nfsvers=4.1", "hard"), true, false, "nfs",
			"NFS over TCP: the driver restart will not touch this mount's transport"},
		{"csi nfs with rdma in its mountOptions attribute", pvWith("pv-2", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: CSINFSDriver, VolumeHandle: "10.0.0.5#/export#", VolumeAttributes: map[string]string{"server": "10.0.0.5", "share": "/export", "mountOptions": "rdma,port=20049"}}}),
			true, true, "csi nfs.csi.k8s.io", "NFS over RDMA (rdma,port=20049)"},
		{"another csi driver", pvWith("pv-3", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com"}}), false, false, "csi ebs.csi.aws.com", ""},
		{"hostPath", pvWith("pv-1", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}), false, false, "hostPath", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := ClassifyPV("default/data", tc.pv)
			if v.NFS != tc.nfs || v.RDMA != tc.rdma || v.Kind != tc.kind {
				t.Fatalf("got nfs=%v rdma=%v kind=%q, want %v %v %q", v.NFS, v.RDMA, v.Kind, tc.nfs, tc.rdma, tc.kind)
			}
			if tc.transport != "" && v.Transport() != tc.transport {
				t.Fatalf("transport %q, want %q", v.Transport(), tc.transport)
			}
		})
	}
	v := ClassifyPV("default/data", pvWith("pv-1", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}))
	want := "PVC default/data is bound to PV pv-1, a hostPath volume, not NFS: the stall check measures NFS I/O; --stall-force runs it anyway"
	if v.NotNFSReason() != want {
		t.Fatalf("got  %q\nwant %q", v.NotNFSReason(), want)
	}
}

// The run's copy points at the same export with the same options, never
// deletes what is on it, is found by the run's labels and can only bind
// to the run's PVC.
func TestScopedPVCopiesTheSourceAndRetains(t *testing.T) {
	orig := pvWith("pv-1", nfsSource(), "proto=rdma", "port=20049")
	pv := ScopedPV(orig, "run1", "rdmasuite-run1")
	pvc := ScopedPVC(orig, "run1", "rdmasuite-run1")
	if !strings.HasPrefix(pv.Name, "rdmasuite-run1-") || len(pv.Name) > 63 {
		t.Fatalf("name %q", pv.Name)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Fatalf("reclaim %s: deleting the copy must not delete the export's data", pv.Spec.PersistentVolumeReclaimPolicy)
	}
	if pv.Labels[cluster.RunLabel] != "run1" || pv.Labels[cluster.ManagedByLabel] != cluster.ManagedBy {
		t.Fatalf("labels %v", pv.Labels)
	}
	if pv.Spec.NFS == nil || pv.Spec.NFS.Server != "10.0.0.5" || pv.Spec.NFS.Path != "/export/scratch" || strings.Join(pv.Spec.MountOptions, ",") != "proto=rdma,port=20049" {
		t.Fatalf("source/options not copied: %+v %v", pv.Spec.NFS, pv.Spec.MountOptions)
	}
	if pv.Spec.NFS == orig.Spec.NFS {
		t.Fatal("the copy shares the original's source struct")
	}
	if cr := pv.Spec.ClaimRef; cr == nil || cr.Namespace != "rdmasuite-run1" || cr.Name != pvc.Name {
		t.Fatalf("claimRef %+v", cr)
	}
	if pvc.Spec.VolumeName != pv.Name || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "" || pv.Spec.StorageClassName != "" {
		t.Fatalf("pvc %+v", pvc.Spec)
	}
	if orig.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || orig.Spec.ClaimRef.Name != "rdmasuite-nfs" {
		t.Fatal("the operator's PV was modified")
	}
}

func setupEnv(objs ...runtime.Object) (*fake.Clientset, Env, *fakeClock) {
	cs := fake.NewClientset(objs...)
	clk := newClock()
	return cs, Env{Kube: cs, Clock: clk, Printf: func(string, ...any) {}}, clk
}

func thresholdSet(t *testing.T) *thresholds.Set {
	t.Helper()
	s, err := thresholds.Load("")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A volume that is not NFS is not disrupted for: not-run with what was
// found, nothing created.
func TestRunRefusesANonNFSVolume(t *testing.T) {
	cs, env, _ := setupEnv(boundPVC("default", "rdmasuite-nfs", "pv-1"),
		pvWith("pv-1", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}))
	o := baseOptions()
	o.Targets = []string{"node-a", "node-b"}
	o.Thresholds = thresholdSet(t)
	got := Run(context.Background(), env, o)
	if len(got) != 4 {
		t.Fatalf("want 2 checks per target, got %d", len(got))
	}
	for _, c := range got {
		if c.Status != reports.NotRun || !strings.Contains(c.Reason, "a hostPath volume, not NFS") {
			t.Fatalf("%s: %s %q", c.ID, c.Status, c.Reason)
		}
	}
	pvs, _ := cs.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
	if len(pvs.Items) != 1 {
		t.Fatalf("a PV was created for a refused volume: %d", len(pvs.Items))
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "delete" || a.GetVerb() == "create" {
			t.Fatalf("nothing may be created or deleted: %v", a)
		}
	}
}

func TestRunMissingPVCIsNotRun(t *testing.T) {
	_, env, _ := setupEnv()
	o := baseOptions()
	o.Thresholds = thresholdSet(t)
	got := Run(context.Background(), env, o)
	if len(got) != 2 || got[0].Status != reports.NotRun || !strings.Contains(got[0].Reason, "PVC default/rdmasuite-nfs not found") {
		t.Fatalf("%+v", got)
	}
}

// The run's PV and PVC go on the error path too (here the PVC never
// binds).
func TestRunDeletesTheScopedVolumeWhenTheClaimNeverBinds(t *testing.T) {
	cs, env, _ := setupEnv(boundPVC("default", "rdmasuite-nfs", "pv-1"), pvWith("pv-1", nfsSource(), "proto=rdma"))
	o := baseOptions()
	o.Thresholds = thresholdSet(t)
	got := Run(context.Background(), env, o)
	if len(got) != 2 || got[0].Status != reports.Error || !strings.Contains(got[0].Reason, "did not bind") {
		t.Fatalf("%+v", got)
	}
	pvs, _ := cs.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
	if len(pvs.Items) != 1 || pvs.Items[0].Name != "pv-1" {
		t.Fatalf("the run's PV was left: %+v", pvs.Items)
	}
	pvcs, _ := cs.CoreV1().PersistentVolumeClaims(o.Namespace).List(context.Background(), metav1.ListOptions{})
	if len(pvcs.Items) != 0 {
		t.Fatalf("the run's PVC was left")
	}
}

func hostPathSource() corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}
}
