// Command mofed-standin plays the NVIDIA Network Operator's MOFED/DOCA driver
// container on the guest nodes of the local bed, where the "driver" is
// Soft-RoCE: deleting its pod is then a real RDMA driver restart underneath
// whatever uses the device (an NFS-over-RDMA mount), as seed 000 describes.
//
// It does on a Soft-RoCE node what the real container does on a ConnectX
// node, in the same order, with the same environment variables:
//
//	start: remove a stale .driver-ready; if storage modules (rpcrdma, …) are
//	       loaded and UNLOAD_STORAGE_MODULES is not "true", log the real
//	       container's refusal and exit (the DaemonSet crash-loops); with it,
//	       unload them first; bring the RDMA devices up (rdma link add rxeN
//	       on the rails); write .driver-ready.
//	stop (SIGTERM): remove .driver-ready; with UNLOAD_STORAGE_MODULES=true
//	       unload the storage modules; take the RDMA devices down (rdma link
//	       delete), which is what makes NFS-over-RDMA I/O stall.
//
// One difference from a ConnectX node, forced by the kernel: a storage module
// that a live mount or nfsd holds cannot be unloaded (delete_module fails
// with EBUSY); the real container's unload fails the same way, so the module
// is left loaded and the mount rides out the device removal on its own
// reconnect logic. The log says so.
//
// `mofed-standin ready` is the readiness probe: it exits 0 only while
// .driver-ready exists.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rdmasuite/rdmasuite/workloads/node"
)

// refusal is the real driver container's message (DOCA driver entrypoint),
// word for word, so log-based diagnosis (rdmasuite doctor) sees what it
// would see on a real node.
const refusal = `Storage modules are loaded for current driver, terminating prior driver reload failure due to UNLOAD_STORAGE_MODULES not set to "true"`

func logf(format string, args ...any) {
	fmt.Printf("%s mofed-standin: %s\n", time.Now().UTC().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
}

type link struct{ name, netdev string }

func main() {
	fs := flag.NewFlagSet("mofed-standin", flag.ExitOnError)
	readyFile := fs.String("ready-file", node.DriverReadyPath, "the driver-ready marker (host path mounted at the same path)")
	links := fs.String("links", "rxe0=eth1,rxe1=eth2", "RDMA devices this driver owns: NAME=NETDEV,…")
	procModules := fs.String("proc-modules", "/proc/modules", "the host's module list")
	args := os.Args[1:]
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	_ = fs.Parse(args)
	switch cmd {
	case "ready":
		if _, err := os.Stat(*readyFile); err != nil {
			fmt.Println("not ready:", err)
			os.Exit(1)
		}
		return
	case "run":
	default:
		fmt.Fprintf(os.Stderr, "usage: mofed-standin [run|ready] [flags]\n")
		os.Exit(2)
	}
	ls, err := parseLinks(*links)
	if err != nil {
		logf("bad --links: %v", err)
		os.Exit(2)
	}
	unload := os.Getenv("UNLOAD_STORAGE_MODULES") == "true"
	os.Exit(run(*readyFile, *procModules, ls, unload))
}

func parseLinks(s string) ([]link, error) {
	var out []link
	for _, kv := range strings.Split(s, ",") {
		name, netdev, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || name == "" || netdev == "" {
			return nil, fmt.Errorf("%q is not NAME=NETDEV", kv)
		}
		out = append(out, link{name, netdev})
	}
	return out, nil
}

func run(readyFile, procModules string, links []link, unload bool) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	logf("start: UNLOAD_STORAGE_MODULES=%t, links %v", unload, links)
	if err := os.Remove(readyFile); err == nil {
		logf("driver ready indicator cleared (%s)", readyFile)
	}
	loaded, err := loadedStorageModules(procModules)
	if err != nil {
		logf("reading %s: %v", procModules, err)
		return 1
	}
	if len(loaded) > 0 && !unload {
		logf("storage modules loaded: %s", strings.Join(loaded, " "))
		fmt.Println(refusal)
		return 1
	}
	if unload {
		unloadStorage(loaded)
	}
	for _, l := range links {
		if err := up(l); err != nil {
			logf("bringing %s up on %s: %v", l.name, l.netdev, err)
			return 1
		}
	}
	if err := os.MkdirAll(filepath.Dir(readyFile), 0o755); err != nil {
		logf("%v", err)
		return 1
	}
	if err := os.WriteFile(readyFile, nil, 0o644); err != nil {
		logf("writing %s: %v", readyFile, err)
		return 1
	}
	logf("driver ready: %s written", readyFile)

	s := <-sigs
	logf("stop (%s): removing %s", s, readyFile)
	_ = os.Remove(readyFile)
	if unload {
		loaded, _ := loadedStorageModules(procModules)
		unloadStorage(loaded)
	}
	rc := 0
	for _, l := range links {
		t := time.Now()
		if err := netlink.RdmaLinkDel(l.name); err != nil && !errors.Is(err, unix.ENODEV) {
			logf("rdma link delete %s: %v", l.name, err)
			rc = 1
			continue
		}
		logf("rdma link delete %s: down (%.3f s)", l.name, time.Since(t).Seconds())
	}
	return rc
}

// loadedStorageModules lists the storage modules present in /proc/modules,
// as the real container's `lsmod | egrep …` does.
func loadedStorageModules(procModules string) ([]string, error) {
	b, err := os.ReadFile(procModules)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			have[f[0]] = true
		}
	}
	var out []string
	for _, m := range node.StorageModules {
		if have[m] {
			out = append(out, m)
		}
	}
	return out, nil
}

func unloadStorage(mods []string) {
	for _, m := range mods {
		err := unix.DeleteModule(m, unix.O_NONBLOCK)
		switch {
		case err == nil:
			logf("storage module %s unloaded", m)
		case errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EBUSY):
			logf("storage module %s is in use (an NFS-over-RDMA mount or nfsd holds it): the kernel refuses to unload it; left loaded", m)
		default:
			logf("unloading storage module %s: %v", m, err)
		}
	}
}

// up creates the rxe device unless it exists. Like a real driver load it
// does not wait for the link: a port whose cable (here: netdev) is down
// comes up later, and readiness is the driver's, not the fabric's.
func up(l link) error {
	if _, err := netlink.RdmaLinkByName(l.name); err == nil {
		logf("%s already up", l.name)
		return nil
	}
	if err := netlink.RdmaLinkAdd(l.name, "rxe", l.netdev); err != nil {
		return fmt.Errorf("rdma link add %s type rxe netdev %s: %w", l.name, l.netdev, err)
	}
	logf("rdma link add %s type rxe netdev %s", l.name, l.netdev)
	return nil
}
