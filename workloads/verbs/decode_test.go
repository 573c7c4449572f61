package verbs

import "testing"

func TestRateMatchesIbstat(t *testing.T) {
	cases := []struct {
		speed, speedEx, width int
		want                  float64
	}{
		{32, 0, 2, 100},  // EDR 4x (V100 nodes in seed 002)
		{64, 0, 2, 200},  // HDR 4x (A100 nodes)
		{128, 0, 2, 400}, // NDR 4x
		{0, 256, 2, 800}, // XDR 4x
		{4, 0, 2, 40},    // QDR 4x
	}
	for _, c := range cases {
		got := laneGbps(c.speed, c.speedEx) * float64(widthLanes(c.width))
		if got != c.want {
			t.Errorf("speed %d/%d width %d: %v Gb/s, want %v", c.speed, c.speedEx, c.width, got, c.want)
		}
	}
}

func TestMTU(t *testing.T) {
	if mtuBytes(3) != 1024 || mtuBytes(5) != 4096 || mtuBytes(0) != 0 {
		t.Fatal("mtuBytes")
	}
	if mtuEnumFor(1500) != 3 || mtuEnumFor(4096) != 5 || mtuEnumFor(100) != 0 {
		t.Fatal("mtuEnumFor")
	}
}

func TestGIDRoundTrip(t *testing.T) {
	g, err := ParseGID("::ffff:192.168.77.1")
	if err != nil {
		t.Fatal(err)
	}
	gid := GID{Raw: g}
	if !gid.IPv4() || formatGID(g) != "192.168.77.1" {
		t.Fatalf("gid %v ipv4=%v %s", g, gid.IPv4(), formatGID(g))
	}
	if _, err := ParseGID("nonsense"); err == nil {
		t.Fatal("bad GID accepted")
	}
}
