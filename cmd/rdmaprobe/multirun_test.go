package main

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

func TestSplitThen(t *testing.T) {
	runs := splitThen([]string{"--port", "1", "--run-name", "a", "h", "--then", "--run-name=b", "h", "--then"})
	if len(runs) != 3 || strings.Join(runs[0], " ") != "--port 1 --run-name a h" || strings.Join(runs[1], " ") != "--run-name=b h" || len(runs[2]) != 0 {
		t.Fatalf("%q", runs)
	}
	if runName(runs[0], 1) != "a" || runName(runs[1], 2) != "b" || runName(runs[2], 3) != "run-3" {
		t.Errorf("names: %q %q %q", runName(runs[0], 1), runName(runs[1], 2), runName(runs[2], 3))
	}
}

// A server and a client process, each with three runs joined by --then,
// on a machine without an RDMA device: the server serves the runs in
// order on one port (re-listening between them), every run of both
// prints its own framed envelope saying why nothing was measured, and
// each frame carries that run's own non-zero exit status.
func TestMultiRunFramesEveryRunOnBothSides(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the probe")
	}
	bin := filepath.Join(t.TempDir(), "rdmaprobe")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// Three runs, and one named run (a run exec'd in a node's pod is
	// framed so that its end is proven by the probe, not the stream).
	for _, names := range [][]string{{"bandwidth", "latency", "msgrate"}, {"bandwidth"}} {
		multiRunFrames(t, bin, names)
	}
}

func multiRunFrames(t *testing.T, bin string, names []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	var srvArgs, cliArgs []string
	for i, n := range names {
		if i > 0 {
			srvArgs, cliArgs = append(srvArgs, "--then"), append(cliArgs, "--then")
		}
		srvArgs = append(srvArgs, "--port", port, "--timeout", "20s", "--run-name", n)
		cliArgs = append(cliArgs, "--port", port, "--timeout", "20s", "--run-name", n, "--iters", "10", "127.0.0.1")
	}
	var srvOut, cliOut bytes.Buffer
	srv := exec.Command(bin, append([]string{"bw", "server"}, srvArgs...)...)
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	cli := exec.Command(bin, append([]string{"bw", "client"}, cliArgs...)...)
	cli.Stdout, cli.Stderr = &cliOut, &cliOut
	cliErr := cli.Run()
	srvErr := srv.Wait()
	if cliErr == nil || srvErr == nil {
		t.Fatalf("nothing was measured, yet client err %v, server err %v", cliErr, srvErr)
	}
	for side, out := range map[string]string{"client": cliOut.String(), "server": srvOut.String()} {
		runs, err := probeout.SplitRuns(out, names)
		if err != nil {
			t.Fatalf("%s: %v\n%s", side, err, out)
		}
		for _, r := range runs {
			var o bw.ProbeOutput
			perr, err := probeout.ParseError(r.Logs, bw.ProbeName, &o)
			switch {
			case !r.Began || r.Exit == nil:
				t.Errorf("%s run %s not framed: %+v\n%s", side, r.Name, r, out)
			case *r.Exit == 0:
				t.Errorf("%s run %s exit 0 without a measurement", side, r.Name)
			case err != nil || perr == nil:
				t.Errorf("%s run %s: envelope %v, error %v\n%s", side, r.Name, err, perr, r.Logs)
			case o.Role != side:
				t.Errorf("%s run %s: role %q", side, r.Name, o.Role)
			}
		}
	}
}
