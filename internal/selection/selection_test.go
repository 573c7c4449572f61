package selection

import (
	"regexp"
	"testing"
)

var latency = Feature{Test: "TestLatency", Name: "RDMA latency between paired pods (hostdev, nvidia.com/hostdev)",
	Assess: "every rail of every node stays under its SKU's latency ceiling for every op",
	Labels: map[string]string{"suite": "latency", "check": "latency", "variant": "hostdev"}}

func TestSelectsAsTheFrameworkAndGoTestFilter(t *testing.T) {
	for _, c := range []struct {
		name string
		f    Filter
		want bool
	}{
		{"no filter", Filter{}, true},
		{"label of another suite", Filter{Labels: map[string][]string{"suite": {"rdma"}}}, false},
		{"one of several values", Filter{Labels: map[string][]string{"suite": {"rdma", "latency"}}}, true},
		{"every key must match", Filter{Labels: map[string][]string{"suite": {"latency"}, "variant": {"shared-dev"}}}, false},
		{"every key matches", Filter{Labels: map[string][]string{"suite": {"latency"}, "variant": {"hostdev"}}}, true},
		{"key the feature lacks", Filter{Labels: map[string][]string{"gpu": {"yes"}}}, false},
		{"skip label", Filter{SkipLabels: map[string][]string{"variant": {"hostdev"}}}, false},
		{"skip label of another", Filter{SkipLabels: map[string][]string{"variant": {"shared-dev"}}}, true},
		{"feature regex", Filter{Feature: regexp.MustCompile("bandwidth")}, false},
		{"feature regex matches", Filter{Feature: regexp.MustCompile("latency.*hostdev")}, true},
		{"skip feature", Filter{SkipFeature: regexp.MustCompile("latency")}, false},
		{"assess regex", Filter{Assess: regexp.MustCompile("floor")}, false},
		{"skip assess", Filter{SkipAssess: regexp.MustCompile("ceiling")}, false},
		{"-run other test", Filter{Run: "TestBandwidth"}, false},
		{"-run this test", Filter{Run: "TestLat"}, true},
		{"-run with subtest", Filter{Run: "TestLatency/RDMA_latency"}, true},
		{"-run alternatives", Filter{Run: "TestBandwidth|TestLatency"}, true},
		{"-run group with slash", Filter{Run: "Test(Latency|x/y)"}, true},
		{"-skip this test", Filter{Skip: "TestLatency"}, false},
		{"-skip another", Filter{Skip: "TestMsgRate"}, true},
		{"-run bad regexp", Filter{Run: "Test(("}, true},
		{"-skip bad regexp", Filter{Skip: "Test(("}, true},
	} {
		if got := c.f.Selects(latency); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
