package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/gpucheck"
	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// `rdmaprobe gpu`'s proofs through the real loader and adapter, over the
// stand-in libcuda: every GPU allocated, read back and exported, its
// memory freed, and a GPU the bus does not show fails its topology proof.
func TestGPUCheckOverTheDriverAPI(t *testing.T) {
	_, liveAllocs, _, _ := fakeDriver(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	onBus := func(addr string) gputopo.GPU {
		return gputopo.GPU{PCIDevice: gputopo.PCIDevice{Address: addr, NUMANode: 1, Path: "/sys/devices/pci0000:3a/0000:3a:00.0/" + addr}}
	}
	rep, err := gpucheck.Run(loadCUDA, gpucheck.Config{Bytes: 1 << 20, PCIGPUs: []gputopo.GPU{onBus("0000:3b:00.0")}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Proofs {
		got = append(got, p.Name+"="+string(p.Status))
	}
	want := "cuda-driver=pass gpu0/alloc=pass gpu0/dmabuf=pass gpu0/topology=pass gpu1/alloc=pass gpu1/dmabuf=pass gpu1/topology=fail"
	if strings.Join(got, " ") != want {
		t.Fatalf("proofs %s\nwant   %s\n%+v", strings.Join(got, " "), want, rep.Proofs)
	}
	if !rep.Failed() || !strings.Contains(rep.Proofs[6].Detail, "0000:af:00.0") || rep.Library == "" || len(rep.GPUs) != 2 {
		t.Fatalf("%+v", rep)
	}
	if n := liveAllocs(); n != 0 {
		t.Fatalf("%d allocation(s) left after the check", n)
	}
}

// A C library loaded by the probe that prints through C's stdout (NCCL's
// NCCL_DEBUG lines; here the stand-in libcuda, FAKE_STDOUT_LINES) must not
// touch the stdout the envelope is on: on the GPU machine, NCCL's 4 KiB
// chunks glued its envelope behind a cut log line, and no reader found it.
func TestCLibraryLinesStayOffTheEnvelope(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the probe")
	}
	fakeDriver(t) // RDMASUITE_LIBCUDA: the stand-in
	bin := filepath.Join(t.TempDir(), "rdmaprobe")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	const lines = 80 // over 4 KiB: C's pipe buffer flushes mid-line
	cmd := exec.Command(bin, "gpu", "--size", "1M")
	cmd.Env = append(os.Environ(), "FAKE_STDOUT_LINES=80")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr // pipes, as in a pod
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 3) {
		t.Fatalf("rdmaprobe gpu: %v\n%s", err, stderr.String())
	}
	var rep gpucheck.Report
	if err := probeout.Parse(stdout.String(), "gpu", &rep); err != nil || len(rep.GPUs) != 2 {
		t.Fatalf("envelope not read from stdout (%v, %d GPUs): %q", err, len(rep.GPUs), stdout.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 1 || strings.Contains(stdout.String(), "NCCL INFO") {
		t.Errorf("stdout must hold the envelope alone, has %d line(s): %q", n, stdout.String())
	}
	if n := strings.Count(stderr.String(), "NCCL INFO stand-in line"); n != lines {
		t.Errorf("stderr has %d of the library's %d lines", n, lines)
	}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "stand-in line") && !strings.HasPrefix(l, "fake:1:1 [0] NCCL INFO stand-in line ") {
			t.Errorf("a library line cut or glued on stderr: %q", l)
		}
	}
}
