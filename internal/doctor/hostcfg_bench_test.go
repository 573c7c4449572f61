package doctor

import (
	"fmt"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/node"
)

// The rules over a fleet's host facts: 8 InfiniBand rails per node (the
// knownanswers_hostcfg shapes), one node on other firmware and one port
// trained x8, so the consistency rule has something to name. What it
// costs the doctor to judge 256 and 1024 nodes, apart from reading them.
func BenchmarkDiagnoseHostConfig(b *testing.B) {
	for _, n := range []int{256, 1024} {
		s := ibFleet(n, nil)
		for name, h := range s.Hosts {
			var devs []node.Device
			for i := 0; i < 8; i++ {
				devs = append(devs, hdrIB(fmt.Sprintf("mlx5_%d", i), fmt.Sprintf("0000:%02x:00.0", 0x18+i*0x10)))
			}
			switch name {
			case "gpu-017":
				devs[0].FWVersion = "20.38.1002"
			case "gpu-042":
				devs[3].PCIe.Path.Links[1].CurWidth = 8
			}
			h.Devices = devs
			s.Hosts[name] = h
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var fs []Finding
			for b.Loop() {
				fs = Diagnose(s)
				_ = Checks(s, fs, 0)
			}
			if len(fs) < 2 {
				b.Fatalf("findings %v: want the firmware and PCIe ones at least", ids(fs))
			}
		})
	}
}
