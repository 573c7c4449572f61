package verbs

import (
	"errors"
	"fmt"
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
