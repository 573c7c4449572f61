// Command rxe-hostdev-cni is the bed's chained CNI step for the hostdev
// variant: it runs after host-device (which moved the pod's dedicated NIC
// into the pod's network namespace as CNI_IFNAME and gave it an address)
// and binds a Soft-RoCE device to that NIC inside the pod's namespace — the
// part rdma-cni does on SR-IOV clusters, where the VF's RDMA device already
// exists and only has to follow the netdev (rdma-cni cannot do it for rxe:
// see the README's bed section).
//
// Multus passes the NIC's PCI address as "deviceID" (the NAD's
// k8s.v1.cni.cncf.io/resourceName annotation makes it read the kubelet's
// pod-resources). The NIC's reservation (package hostdevres) names the rxe
// to create and the uverbs node the device plugin already gave the pod.
//
// ADD: under the node-wide lock, delete the NIC's placeholder rxe, create
// the pod's rxe on CNI_IFNAME from inside the pod's namespace and, in
// exclusive RDMA netns mode (where it lands in the initial namespace), move
// it into the pod's; then prove it holds the reserved uverbs node. DEL:
// delete the pod's rxe before host-device hands the NIC back (rxe in Debian's
// 7.3 kernel lacks later fixes for an rxe torn down with its namespace), and
// put the placeholder back.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/rdmasuite/rdmasuite/hack/tools/hostdevres"
)

type netConf struct {
	types.NetConf
	DeviceID string `json:"deviceID"` // injected by Multus
	StateDir string `json:"stateDir,omitempty"`
	Root     string `json:"sysRoot,omitempty"` // tests
}

func parse(stdin []byte) (*netConf, error) {
	conf := &netConf{StateDir: hostdevres.DefaultDir, Root: "/"}
	if err := json.Unmarshal(stdin, conf); err != nil {
		return nil, fmt.Errorf("rxe-hostdev: bad network config: %v", err)
	}
	if conf.DeviceID == "" {
		return nil, errors.New("rxe-hostdev: no deviceID in the network config: the NetworkAttachmentDefinition needs the annotation " +
			"k8s.v1.cni.cncf.io/resourceName naming the hostdev resource, so that Multus passes the allocated NIC's PCI address")
	}
	return conf, nil
}

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: cmdAdd, Del: cmdDel, Check: cmdCheck},
		version.PluginSupports("0.4.0", "1.0.0", "1.1.0"), "rxe-hostdev: Soft-RoCE on a hostdev NIC inside the pod's network namespace")
}

func cmdAdd(args *skel.CmdArgs) error {
	conf, err := parse(args.StdinData)
	if err != nil {
		return err
	}
	if conf.RawPrevResult == nil {
		return errors.New("rxe-hostdev: no prevResult: chain it after host-device in a conflist")
	}
	if err := version.ParsePrevResult(&conf.NetConf); err != nil {
		return err
	}
	prev, err := current.NewResultFromResult(conf.PrevResult)
	if err != nil {
		return err
	}
	res, err := hostdevres.Read(conf.StateDir, conf.DeviceID)
	if err != nil {
		return err
	}
	unlock, err := hostdevres.Lock(conf.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := attach(conf.Root, res, args.Netns, args.IfName); err != nil {
		detach(res, args.Netns)
		if perr := restorePlaceholder(conf.Root, res); perr != nil {
			err = fmt.Errorf("%v; and putting the placeholder back failed: %v", err, perr)
		}
		return err
	}
	return types.PrintResult(prev, conf.CNIVersion)
}

func cmdDel(args *skel.CmdArgs) error {
	conf, err := parse(args.StdinData)
	if err != nil {
		// DEL must not fail on what ADD would have refused.
		return nil
	}
	res, err := hostdevres.Read(conf.StateDir, conf.DeviceID)
	if err != nil {
		return nil
	}
	unlock, err := hostdevres.Lock(conf.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	detach(res, args.Netns)
	return restorePlaceholder(conf.Root, res)
}

func cmdCheck(args *skel.CmdArgs) error {
	conf, err := parse(args.StdinData)
	if err != nil {
		return err
	}
	res, err := hostdevres.Read(conf.StateDir, conf.DeviceID)
	if err != nil {
		return err
	}
	h, err := hostdevres.Holder(conf.Root, res)
	if err != nil {
		return err
	}
	if h != res.RDMADevice {
		return fmt.Errorf("rxe-hostdev: %s is held by %q, not by the pod's %s", res.Uverbs, h, res.RDMADevice)
	}
	return nil
}

// inNetns runs f with a netlink handle in the namespace at path.
func inNetns(path string, f func(*netlink.Handle) error) error {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("open the pod's network namespace %s: %v", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_RDMA)
	if err != nil {
		return fmt.Errorf("netlink in %s: %v", path, err)
	}
	defer h.Close()
	return f(h)
}

func attach(root string, r hostdevres.Reservation, netnsPath, ifName string) error {
	mode, err := netlink.RdmaSystemGetNetnsMode()
	if err != nil {
		return fmt.Errorf("rxe-hostdev: read the RDMA netns mode: %v", err)
	}
	if err := netlink.RdmaLinkDel(r.Placeholder); err != nil && !notFound(err) {
		return fmt.Errorf("rxe-hostdev: delete the placeholder %s: %v", r.Placeholder, err)
	}
	err = inNetns(netnsPath, func(h *netlink.Handle) error {
		if err := h.RdmaLinkAdd(r.RDMADevice, "rxe", ifName); err != nil {
			return fmt.Errorf("rxe-hostdev: rdma link add %s type rxe netdev %s (in %s): %v", r.RDMADevice, ifName, netnsPath, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if mode == "exclusive" {
		// The rxe's ib_device is allocated in the initial namespace whatever
		// namespace asked for it; move it to the pod's.
		link, err := netlink.RdmaLinkByName(r.RDMADevice)
		if err != nil {
			return fmt.Errorf("rxe-hostdev: find %s in the initial namespace (exclusive mode): %v", r.RDMADevice, err)
		}
		ns, err := netns.GetFromPath(netnsPath)
		if err != nil {
			return err
		}
		err = netlink.RdmaLinkSetNsFd(link, uint32(ns))
		ns.Close()
		if err != nil {
			return fmt.Errorf("rxe-hostdev: rdma dev set %s netns %s: %v", r.RDMADevice, netnsPath, err)
		}
		if err := inNetns(netnsPath, func(h *netlink.Handle) error {
			_, err := h.RdmaLinkByName(r.RDMADevice)
			return err
		}); err != nil {
			return fmt.Errorf("rxe-hostdev: %s moved but not visible in the pod's namespace: %v", r.RDMADevice, err)
		}
	}
	// The kernel registers the uverbs node right after the device; give it
	// a moment, then refuse anything but the reserved node.
	deadline := time.Now().Add(5 * time.Second)
	for {
		h, err := hostdevres.Holder(root, r)
		if err == nil && h == r.RDMADevice {
			fmt.Fprintf(os.Stderr, "rxe-hostdev: %s on %s in %s (%s mode) holds %s\n", r.RDMADevice, ifName, netnsPath, mode, r.Uverbs)
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("held by %q", h)
			}
			return fmt.Errorf("rxe-hostdev: %s did not get the reserved %s (%v): the pod would get another device's node", r.RDMADevice, r.Uverbs, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// detach deletes the pod's rxe wherever it is: in the pod's namespace
// (exclusive mode), else in the initial one. Gone already is fine.
func detach(r hostdevres.Reservation, netnsPath string) {
	if netnsPath != "" {
		_ = inNetns(netnsPath, func(h *netlink.Handle) error { return h.RdmaLinkDel(r.RDMADevice) })
	}
	_ = netlink.RdmaLinkDel(r.RDMADevice)
}

// restorePlaceholder puts the NIC's placeholder back on its dummy netdev so
// that it takes the reserved minor again (the lowest free one once the
// pod's rxe is gone).
func restorePlaceholder(root string, r hostdevres.Reservation) error {
	if h, err := hostdevres.Holder(root, r); err == nil && h == r.Placeholder {
		return nil
	}
	if err := netlink.RdmaLinkAdd(r.Placeholder, "rxe", r.PlaceholderNetdev); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("rxe-hostdev: rdma link add %s type rxe netdev %s: %v", r.Placeholder, r.PlaceholderNetdev, err)
	}
	if err := hostdevres.Check(root, r); err != nil {
		return fmt.Errorf("rxe-hostdev: placeholder back but %v", err)
	}
	return nil
}

func notFound(err error) bool {
	return err != nil && (errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "no such") ||
		strings.Contains(err.Error(), "not found"))
}

func init() { runtime.LockOSThread() }
