package verbs

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

func TestErrorKinds(t *testing.T) {
	for _, c := range []struct {
		err     error
		memlock bool
	}{
		{&Error{Call: "ibv_reg_mr(1 MiB)", Errno: syscall.ENOMEM}, true},
		{&Error{Call: "ibv_reg_mr(1 MiB)", Errno: syscall.EPERM}, true},
		{&Error{Call: "ibv_reg_mr(1 MiB)", Errno: syscall.EINVAL}, false},
		{&Error{Call: "ibv_post_send(QP 17, 64 KiB)", Errno: syscall.ENOMEM}, false},
	} {
		wrapped := fmt.Errorf("open: %w", c.err)
		if errors.Is(wrapped, ErrMemlock) != c.memlock || !errors.Is(wrapped, c.err.(*Error).Errno) {
			t.Errorf("%v: memlock %v, want %v", c.err, !c.memlock, c.memlock)
		}
	}
	if e := (&Error{Call: "ibv_reg_mr(1 MiB)", Errno: syscall.ENOMEM}); e.Error() != "ibv_reg_mr(1 MiB): Cannot allocate memory" {
		t.Fatalf("message changed: %q", e.Error())
	}
	ce := fmt.Errorf("size 65536: %w", &CompletionError{QPIndex: 0, Seq: 99, Status: 12})
	if !errors.Is(ce, ErrCompletion) || ce.Error() != "size 65536: completion error on QP index 0 op 99: transport retry counter exceeded" {
		t.Fatalf("completion error: %v", ce)
	}
	if nf := error(&notFound{name: "mlx5_9", found: []string{"mlx5_0"}}); !errors.Is(nf, ErrNoSuchDevice) {
		t.Fatal("not found must match ErrNoSuchDevice")
	}
}

// Registrations of memory the package does not own fail for their own
// reasons, which the bandwidth core reports: a dma-buf the stack cannot
// register at all, and a GPU pointer no peer-memory client claimed. They
// must not pass for memlock failures, nor for each other.
func TestRegistrationErrorKinds(t *testing.T) {
	ext := func(errno syscall.Errno) error {
		return &Error{Call: "ibv_reg_mr(external 0x7f0000000000, 1 MiB)", Errno: errno, Mem: MemExternal}
	}
	dmabuf := func(errno syscall.Errno) error {
		return &Error{Call: "ibv_reg_dmabuf_mr(fd 7, offset 0, 1 MiB, iova 0x7f0000000000)", Errno: errno, Mem: MemDmabuf}
	}
	for _, c := range []struct {
		err                      error
		peermem, dmabuf, memlock bool
		errno                    syscall.Errno
	}{
		// perftest's --use_cuda without a peer-memory client: "Couldn't
		// allocate MR ... ERRNO: Bad address" on a GPU Operator + Network
		// Operator cluster, fixed by modprobe nvidia-peermem
		// (linux-rdma/perftest#126), and "Couldn't allocate MR with
		// error=14" when dma-buf was not asked for (perftest#346).
		{ext(syscall.EFAULT), true, false, false, syscall.EFAULT},
		{ext(syscall.EINVAL), true, false, false, syscall.EINVAL},
		{ext(syscall.ENOMEM), false, false, false, syscall.ENOMEM},
		{ext(syscall.EOPNOTSUPP), false, false, false, syscall.EOPNOTSUPP},
		{dmabuf(syscall.EOPNOTSUPP), false, true, false, syscall.EOPNOTSUPP},
		// --use_cuda_dmabuf on an H100 pod whose stack could not register
		// dma-buf memory: "Couldn't allocate MR with error=93"
		// (EPROTONOSUPPORT; linux-rdma/perftest#280).
		{dmabuf(syscall.EPROTONOSUPPORT), false, true, false, syscall.EPROTONOSUPPORT},
		{dmabuf(syscall.ENOSYS), false, true, false, syscall.ENOSYS},
		{dmabuf(syscall.EINVAL), false, false, false, syscall.EINVAL},
		{dmabuf(syscall.EFAULT), false, false, false, syscall.EFAULT},
		{dmabuf(syscall.ENOMEM), false, false, false, syscall.ENOMEM},
		// A host registration keeps its old meaning.
		{&Error{Call: "ibv_reg_mr(1 MiB)", Errno: syscall.EFAULT}, false, false, false, syscall.EFAULT},
		{&Error{Call: "ibv_reg_mr(1 MiB)", Errno: syscall.ENOMEM}, false, false, true, syscall.ENOMEM},
	} {
		w := fmt.Errorf("rail mlx5_0/1: %w", c.err)
		if errors.Is(w, ErrPeerMemMissing) != c.peermem || errors.Is(w, ErrDmabufUnsupported) != c.dmabuf ||
			errors.Is(w, ErrMemlock) != c.memlock || !errors.Is(w, c.errno) {
			t.Errorf("%v: peermem %v dmabuf %v memlock %v; want %v %v %v (and errno %d)", c.err,
				errors.Is(w, ErrPeerMemMissing), errors.Is(w, ErrDmabufUnsupported), errors.Is(w, ErrMemlock),
				c.peermem, c.dmabuf, c.memlock, c.errno)
		}
	}
	if got := dmabuf(syscall.EOPNOTSUPP).Error(); got != "ibv_reg_dmabuf_mr(fd 7, offset 0, 1 MiB, iova 0x7f0000000000): Operation not supported" {
		t.Fatalf("dma-buf error message: %q", got)
	}
}

// Memory the package did not allocate (possibly GPU memory) is never
// handed to the CPU: Bytes is nil, inline posts (a CPU copy) are refused
// before any verbs call, and Close does not free it.
func TestExternalMemoryNeverTouched(t *testing.T) {
	for _, kind := range []MemKind{MemExternal, MemDmabuf} {
		m := &MR{kind: kind, addr: 0x7f0000000000, Size: 1 << 20}
		if b := m.Bytes(); b != nil {
			t.Fatalf("%s MR exposes %d bytes to the CPU", kind, len(b))
		}
		if !m.External() || m.Addr() != 0x7f0000000000 {
			t.Fatalf("%s MR: external %v addr %#x", kind, m.External(), m.Addr())
		}
		if err := (&QP{}).Post(OpWrite, m, 0, 64, 0, 0, 1, true, true); err == nil || !strings.Contains(err.Error(), "inline") {
			t.Fatalf("inline post of %s memory: %v", kind, err)
		}
		_, err := RunLoop(LoopSpec{QPs: []*QP{{}}, CQ: &CQ{}, MR: m, Targets: []LoopTarget{{}}, Op: OpWrite,
			Slot: 64, Size: 64, Inline: true, Iters: 1, TxDepth: 1, CQMod: 1})
		if err == nil || !strings.Contains(err.Error(), "inline") {
			t.Fatalf("inline loop over %s memory: %v", kind, err)
		}
		if err := m.Close(); err != nil { // never registered: nothing to do, nothing freed
			t.Fatal(err)
		}
	}
	if (&MR{}).External() {
		t.Fatal("a host MR reports external memory")
	}
}
