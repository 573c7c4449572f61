// Command rdma-device-plugin advertises a node's RDMA devices to the kubelet
// as a shared extended resource, the way the Mellanox/NVIDIA RDMA shared
// device plugin does: rdmaHcaMax "devices" that all map to the same selected
// HCAs, so up to that many pods use them at once. Pods asking for the
// resource get the selected devices' /dev/infiniband/uverbsN (plus umad/issm
// when present) and /dev/infiniband/rdma_cm read-write, without privileged
// mode; pods that do not ask get nothing (the device cgroup blocks the rest).
//
// Either flags describe one resource, or -config names a JSON file with a
// configList like the Mellanox plugin's:
//
//	{"configList": [{"resourceName": "rdma_shared_device_a", "rdmaHcaMax": 63,
//	  "selectors": {"ifNames": ["eth0"], "drivers": ["rdma_rxe"], "linkTypes": ["Ethernet"]}}]}
//
// -list prints what the selectors pick and exits.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rdmasuite/rdmasuite/hack/tools/hostdevres"
	"github.com/rdmasuite/rdmasuite/hack/tools/rdma-device-plugin/rdmadev"
	"github.com/rdmasuite/rdmasuite/workloads/units"
)

type fileConfig struct {
	PeriodicUpdateInterval int              `json:"periodicUpdateInterval,omitempty"` // seconds
	ConfigList             []resourceConfig `json:"configList"`
}

// splitList splits a comma-separated flag (one splitter for the repo).
func splitList(s string) []string { return units.SplitList(s) }

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	var (
		configFile    = flag.String("config", "", "JSON config with a configList (overrides the resource flags)")
		resourceName  = flag.String("resource-name", "rdma/rdma_shared_device_a", "extended resource to advertise (PREFIX/NAME)")
		sharedCount   = flag.Int("shared-count", 63, "how many pods may share the selected devices (rdmaHcaMax)")
		ifNames       = flag.String("ifnames", "", "comma-separated netdev names to select (empty: any)")
		drivers       = flag.String("drivers", "", "comma-separated drivers to select, e.g. rdma_rxe,mlx5_core (empty: any)")
		linkTypes     = flag.String("link-types", "", "comma-separated link types: Ethernet, InfiniBand (empty: any)")
		devices       = flag.String("rdma-devices", "", "comma-separated RDMA device names, e.g. rxe0 (empty: any)")
		requireActive = flag.Bool("require-active-port", false, "advertise the devices Unhealthy while no selected port is ACTIVE")
		kubeletDir    = flag.String("kubelet-dir", "/var/lib/kubelet", "kubelet root directory (its device-plugins/kubelet.sock is used)")
		root          = flag.String("root", "/", "root under which /sys and /dev are read (tests, or /host in a pod)")
		rescan        = flag.Duration("rescan", 10*time.Second, "how often the devices are re-read")
		list          = flag.Bool("list", false, "print all RDMA devices and each resource's selection as JSON, then exit")
		hostdevRes    = flag.String("hostdev-resource", "", "also advertise this hostdev resource (e.g. nvidia.com/hostdev): one device per NIC reserved in -hostdev-dir")
		hostdevDir    = flag.String("hostdev-dir", hostdevres.DefaultDir, "where the hostdev NICs' reservations are (hack/tools/hostdevres)")
	)
	flag.Parse()

	cfgs := []resourceConfig{{
		ResourceName: *resourceName, RdmaHcaMax: *sharedCount, RequireActivePort: *requireActive,
		Selectors: rdmadev.Selector{IfNames: splitList(*ifNames), Drivers: splitList(*drivers),
			LinkTypes: splitList(*linkTypes), Devices: splitList(*devices)},
	}}
	if *hostdevRes != "" {
		cfgs = append(cfgs, resourceConfig{ResourceName: *hostdevRes, HostdevReservations: *hostdevDir})
	}
	if *configFile != "" {
		b, err := os.ReadFile(*configFile)
		if err != nil {
			log.Fatal(err)
		}
		var fc fileConfig
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fc); err != nil {
			log.Fatalf("%s: %v", *configFile, err)
		}
		if len(fc.ConfigList) == 0 {
			log.Fatalf("%s: configList is empty", *configFile)
		}
		cfgs = fc.ConfigList
		if fc.PeriodicUpdateInterval > 0 {
			*rescan = time.Duration(fc.PeriodicUpdateInterval) * time.Second
		}
	}
	seen := map[string]bool{}
	for _, c := range cfgs {
		if err := c.validate(); err != nil {
			log.Fatal(err)
		}
		if seen[c.fullName()] {
			log.Fatalf("resource %s configured twice", c.fullName())
		}
		seen[c.fullName()] = true
	}

	if *list {
		if err := printList(*root, cfgs); err != nil {
			log.Fatal(err)
		}
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	dir := filepath.Join(*kubeletDir, "device-plugins")
	var wg sync.WaitGroup
	errs := make(chan error, len(cfgs))
	for _, c := range cfgs {
		p := newPlugin(c, *root, dir, *rescan)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.run(ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", p.name(), err)
				stop()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		log.Fatal(err)
	}
	log.Print("stopped")
}

func printList(root string, cfgs []resourceConfig) error {
	all, err := rdmadev.Scanner{Root: root}.Scan()
	if err != nil {
		return err
	}
	type res struct {
		Resource string         `json:"resource"`
		Selected []string       `json:"selected"`
		Healthy  bool           `json:"healthy"`
		Why      string         `json:"why,omitempty"`
		Specs    []rdmadev.Spec `json:"deviceSpecs"`
	}
	out := struct {
		Devices   []rdmadev.Device `json:"devices"`
		Resources []res            `json:"resources"`
	}{Devices: all}
	for _, c := range cfgs {
		if c.hostdev() {
			continue // its NICs are listed by the reservations, not by selectors
		}
		sel := rdmadev.Select(all, c.Selectors)
		ok, why := rdmadev.Healthy(sel, c.RequireActivePort)
		r := res{Resource: c.fullName(), Selected: []string{}, Healthy: ok, Why: why,
			Specs: rdmadev.Specs(sel, rdmadev.Scanner{Root: root}.HasRdmaCM())}
		for _, d := range sel {
			r.Selected = append(r.Selected, d.Name)
		}
		out.Resources = append(out.Resources, r)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
