// Command rdmaprobe is the binary that runs inside the suite's pods. Each
// subcommand is one probe and prints one JSON envelope (see
// workloads/probeout) on stdout; diagnostics go to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/internal/suiteflags"
	"github.com/rdmasuite/rdmasuite/workloads/cstdout"
	"github.com/rdmasuite/rdmasuite/workloads/node"
	"github.com/rdmasuite/rdmasuite/workloads/podenv"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/tcpcheck"
)

// errCheckFailed marks a probe that ran to the end and whose check failed.
var errCheckFailed = errors.New("check failed")

type subcommand struct {
	summary string
	run     func(args []string) error
}

var subcommands = map[string]subcommand{
	"version":    {"print the probe version", runVersion},
	"env":        {"print the pod's RDMA-relevant environment (memlock, IPC_LOCK, /dev/infiniband)", runEnv},
	"tcp":        {"check pod-to-pod TCP: tcp --listen :PORT | tcp --connect HOST:PORT", runTCP},
	"devices":    {"list RDMA devices, ports (state, link layer, rate, MTU) and GIDs", runDevices},
	"bw":         {"RDMA write/read bandwidth: bw server [flags] | bw client [flags] HOST", runBW},
	"mr":         {"memory-registration probe against the memlock limit", runMR},
	"node":       {"host checks through a host root: modules, MOFED/GPU markers, RDMA ports and their counters at rest, PSI, NFS mounts", runNode},
	"say":        {"print a message and exit with a code, or sleep (stand-in containers for tests)", runSay},
	"hold":       {"keep a node's probe pod alive for the suite's runs over pods/exec: until SIGTERM or --max", runHold},
	"stall":      {"NFS I/O-stall writer/reader/verifier: stall write|read|verify|stop [flags]", runStall},
	"nccl":       {"one rank of a multi-node NCCL sweep (Indexed Job pod; CUDA and NCCL loaded at run time)", runNCCL},
	"gpu":        {"prove the GPU path without an RDMA device: CUDA driver, allocation, dma-buf export, PCI topology (hack/gpu-device-check.sh)", runGPU},
	"nccl-tests": {"run the image's own nccl-tests binary (single node, multi-GPU) and print its parsed table", runNCCLTests},
}

func main() { os.Exit(run(os.Args[1:])) }

// run is main without the exit. help, -h and --help print the
// subcommands on stdout and exit 0; SUB --help prints what SUB does and,
// for a subcommand with flags, its flags, never running the probe.
func run(args []string) int {
	if len(args) == 0 {
		usage(os.Stderr)
		return 2
	}
	if args[0] == "help" || suiteflags.WantsHelp(args[:1]) {
		if len(args) > 1 && args[0] == "help" {
			return run(append(args[1:2], "--help"))
		}
		usage(os.Stdout)
		return 0
	}
	sc, ok := subcommands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "rdmaprobe: unknown subcommand %q (see: rdmaprobe --help)\n", args[0])
		usage(os.Stderr)
		return 2
	}
	if suiteflags.WantsHelp(args[1:]) {
		fmt.Fprintf(os.Stdout, "rdmaprobe %s: %s\n", args[0], sc.summary)
		// Subcommands without flags, or whose mode comes first (bw
		// server|client, stall write|...), end here; the others print
		// their flags below (flag's -h: on stderr, ErrHelp).
		if flagless[args[0]] || modeFirst[args[0]] && suiteflags.WantsHelp(args[1:2]) {
			return 0
		}
	}
	if loadsGPULibs[args[0]] {
		// Before any library is loaded: C's stdout goes to stderr, the
		// envelope keeps stdout to itself.
		_, note, err := cstdout.Divert()
		if err != nil {
			fmt.Fprintf(os.Stderr, "rdmaprobe %s: %v\n", args[0], err)
			return 1
		}
		if note != "" {
			fmt.Fprintf(os.Stderr, "rdmaprobe %s: %s\n", args[0], note)
		}
	}
	err := sc.run(args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintf(os.Stderr, "rdmaprobe %s: %v\n", args[0], err)
	return exitCode(err)
}

// exitCode is the process status for a subcommand's error: 0 none (or
// help), 3 the probe ran and its check failed, 1 it could not run.
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errCheckFailed):
		return 3
	}
	return 1
}

// flagless subcommands take no flags: --help must not run them.
var flagless = map[string]bool{"version": true, "env": true}

// loadsGPULibs: subcommands that load CUDA or NCCL at run time. NCCL
// prints its debug lines through C's stdout (see workloads/cstdout).
var loadsGPULibs = map[string]bool{"bw": true, "nccl": true, "gpu": true}

// modeFirst subcommands take a mode before their flags (bw server|client,
// stall write|read|verify|stop): SUB --help has no flag set to ask.
var modeFirst = map[string]bool{"bw": true, "stall": true}

func usage(w io.Writer) {
	fmt.Fprintln(w, "rdmaprobe: the probe that runs in the suite's pods; each subcommand prints one JSON envelope on stdout.")
	fmt.Fprintln(w, "\nUsage:\n  rdmaprobe SUBCOMMAND [flags]\n\nSubcommands:")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, subcommands[n].summary)
	}
	fmt.Fprintln(w, "\nExit codes: 0 the probe ran and passed; 3 it ran and its check failed; 1 it could not run; 2 bad usage.")
	fmt.Fprintln(w, "Use \"rdmaprobe SUBCOMMAND --help\" for its flags.")
}

type versionResult struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func runVersion([]string) error {
	return probeout.Write(os.Stdout, "version", versionResult{
		Version: probeout.Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
	})
}

func runEnv([]string) error {
	e, err := podenv.Collect("/proc", "/dev")
	if err != nil {
		return err
	}
	return probeout.Write(os.Stdout, "env", e)
}

func runTCP(args []string) error {
	fs := flag.NewFlagSet("tcp", flag.ContinueOnError)
	listen := fs.String("listen", "", "serve one check on this address, e.g. :18515")
	connect := fs.String("connect", "", "check the server at HOST:PORT")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for the peer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	switch {
	case *listen != "" && *connect == "":
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return err
		}
		host, _ := os.Hostname()
		if err := tcpcheck.Serve(ctx, ln, host, *timeout); err != nil {
			return err
		}
		return probeout.Write(os.Stdout, "tcp", map[string]string{"served": ln.Addr().String()})
	case *connect != "" && *listen == "":
		r, err := tcpcheck.Check(ctx, *connect, *timeout)
		if err != nil {
			return err
		}
		return probeout.Write(os.Stdout, "tcp", r)
	}
	return errors.New("give exactly one of --listen or --connect")
}

func runNode(args []string) error {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	root := fs.String("host-root", "/host", "where the host's / is mounted (read-only) in this container; / on the host itself")
	window := fs.Duration("window", 2*time.Second, "PSI / iowait sampling window, also the window every RDMA port's counters are read around at rest (0: one read, no rates, no at-rest read)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := node.Collect(node.Options{HostRoot: *root, SampleWindow: *window})
	if err != nil {
		return err
	}
	return probeout.Write(os.Stdout, "node", r)
}

// runSay prints its arguments and exits with --exit, after --sleep.
// End-to-end tests use it to stand in for operator containers in the
// states of the seeds (a MOFED container that logs the storage-module
// error and exits).
func runSay(args []string) error {
	fs := flag.NewFlagSet("say", flag.ContinueOnError)
	code := fs.Int("exit", 0, "exit code")
	sleep := fs.Duration("sleep", 0, "sleep this long first (e.g. 1h for an init container that never finishes)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Println(strings.Join(fs.Args(), " "))
	time.Sleep(*sleep)
	os.Exit(*code)
	return nil
}
