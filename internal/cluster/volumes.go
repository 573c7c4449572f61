package cluster

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DeleteRunVolumes deletes the cluster-scoped PersistentVolumes a run
// created (the disruptive feature's copy of an NFS PV), found by the
// suite's labels like the namespace. Those PVs have reclaim policy
// Retain: deleting them never touches the data on the export.
func DeleteRunVolumes(ctx context.Context, cs kubernetes.Interface, runID string) error {
	sel := ManagedByLabel + "=" + ManagedBy + "," + RunLabel + "=" + runID
	list, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("list run PVs (%s): %w", sel, err)
	}
	var errs []error
	for _, pv := range list.Items {
		if pv.Labels[RunLabel] != runID || pv.Labels[ManagedByLabel] != ManagedBy {
			continue
		}
		if err := cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete run PV %s: %w", pv.Name, err))
		}
	}
	return errors.Join(errs...)
}
