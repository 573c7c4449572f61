package podenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func writeStatus(t *testing.T, capEff string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "Name:\trdmaprobe\nCapInh:\t0000000000000000\nCapEff:\t" + capEff + "\nCapBnd:\t000001ffffffffff\n"
	if err := os.WriteFile(filepath.Join(dir, "self/status"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestEffectiveCapsIPCLock(t *testing.T) {
	cases := []struct {
		capEff string
		want   bool
	}{
		{"00000000a80425fb", false}, // containerd's default set: no IPC_LOCK
		{"00000000a80465fb", true},  // default set + IPC_LOCK (bit 14)
		{"000001ffffffffff", true},  // privileged
	}
	for _, c := range cases {
		proc := writeStatus(t, c.capEff)
		_, got, err := EffectiveCaps(filepath.Join(proc, "self/status"))
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("CapEff %s: IPC_LOCK = %v, want %v", c.capEff, got, c.want)
		}
	}
}

func TestEffectiveCapsMalformed(t *testing.T) {
	proc := writeStatus(t, "zz")
	if _, _, err := EffectiveCaps(filepath.Join(proc, "self/status")); err == nil {
		t.Fatal("malformed CapEff accepted")
	}
}

func TestCollectListsDevices(t *testing.T) {
	proc := writeStatus(t, "0")
	dev := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dev, "infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"uverbs0", "rdma_cm"} {
		if err := os.WriteFile(filepath.Join(dev, "infiniband", n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, err := Collect(proc, dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Devices) != 2 || e.Devices[0] != "rdma_cm" || e.Devices[1] != "uverbs0" {
		t.Fatalf("devices = %v", e.Devices)
	}
	none, err := Collect(proc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(none.Devices) != 0 {
		t.Fatalf("devices without /dev/infiniband = %v", none.Devices)
	}
}

// DropIPCLock takes the capability from the calling thread only, and the
// thread then reads without it (this runs as root here: it held it).
func TestDropIPCLockOnTheCallingThread(t *testing.T) {
	// This goroutine keeps its own thread, which the drop below (on
	// another thread: a locked thread runs only its goroutine) must not
	// touch.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, before, err := EffectiveCaps(ThreadStatus)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		if err := DropIPCLock(); err != nil {
			done <- err
			return
		}
		_, held, err := EffectiveCaps(ThreadStatus)
		if err == nil && held {
			err = fmt.Errorf("CAP_IPC_LOCK still effective after DropIPCLock")
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, after, err := EffectiveCaps(ThreadStatus)
	if err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Errorf("another thread's CAP_IPC_LOCK went from %v to %v: the drop must stay on its own thread", before, after)
	}
	if os.Geteuid() == 0 && !before {
		t.Logf("root without CAP_IPC_LOCK here: only the drop itself was proven")
	}
}
