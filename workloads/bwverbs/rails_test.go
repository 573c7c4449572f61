package bwverbs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
)

func TestSelect(t *testing.T) {
	found := []bw.Rail{
		{Index: 0, Device: "mlx5_0", Port: 1, State: "ACTIVE", Netdev: "eth0"},
		{Index: 1, Device: "mlx5_1", Port: 1, State: "DOWN", Netdev: "net1"},
		{Index: 2, Device: "mlx5_1", Port: 2, State: "ACTIVE", Netdev: "net2"},
	}
	all, err := Select(found, Config{})
	if err != nil || len(all) != 3 {
		t.Fatalf("no selection: %v %v", all, err)
	}
	if r, err := Select(found, Config{Device: "mlx5_1", Port: 2}); err != nil || len(r) != 1 || r[0].Index != 2 {
		t.Fatalf("--device mlx5_1 --ib-port 2: %v %v", r, err)
	}
	if r, err := Select(found, Config{Device: "mlx5_1"}); err != nil || r[0].Index != 1 {
		t.Fatalf("--device mlx5_1 (port 1): %v %v", r, err)
	}
	if r, err := Select(found, Config{Netdev: "net2"}); err != nil || len(r) != 1 || r[0].Index != 2 {
		t.Fatalf("--netdev net2: %v %v", r, err)
	}
	if _, err := Select(found, Config{Device: "mlx5_9"}); !errors.Is(err, bw.ErrNoDevice) {
		t.Fatalf("missing device: %v", err)
	}
	if _, err := Select(found, Config{Device: "mlx5_0", Port: 2}); !errors.Is(err, bw.ErrNoDevice) {
		t.Fatalf("missing port: %v", err)
	}
	if _, err := Select(found, Config{Netdev: "nosuchnet0"}); !errors.Is(err, bw.ErrNoNetdev) || bw.Classify(err).Kind != "no-netdev" {
		t.Fatalf("netdev without a device: %v", err)
	}
}

func TestPortNetdev(t *testing.T) {
	dir := t.TempDir()
	old := SysClassInfiniband
	SysClassInfiniband = dir
	defer func() { SysClassInfiniband = old }()
	nd := filepath.Join(dir, "rxe0", "ports", "1", "gid_attrs", "ndevs")
	if err := os.MkdirAll(nd, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(nd, "0"), []byte("\n"), 0o644)
	os.WriteFile(filepath.Join(nd, "10"), []byte("other\n"), 0o644)
	os.WriteFile(filepath.Join(nd, "2"), []byte("veth0\n"), 0o644)
	if got := PortNetdev("rxe0", 1); got != "veth0" {
		t.Fatalf("netdev %q, want veth0 (lowest GID index with a netdev)", got)
	}
	os.MkdirAll(filepath.Join(dir, "mlx5_0", "device", "net", "ib0"), 0o755)
	if got := PortNetdev("mlx5_0", 1); got != "ib0" {
		t.Fatalf("IPoIB netdev %q", got)
	}
	if got := PortNetdev("none", 1); got != "" {
		t.Fatalf("no netdev: %q", got)
	}
}
