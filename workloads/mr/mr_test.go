package mr

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/podenv"
)

// limitedRegistrar behaves like the kernel's ib_umem_get: without IPC_LOCK,
// pinning more than the memlock limit fails with ENOMEM.
func limitedRegistrar(limit int64, ipcLock bool) Registrar {
	return func(size int64) error {
		if !ipcLock && limit >= 0 && size > limit {
			return fmt.Errorf("ibv_reg_mr(%d): %w", size, syscall.ENOMEM)
		}
		return nil
	}
}

func TestSeed002SixtyFourKiB(t *testing.T) {
	lim := podenv.Limits{Soft: 64 << 10, Hard: 64 << 10}
	r := Probe(limitedRegistrar(64<<10, false), "mlx5_0", Sizes(4<<10, 1<<30), 1<<20, lim, false, 0)
	if r.Status != Fail || r.RlimitStatus != Fail || r.RegStatus != Fail {
		t.Fatalf("status %s rlimit %s reg %s", r.Status, r.RlimitStatus, r.RegStatus)
	}
	if r.LargestOK != 64<<10 || r.FirstFailure == nil || r.FirstFailure.Bytes != 128<<10 || r.FirstFailure.Errno != "ENOMEM" {
		t.Fatalf("largest %d first failure %+v", r.LargestOK, r.FirstFailure)
	}
	for _, want := range []string{"64 KiB", "CAP_IPC_LOCK", "1 MiB", "Couldn't allocate MR"} {
		if !strings.Contains(r.Diagnosis, want) {
			t.Errorf("diagnosis %q lacks %q", r.Diagnosis, want)
		}
	}
	if !strings.Contains(r.Fix, "base_runtime_spec") || !strings.Contains(r.Fix, "IPC_LOCK") {
		t.Errorf("fix %q", r.Fix)
	}
}

func TestLargeLimitPasses(t *testing.T) {
	lim := podenv.Limits{Soft: 8 << 20, Hard: 8 << 20}
	r := Probe(limitedRegistrar(8<<20, false), "rxe0", Sizes(4<<10, 8<<20), 1<<20, lim, false, 1000)
	if r.Status != Pass || r.LargestOK != 8<<20 || r.Diagnosis != "" {
		t.Fatalf("%+v", r)
	}
}

func TestIPCLockExemptsFromLimit(t *testing.T) {
	lim := podenv.Limits{Soft: 64 << 10, Hard: 64 << 10}
	r := Probe(limitedRegistrar(64<<10, true), "mlx5_0", Sizes(4<<10, 1<<30), 1<<20, lim, true, 0)
	if r.Status != Pass || r.LargestOK != 1<<30 {
		t.Fatalf("%+v", r)
	}
}

func TestNoDeviceStillJudgesRlimit(t *testing.T) {
	low := Probe(nil, "", nil, 1<<20, podenv.Limits{Soft: 64 << 10, Hard: 64 << 10}, false, 0)
	if low.RegStatus != NotRun || low.RlimitStatus != Fail || low.Status != Fail || low.NotRunWhy == "" {
		t.Fatalf("%+v", low)
	}
	ok := Probe(nil, "", nil, 1<<20, podenv.Limits{Soft: podenv.Unlimited, Hard: podenv.Unlimited}, false, 0)
	if ok.RegStatus != NotRun || ok.RlimitStatus != Pass || ok.Status != NotRun {
		t.Fatalf("%+v", ok)
	}
}

func TestNonMemlockFailure(t *testing.T) {
	reg := func(size int64) error {
		if size > 1<<20 {
			return fmt.Errorf("ibv_reg_mr: %w", syscall.EFAULT)
		}
		return nil
	}
	r := Probe(reg, "mlx5_0", Sizes(1<<20, 4<<20), 4<<20, podenv.Limits{Soft: podenv.Unlimited, Hard: podenv.Unlimited}, true, 0)
	if r.Status != Fail || !strings.Contains(r.Diagnosis, "not a memlock limit") {
		t.Fatalf("%+v", r)
	}
}

func TestSizes(t *testing.T) {
	s := Sizes(4<<10, 1<<30)
	if s[0] != 4096 || s[len(s)-1] != 1<<30 || len(s) != 19 {
		t.Fatalf("%v", s)
	}
	if s := Sizes(1000, 3000); s[len(s)-1] != 3000 {
		t.Fatalf("%v", s)
	}
}
