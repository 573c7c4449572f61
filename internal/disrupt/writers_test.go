package disrupt

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/stall"
)

// The probe takes writer ids of at most 32 bytes of [A-Za-z0-9._-]; long
// FQDN node names must still give distinct, valid ids.
func TestWriterID(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)
	a := WriterID("gpu001.prod.cluster.example.internal")
	b := WriterID("gpu001.prod.cluster.example.internal2")
	for _, id := range []string{a, b, WriterID("node-a")} {
		if !valid.MatchString(id) {
			t.Errorf("invalid id %q", id)
		}
	}
	if a == b || WriterID("node-a") != "node-a" || !strings.HasPrefix(a, "gpu001.prod") {
		t.Fatalf("%q %q", a, b)
	}
}

func stallEnvelope(t *testing.T, r *Result, perr *probeout.Error) string {
	var b bytes.Buffer
	if err := probeout.WriteError(&b, stall.ProbeName, r, perr); err != nil {
		t.Fatal(err)
	}
	return "stall: steady\n" + b.String()
}

// Exit 1 with a timeout error is the probe saying the stall is ongoing:
// its result is judged (a failure), not dropped as "could not run".
func TestSetResultKeepsAnOngoingStall(t *testing.T) {
	res := writerResult("node-a", 90, true)
	res.LongestGap.Ongoing, res.StallOngoing, res.Verification = true, true, nil
	w := Writer{Node: "node-a", Pod: "w", Exit: 1}
	w.setResult(stallEnvelope(t, res, probeout.Errorf(probeout.KindTimeout, "I/O still hung 10s after the stop")))
	if w.Result == nil || w.Problem != "" {
		t.Fatalf("%+v", w)
	}
	r := passingRound()
	r.Writer = w
	c := Judge(r)[0]
	if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "still stalled when the writer stopped") {
		t.Fatalf("%s %s", c.Status, c.Diagnosis)
	}

	u := Writer{Node: "node-a", Pod: "w", Exit: 1}
	u.setResult(stallEnvelope(t, &Result{Mode: "write"}, probeout.Errorf(probeout.KindInternal, "cannot create /data/node-a.rec: permission denied")))
	if u.Result != nil || !strings.Contains(u.Problem, "exited 1 (could not run): internal: cannot create") {
		t.Fatalf("%+v", u)
	}
	n := Writer{Node: "node-a", Pod: "w", Exit: 0}
	n.setResult("stall: steady\n")
	if n.Result != nil || !strings.Contains(n.Problem, "left no stall result") {
		t.Fatalf("%+v", n)
	}
}
