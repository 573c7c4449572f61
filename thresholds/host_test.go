package thresholds

import (
	"strings"
	"testing"
)

// A SKU's host: block pins what the doctor checks on every node; what it
// cannot mean is refused naming the line and the fix, and a good one
// reaches the SKU.
func TestHostExpect(t *testing.T) {
	add := func(block string) string {
		return strings.Replace(good, "    minMemlockBytes: {value: 1048576, source: s}\n", "    minMemlockBytes: {value: 1048576, source: s}\n    host: "+block+"\n", 1)
	}
	s, err := Parse("t.yaml", []byte(add(`{firmware: "28.41.1000", activeMTU: 4096, lossless: true, pkey: "0x8001", source: "fleet manifest"}`)))
	if err != nil {
		t.Fatal(err)
	}
	h := s.SKUs[0].Host
	if !h.Set() || h.Firmware != "28.41.1000" || h.ActiveMTU != 4096 || !h.Lossless || h.PKey != "0x8001" {
		t.Fatalf("host %+v", h)
	}
	if s, _ := Parse("t.yaml", []byte(good)); s.SKUs[0].Host.Set() {
		t.Fatal("a SKU without host: pins something")
	}
	for _, c := range []struct{ block, want string }{
		{`{activeMTU: 9000, source: s}`, `t.yaml:13: sku "X": host.activeMTU 9000: want an IB MTU (256, 512, 1024, 2048 or 4096)`},
		{`{activeMTU: 4096}`, `sku "X": host: needs a source`},
		{`{pkey: "0x8000", source: s}`, `host.pkey "0x8000": want a partition key in hex`},
		{`{pkey: "fast", source: s}`, `host.pkey "fast"`},
		{`{firmware: "28.41 1000", source: s}`, `host.firmware "28.41 1000": want fw_ver as sysfs prints it`},
		{`{source: s}`, `sku "X": host: is empty`},
		{`{mtu: 4096, source: s}`, `unknown field "mtu"`},
	} {
		_, err := Parse("t.yaml", []byte(add(c.block)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("host: %s: err = %v, want %q", c.block, err, c.want)
		}
	}
}
