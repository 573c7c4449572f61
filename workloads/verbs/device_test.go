//go:build verbsbed

// Tests against a real verbs device. They are compiled only with
// -tags verbsbed and run inside the Soft-RoCE guest (hack/verbs-test.sh),
// where RXE devices rxe0 and rxe1 exist.
package verbs

import (
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

func TestDeviceDiscovery(t *testing.T) {
	names, err := DeviceNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rxe0", "rxe1"} {
		if !slices.Contains(names, want) {
			t.Fatalf("devices %v lack %s", names, want)
		}
	}
	if _, err := Open("mlx5_404"); err == nil || !strings.Contains(err.Error(), "rxe0") {
		t.Fatalf("opening a missing device: %v (must list the devices found)", err)
	}
}

func TestPortQueryRoCE(t *testing.T) {
	ctx, err := Open("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	p, err := ctx.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Active() || p.LinkLayer != "Ethernet" || p.ActiveMTU < 256 || p.PhysState != "LinkUp" {
		t.Fatalf("port 1: %+v", p)
	}
	gids, err := ctx.GIDs()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range gids {
		if g.Type == "RoCE v2" && g.IPv4() {
			found = true
		}
	}
	if !found {
		t.Fatalf("no RoCE v2 IPv4 GID in %+v", gids)
	}
	if _, err := ctx.QueryPort(9); err == nil {
		t.Fatal("port 9 query succeeded")
	} else {
		var verr *Error
		if !errors.As(err, &verr) || !strings.Contains(err.Error(), "ibv_query_port(rxe0, port 9)") {
			t.Fatalf("error does not name the call: %v", err)
		}
	}
}

func TestMRLifecycleIdempotent(t *testing.T) {
	ctx, err := Open("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ { // leaks would exhaust the device's MR table
		m, err := pd.RegMR(1<<20, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
		if err != nil {
			t.Fatalf("iteration %d: %v", i, err)
		}
		if m.RKey() == 0 && m.LKey() == 0 || len(m.Bytes()) != 1<<20 {
			t.Fatal("bad MR")
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
	}
	cq, err := ctx.CreateCQ(16)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateRCQP(cq, QPCaps{SendDepth: 16, RecvDepth: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// rdma-core's rxe provider has extended QPs: the C loop must post the
	// way perftest 6.x does (ibv_wr_*), not fall back to ibv_post_send.
	if !qp.Extended() {
		t.Fatal("rxe QP created without the extended-QP API")
	}
	for _, c := range []interface{ Close() error }{qp, qp, cq, cq, pd, pd, ctx, ctx} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRegMRErrorNamesCallAndErrno(t *testing.T) {
	ctx, err := Open("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	// Without IPC_LOCK and with a 64 KiB limit (the test runs as uid 1000
	// under `ulimit -l 64` in the guest), 1 MiB cannot be pinned.
	m, err := pd.RegMR(1<<20, AccessLocalWrite)
	if err == nil {
		m.Close()
		if os.Getenv("RDMASUITE_EXPECT_MR_FAIL") == "1" {
			t.Fatal("1 MiB registered under a 64 KiB memlock limit without IPC_LOCK")
		}
		return
	}
	{
		if err.Error() != "ibv_reg_mr(1 MiB): Cannot allocate memory" && err.Error() != "ibv_reg_mr(1 MiB): Operation not permitted" || !errors.Is(err, syscall.ENOMEM) && !errors.Is(err, syscall.EPERM) {
			t.Fatalf("error %q: want ibv_reg_mr(1 MiB): <strerror>", err)
		}
		t.Logf("as expected under a low memlock limit: %v", err)
	}
}

// Memory the package did not allocate, on rxe (named to run with the
// guest's MRLifecycle selection): an anonymous mapping registers as
// external memory and is neither exposed nor unmapped by Close; an
// unmapped range fails as ErrPeerMemMissing (what a GPU pointer without
// nvidia_peermem looks like to the kernel); rxe has no dma-buf support, so
// RegDmabufMR fails as ErrDmabufUnsupported.
func TestMRLifecycleExternalAndDmabuf(t *testing.T) {
	ctx, err := Open("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	const size = 64 << 10
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	addr := uintptr(unsafe.Pointer(&mem[0]))
	access := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead
	m, err := pd.RegExternalMR(addr, size, access)
	if err != nil {
		t.Fatalf("registering an anonymous mapping: %v", err)
	}
	if m.Addr() != uint64(addr) || m.Bytes() != nil || m.Kind() != MemExternal || m.RKey() == 0 && m.LKey() == 0 {
		t.Fatalf("external MR: addr %#x (want %#x), bytes %v, kind %s", m.Addr(), addr, m.Bytes() != nil, m.Kind())
	}
	for i := 0; i < 2; i++ {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	mem[size-1] = 1 // still mapped: Close freed nothing it did not allocate
	if err := syscall.Munmap(mem); err != nil {
		t.Fatal(err)
	}
	if m, err := pd.RegExternalMR(addr, size, access); err == nil {
		m.Close()
		t.Fatal("registered an unmapped range")
	} else if !errors.Is(err, ErrPeerMemMissing) || errors.Is(err, ErrMemlock) || !strings.Contains(err.Error(), "ibv_reg_mr(external 0x") {
		t.Fatalf("unmapped range: %v (want EFAULT/EINVAL matching ErrPeerMemMissing)", err)
	}
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if m, err := pd.RegDmabufMR(int(f.Fd()), 0, size, 0x10000, access); err == nil {
		m.Close()
		t.Fatal("rxe registered a dma-buf")
	} else if !errors.Is(err, ErrDmabufUnsupported) || !strings.Contains(err.Error(), "ibv_reg_dmabuf_mr(fd ") {
		t.Fatalf("dma-buf on rxe: %v (want EOPNOTSUPP matching ErrDmabufUnsupported)", err)
	}
}
