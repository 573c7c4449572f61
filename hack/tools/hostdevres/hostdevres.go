// Package hostdevres is the contract between the bed's hostdev pieces on a
// guest node: the guest's init reserves, for every NIC set aside for hostdev
// pods, the /dev/infiniband/uverbsN node its pod will use; the device plugin
// (rdma-device-plugin, a "pciDevices" resource) hands that node to the pod
// at Allocate; the chained CNI plugin (rxe-hostdev-cni) makes the pod's
// Soft-RoCE device take it.
//
// Why a reservation: a device plugin names a pod's device nodes at Allocate,
// before the sandbox exists, but a Soft-RoCE device can only be created once
// its NIC is in the pod's network namespace (moving a netdev unregisters the
// rxe on it), and the kernel gives each new RDMA device the lowest free
// uverbs minor. So at boot every hostdev NIC gets a placeholder rxe on a
// dummy netdev that holds "its" minor; the CNI plugin deletes the
// placeholder and creates the pod's rxe in one step under a lock (the freed
// minor is then the lowest free one), and gives the minor back to a new
// placeholder on DEL. Anything else would hand the pod a node of another
// device, which the kernel's device cgroup would then rightly refuse.
package hostdevres

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
)

// DefaultDir is where the guest's init writes the reservations.
const DefaultDir = "/run/rdmasuite-hostdev"

// Reservation is one hostdev NIC: <Dir>/<PCI>.json.
type Reservation struct {
	PCI               string `json:"pci"`               // the NIC's PCI address: the device plugin's device ID
	Uverbs            string `json:"uverbs"`            // reserved char device, e.g. uverbs2
	Placeholder       string `json:"placeholder"`       // rxe that holds the minor while no pod has the NIC
	PlaceholderNetdev string `json:"placeholderNetdev"` // the dummy netdev under the placeholder
	RDMADevice        string `json:"rdmaDevice"`        // name of the pod's rxe on the NIC
}

var pciRe = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// Validate names the first missing or malformed field.
func (r Reservation) Validate() error {
	if !pciRe.MatchString(r.PCI) {
		return fmt.Errorf("pci %q is not a PCI address like 0000:00:05.0", r.PCI)
	}
	for k, v := range map[string]string{"uverbs": r.Uverbs, "placeholder": r.Placeholder,
		"placeholderNetdev": r.PlaceholderNetdev, "rdmaDevice": r.RDMADevice} {
		if v == "" || strings.ContainsAny(v, "/ \t") {
			return fmt.Errorf("%s %q is empty or not a device name", k, v)
		}
	}
	if !strings.HasPrefix(r.Uverbs, "uverbs") {
		return fmt.Errorf("uverbs %q is not a uverbs node name", r.Uverbs)
	}
	return nil
}

// Path is the reservation file of a NIC.
func Path(dir, pci string) string { return filepath.Join(dir, pci+".json") }

// Read loads the reservation of the NIC at pci.
func Read(dir, pci string) (Reservation, error) {
	var r Reservation
	b, err := os.ReadFile(Path(dir, pci))
	if errors.Is(err, os.ErrNotExist) {
		return r, fmt.Errorf("no hostdev reservation for PCI device %s in %s: it is not one of the node's hostdev NICs", pci, dir)
	}
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %v", Path(dir, pci), err)
	}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("%s: %v", Path(dir, pci), err)
	}
	if r.PCI != pci {
		return r, fmt.Errorf("%s: holds PCI device %s", Path(dir, pci), r.PCI)
	}
	return r, nil
}

// All loads every reservation in dir, sorted by PCI address.
func All(dir string) ([]Reservation, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Reservation
	for _, f := range files {
		r, err := Read(dir, strings.TrimSuffix(filepath.Base(f), ".json"))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Holder names the RDMA device that owns the reserved uverbs node now, read
// from the uverbs class in sysfs under root ("" if no device has it). The
// infiniband_verbs class is not network-namespace tagged, so this sees a
// device that has moved into a pod's namespace too.
func Holder(root string, r Reservation) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "sys/class/infiniband_verbs", r.Uverbs, "ibdev"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Check says whether the reservation holds: the reserved node belongs to
// the placeholder (NIC free) or to the pod's device (NIC in use).
func Check(root string, r Reservation) error {
	h, err := Holder(root, r)
	if err != nil {
		return err
	}
	switch h {
	case r.Placeholder, r.RDMADevice:
		return nil
	case "":
		return fmt.Errorf("%s (reserved for the hostdev NIC %s) does not exist: neither %s nor %s holds it", r.Uverbs, r.PCI, r.Placeholder, r.RDMADevice)
	default:
		return fmt.Errorf("%s (reserved for the hostdev NIC %s) belongs to %s, not to %s or %s", r.Uverbs, r.PCI, h, r.Placeholder, r.RDMADevice)
	}
}

// Lock serialises the placeholder swaps of every NIC on the node (the
// lowest-free-minor rule makes two concurrent swaps trade minors).
func Lock(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
