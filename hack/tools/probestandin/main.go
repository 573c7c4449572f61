// Command probestandin stands in for /usr/local/bin/rdmaprobe on the kwok
// fleet bench (hack/fleet-bench.sh), where kwok runs every pods/exec
// command on its own host: the suite's default path exec's each round's
// `rdmaprobe bw server …` and `rdmaprobe bw client …` in one probe pod per
// node, and this binary answers them as a healthy probe would. It parses
// the same flags, sleeps the simulated probe time, and prints what the real
// probe prints for the ops, sizes and rails asked: one bw envelope per run
// (framed with its own exit status when named or joined by --then), every
// rail's figures made with the product's arithmetic (bw.Compute) and both
// sides' port counters (before/after readings of the rail's own port, whose
// byte counters back the measured bytes), so the suite's verdict judges
// the op rows and the link rows, not a canned shortcut.
//
// Environment (set by kwok's ClusterExec):
//
//	PROBE_CLIENT_MS, PROBE_SERVER_MS   how long a client / server invocation runs (1000, 1500)
//	PROBE_PORTS, PROBE_RATE_GBPS       the node's rails and link rate (8, 200)
//	PROBE_COUNTERS_OTHER_PORT=1        read every rail's counters on the next device (a broken probe)
//
// `rdmaprobe hold --max D` (a node pod's own command) sleeps D.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/units"
)

func main() {
	os.Exit(run1(os.Args[1:], os.Stdout, os.Stderr, time.Sleep))
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		return v
	}
	return def
}

func fabricFromEnv() fabric {
	return fabric{ports: envInt("PROBE_PORTS", 8), rateGbps: envFloat("PROBE_RATE_GBPS", 200), frac: 0.95,
		otherPort: os.Getenv("PROBE_COUNTERS_OTHER_PORT") == "1"}
}

// run1 is the process: its exit status.
func run1(args []string, stdout, stderr io.Writer, sleep func(time.Duration)) int {
	if len(args) > 0 && args[0] == "hold" {
		fs := flag.NewFlagSet("hold", flag.ContinueOnError)
		d := fs.Duration("max", time.Hour, "how long to hold")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		sleep(*d)
		return 0
	}
	if len(args) < 2 || args[0] != "bw" || (args[1] != "server" && args[1] != "client") {
		fmt.Fprintf(stderr, "probestandin: only `bw server|client …` and `hold` are simulated, got %q\n", args)
		return 2
	}
	role := args[1]
	ms := envInt("PROBE_CLIENT_MS", 1000)
	if role == "server" {
		ms = envInt("PROBE_SERVER_MS", 1500)
	}
	start := time.Now()
	sleep(time.Duration(ms) * time.Millisecond)
	return printRuns(stdout, stderr, fabricFromEnv(), role, args[2:], start)
}

// printRuns prints every run of args (cut at --then) as the probe does;
// its exit status is the first failed run's.
func printRuns(stdout, stderr io.Writer, f fabric, role string, args []string, start time.Time) int {
	runs := splitThen(args)
	framed := len(runs) > 1 || hasRunName(runs[0])
	exit := 0
	for k, a := range runs {
		rn, err := parseRun(role, a)
		name := rn.name
		if name == "" {
			name = fmt.Sprintf("run-%d", k+1)
		}
		if framed {
			_ = probeout.WriteRunBegin(stdout, k+1, len(runs), name)
		}
		code := 0
		if err != nil {
			fmt.Fprintf(stderr, "probestandin: %v\n", err)
			_ = probeout.WriteError(stdout, bw.ProbeName, bw.ProbeOutput{Role: role, Found: []bw.Rail{}, Rails: []bw.RailResult{}},
				probeout.Errorf(probeout.KindUsage, "%v", err))
			code = 2
		} else if err := probeout.Write(stdout, bw.ProbeName, f.output(role, rn, start)); err != nil {
			fmt.Fprintf(stderr, "probestandin: %v\n", err)
			code = 1
		}
		if framed {
			_ = probeout.WriteRunEnd(stdout, k+1, len(runs), name, code)
		}
		if code != 0 && exit == 0 {
			exit = code
		}
	}
	return exit
}

func splitThen(args []string) [][]string {
	runs := [][]string{{}}
	for _, a := range args {
		if a == "--then" {
			runs = append(runs, []string{})
			continue
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], a)
	}
	return runs
}

func hasRunName(args []string) bool {
	for _, a := range args {
		if a == "--run-name" || a == "-run-name" || strings.HasPrefix(a, "--run-name=") || strings.HasPrefix(a, "-run-name=") {
			return true
		}
	}
	return false
}

// parseRun reads one run's flags: rdmaprobe bw's flag set (so a flag the
// runner sends that the probe would not know fails here too); only what
// shapes the output is kept.
func parseRun(role string, args []string) (run, error) {
	rn := run{params: bw.Defaults()}
	fs := flag.NewFlagSet("bw "+role, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var op, sizes, mem string
	var latency, bidir bool
	fs.StringVar(&rn.device, "device", "", "")
	fs.String("netdev", "", "")
	fs.Int("ib-port", 1, "")
	fs.Int("gid-index", -1, "")
	fs.Int("port", 18515, "")
	fs.StringVar(&op, "op", "write", "")
	fs.StringVar(&rn.name, "run-name", "", "")
	fs.Int("sessions", 1, "")
	fs.StringVar(&rn.rails, "rails", bw.RailsSame, "")
	fs.Bool("rail-parallel", false, "")
	fs.StringVar(&sizes, "size", "65536", "")
	fs.Bool("sweep", false, "")
	fs.IntVar(&rn.params.Iters, "iters", rn.params.Iters, "")
	fs.DurationVar(&rn.params.Duration, "duration", 0, "")
	fs.IntVar(&rn.params.Warmup, "warmup", rn.params.Warmup, "")
	fs.IntVar(&rn.params.QPs, "qps", rn.params.QPs, "")
	fs.IntVar(&rn.params.TxDepth, "tx-depth", rn.params.TxDepth, "")
	fs.IntVar(&rn.params.CQMod, "cq-mod", rn.params.CQMod, "")
	fs.IntVar(&rn.params.QPTimeout, "qp-timeout", rn.params.QPTimeout, "")
	fs.Int("inline", 0, "")
	fs.StringVar(&mem, "mem", bw.MemoryHost, "")
	fs.String("post-api", "auto", "")
	fs.Bool("go-loop", false, "")
	fs.BoolVar(&bidir, "bidirectional", false, "")
	fs.BoolVar(&latency, "latency", false, "")
	fs.Int("load-size", 0, "")
	fs.Bool("port-counters", true, "")
	fs.String("counters-root", "", "")
	fs.Bool("table", false, "")
	fs.Bool("report-gbits", true, "")
	fs.Duration("timeout", 2*time.Minute, "")
	if err := fs.Parse(args); err != nil {
		return rn, err
	}
	switch {
	case role == "client" && fs.NArg() != 1:
		return rn, fmt.Errorf("bw client needs the server's address, got %q", fs.Args())
	case role == "server" && fs.NArg() != 0:
		return rn, fmt.Errorf("bw server takes no arguments, got %q", fs.Args())
	case latency || bidir || mem != bw.MemoryHost:
		return rn, fmt.Errorf("the stand-in simulates host-memory unidirectional bandwidth only (--latency %v, --bidirectional %v, --mem %s)", latency, bidir, mem)
	}
	for _, o := range strings.Split(op, ",") {
		rn.ops = append(rn.ops, bw.Op(strings.TrimSpace(o)))
	}
	s, err := units.ParseSizes(sizes)
	if err != nil {
		return rn, err
	}
	rn.params.Sizes = s
	return rn, nil
}
