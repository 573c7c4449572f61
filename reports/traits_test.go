package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The traits of today's families, as the reports read them from the id
// when a check carries none. Each row is a promise the renderers keep; a
// row that changes is a change operators see.
func TestKnownTraitsOfTodaysFamilies(t *testing.T) {
	heat := Traits{Pair: true, HeatUnit: "Gb/s", Localize: true}
	for _, tc := range []struct {
		id   string
		want Traits
	}{
		{"bandwidth/write", with(heat, "write", false)},
		{"bandwidth/read/loopback", with(heat, "read", true)},
		{"gpudirect/write", with(heat, "write", false)},
		{"bandwidth/link", Traits{Pair: true, Link: true, Localize: true}},
		{"bandwidth/link/loopback", Traits{Pair: true, Link: true, Localize: true, Loopback: true}},
		{"gpudirect/link", Traits{Pair: true, Link: true, Localize: true}},
		{"bandwidth/ports", Traits{Localize: true}},
		{"bandwidth/isolation", Traits{Localize: true}},
		// Latency and message rate measure from the client to the server as
		// bandwidth does; they are not localisation evidence (a slow
		// ping-pong is not a dead link).
		{"latency/write", Traits{Pair: true, Op: "write"}},
		{"latency/send/loopback", Traits{Pair: true, Op: "send", Loopback: true}},
		{"latency/link", Traits{Pair: true, Link: true}},
		{"msgrate/write", Traits{Pair: true, Op: "write"}},
		{"msgrate/link/loopback", Traits{Pair: true, Link: true, Loopback: true}},
		{"nccl/all_reduce", Traits{Localize: true, Op: "all_reduce"}},
		{"nccl/transport", Traits{Localize: true}},
		{"memlock/registration", Traits{}},
		{"doctor/rdma-port-down", Traits{}},
		{"run/incomplete", Traits{}},
	} {
		if got := knownTraits(tc.id); got != tc.want {
			t.Errorf("knownTraits(%s) = %+v, want %+v", tc.id, got, tc.want)
		}
	}
}

func with(t Traits, op string, loopback bool) Traits {
	t.Op, t.Loopback = op, loopback
	return t
}

// A check's own traits win over its id: a family the reports have never
// heard of renders as its definition says, and a known id can be told
// otherwise.
func TestCarriedTraitsWinOverTheID(t *testing.T) {
	atomic := Check{ID: "atomic/fetch_add", Nodes: []string{"gpu-001", "gpu-002"}, Status: Pass,
		Traits: &Traits{Pair: true, Op: "fetch_add"}}
	if got := NodesText(atomic); got != "gpu-001 → gpu-002" {
		t.Errorf("a new pair family reads %q", got)
	}
	if got := NodesText(Check{ID: "atomic/fetch_add", Nodes: atomic.Nodes}); got != "gpu-001, gpu-002" {
		t.Errorf("without traits an unknown family is no pair: %q", got)
	}
	notPair := Check{ID: "bandwidth/write", Nodes: atomic.Nodes, Traits: &Traits{}}
	if got := NodesText(notPair); got != "gpu-001, gpu-002" {
		t.Errorf("carried traits must win over the id: %q", got)
	}
	var b bytes.Buffer
	if err := Prometheus(&b, Run{Checks: []Check{atomic}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `op="fetch_add"`) {
		t.Errorf("the carried op is the metrics' op label:\n%s", b.String())
	}
}

// Every pair row reads client → server, whatever the family: latency and
// message rate rows read "a, b" while bandwidth read "a → b" before checks
// carried traits.
func TestPairRowsReadClientToServer(t *testing.T) {
	for _, id := range []string{"bandwidth/write", "gpudirect/read", "latency/write", "latency/send", "msgrate/write", "bandwidth/link", "latency/link"} {
		c := Check{ID: id, Nodes: []string{"client", "server"}}
		if got := NodesText(c); got != "client → server" {
			t.Errorf("%s reads %q", id, got)
		}
	}
	for _, id := range []string{"nccl/all_reduce", "memlock/rlimit", "doctor/node"} {
		c := Check{ID: id, Nodes: []string{"a", "b"}}
		if got := NodesText(c); got != "a, b" {
			t.Errorf("%s is no pair: %q", id, got)
		}
	}
}

// Traits travel in the results file and come back as they were; a file
// without them (written before checks carried traits) reads by the id.
func TestTraitsTravelInTheResults(t *testing.T) {
	run := Run{Schema: Schema, RunID: "r1", Checks: []Check{
		{ID: "atomic/fetch_add", Title: "t", Nodes: []string{"a", "b"}, Status: Pass, Traits: &Traits{Pair: true, Localize: true, Op: "fetch_add"}},
		{ID: "bandwidth/write", Title: "t", Nodes: []string{"a", "b"}, Status: Pass},
	}}
	b, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"traits":{"pair":true,"localize":true,"op":"fetch_add"}`) {
		t.Fatalf("traits not in the file: %s", b)
	}
	var back Run
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Checks[0].Is(); got != (Traits{Pair: true, Localize: true, Op: "fetch_add"}) {
		t.Errorf("carried traits came back as %+v", got)
	}
	if back.Checks[1].Traits != nil || !back.Checks[1].Is().Pair {
		t.Errorf("a check without traits reads by its id: %+v", back.Checks[1].Is())
	}
}
