package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/gpucheck"
	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
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
