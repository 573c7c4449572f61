package disrupt

import "testing"

// Two runs in one shared namespace (--namespace) must never reach for the
// same object: a second run's PVC or writer pod with the first run's name
// would fail to create (AlreadyExists) or, worse, be deleted by the other
// run's cleanup.
func TestNamesOfTwoRunsInOneNamespaceNeverCollide(t *testing.T) {
	seen := map[string]string{}
	add := func(run, what, name string) {
		t.Helper()
		if prev, ok := seen[name]; ok {
			t.Errorf("%s of run %s is named %q, like %s", what, run, name, prev)
		}
		seen[name] = what + " of run " + run
	}
	for _, run := range []string{"run1", "run2"} {
		pv, pvc := ScopedNames(run, "nfs-pv")
		add(run, "PV", pv)
		add(run, "PVC", pvc)
		p := roundPods(run, "node-a", "node-b")
		add(run, "writer", p.Writer)
		add(run, "peer writer", p.PeerWriter)
		add(run, "verify", p.Verify)
	}
	// Within one run, rounds for different targets differ too.
	a, b := roundPods("run1", "node-a", "node-b"), roundPods("run1", "node-b", "node-a")
	if a.Writer == b.PeerWriter || a.PeerWriter == b.Writer || a.Verify == b.Verify {
		t.Errorf("rounds of one run share pod names: %+v vs %+v", a, b)
	}
}
