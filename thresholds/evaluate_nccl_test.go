package thresholds

import (
	"strings"
	"testing"
)

func TestNCCLAllReduceFloor(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	k, _ := s.Lookup("H100/NDR-400")
	// 0.85 × 8 ports × 400 Gb/s / 8 = 340 GB/s for the whole node.
	b, err := k.NCCLAllReduceFloor(0)
	if err != nil || b.Op != ">=" || b.Value != 340 || !strings.Contains(b.Source, "8 of 8 port(s)") || !strings.HasPrefix(b.Source, "H100/NDR-400: ") {
		t.Fatalf("whole node: %+v %v", b, err)
	}
	// One GPU per rank reaches one rail: 0.85 × 400 / 8 = 42.5 GB/s.
	if b, err := k.NCCLAllReduceFloor(1); err != nil || b.Value != 42.5 || !strings.Contains(b.Source, "1 of 8 port(s)") {
		t.Fatalf("one port: %+v %v", b, err)
	}
	if b, _ := k.NCCLAllReduceFloor(99); b.Value != 340 {
		t.Fatalf("more ports than the SKU has: %+v", b)
	}
	abs := 100.0
	k2 := *k
	k2.NCCLAllReduceBusBw = Floor{Gbps: &abs, Source: "s"}
	if b, err := k2.NCCLAllReduceFloor(1); err != nil || b.Value != 12.5 || !strings.Contains(b.Source, "100 Gb/s = 12.5 GB/s") {
		t.Fatalf("absolute: %+v %v", b, err)
	}
	k3 := *k
	k3.NCCLAllReduceBusBw = Floor{Source: "s"}
	if _, err := k3.NCCLAllReduceFloor(1); err == nil {
		t.Fatal("a floor without a bound must be an error")
	}
	bed, _ := s.Lookup("soft-roce-bed")
	if b, err := bed.NCCLAllReduceFloor(1); err != nil || b.Value <= 0 || b.Value > 0.01 {
		t.Fatalf("bed: %+v %v", b, err)
	}
}
