package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

const longFix = "raise the container memlock limit: set LimitMEMLOCK=infinity in containerd's systemd unit (or the runtime's default rlimits), " +
	"or give the pod CAP_IPC_LOCK; then restart containerd and re-create the pods — the fix must stay visible, never cut"

func tableRun() Run {
	return Run{RunID: "r1", Cluster: Cluster{Server: "https://api:6443", Version: "v1.35.4"}, Checks: []Check{
		{ID: "bandwidth/write", Nodes: []string{"gpu-a", "gpu-b"}, Variant: "shared-dev", Rail: "mlx5_0/1→mlx5_0/1", Status: Fail,
			Measured:  []Measurement{{Name: "write_1MiB_avg", Node: "gpu-a", Port: "mlx5_0/1", Value: 12, Unit: "Gb/s", Threshold: &Threshold{Op: ">=", Value: 360}}},
			Diagnosis: "write bandwidth 12 Gb/s is below the floor", Fix: "check the cable"},
		{ID: "bandwidth/write", Nodes: []string{"gpu-c", "gpu-a"}, Variant: "shared-dev", Rail: "mlx5_0/1→mlx5_0/1", Status: Fail,
			Diagnosis: "write bandwidth 11 Gb/s is below the floor", Fix: "check the cable"},
		{ID: "bandwidth/write", Nodes: []string{"gpu-b", "gpu-c"}, Variant: "shared-dev", Rail: "mlx5_0/1→mlx5_0/1", Status: Pass,
			Measured: []Measurement{{Name: "write_1MiB_avg", Node: "gpu-b", Port: "mlx5_0/1", Value: 380, Unit: "Gb/s"}}},
		{ID: "memlock/rlimit", Nodes: []string{"gpu-a"}, Variant: "shared-dev", Status: Fail,
			Diagnosis: "memlock limit is 64 KiB and the process lacks CAP_IPC_LOCK", Fix: longFix},
		{ID: "nccl/all_reduce", Nodes: []string{"gpu-a", "gpu-b", "gpu-c"}, Variant: "shared-dev", Status: NotRun, Reason: "no GPU"},
	}}
}

// The terminal table fits the width it is given, wraps long text instead
// of cutting it (the fix is the point of a failing row), shows a pair's
// direction client → server with the port, and starts with a per-node
// roll-up that shows the node common to every failing pair.
func TestTableFitsWrapsAndRollsUpPerNode(t *testing.T) {
	for _, width := range []int{100, 160} {
		var b bytes.Buffer
		if err := TableWidth(&b, tableRun(), width); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for i, line := range strings.Split(out, "\n") {
			if w := runewidth.StringWidth(line); w > width {
				t.Errorf("width %d: line %d is %d columns: %q", width, i+1, w, line)
			}
		}
		// Every word of the fix is there, in order, once the wrapping and
		// the borders are taken away.
		flat := strings.Join(strings.Fields(strings.NewReplacer("│", " ", "|", " ").Replace(out)), " ")
		if !strings.Contains(flat, "set LimitMEMLOCK=infinity in") || !strings.Contains(flat, "stay visible, never cut") {
			t.Errorf("width %d: the fix was cut:\n%s", width, out)
		}
		if !strings.Contains(flat, "gpu-a → gpu-b") || !strings.Contains(flat, "gpu-c → gpu-a") || !strings.Contains(flat, "mlx5_0/1→mlx5_0/1") {
			t.Errorf("width %d: pairs without direction:\n%s", width, out)
		}
		if strings.Contains(flat, "gpu-a → gpu-b → gpu-c") {
			t.Errorf("width %d: a world of three is not a pair:\n%s", width, out)
		}
		// Failures first (an operator reads the culprit before the roll-up): the failing rows, then the roll-up.
		roll := strings.Index(out, "per node")
		main := strings.Index(out, "diagnosis / fix")
		if roll < 0 || main < 0 || roll < main {
			t.Fatalf("width %d: the failing rows must come before the per-node roll-up:\n%s", width, out)
		}
		// The passing pair is folded into one line that says how to see it.
		if strings.Contains(flat, "gpu-b → gpu-c") || !strings.Contains(flat, "1 passing row folded (bandwidth/write): --all shows them") {
			t.Errorf("width %d: the passing row is not folded:\n%s", width, out)
		}
		// gpu-a: 3 failing checks (two pairs and its memlock), gpu-b and
		// gpu-c one failing pair each.
		rollup := out[roll:]
		for node, want := range map[string]string{"gpu-a": "3", "gpu-b": "1", "gpu-c": "1"} {
			var line string
			var f []string
			for _, l := range strings.Split(rollup, "\n") {
				if g := strings.Fields(strings.NewReplacer("│", " ", "|", " ").Replace(l)); len(g) > 0 && g[0] == node {
					line, f = l, g
				}
			}
			if len(f) < 3 || f[0] != node || f[2] != want {
				t.Errorf("width %d: roll-up row for %s = %q, want pass count then fail count %s", width, node, line, want)
			}
		}
	}
}

// An error row that knows its fix (a setup step refused by RBAC, a probe's
// error kind) shows it in the table and in JUnit, beside the reason.
func TestErrorRowShowsItsFix(t *testing.T) {
	r := Run{RunID: "x", Checks: []Check{{ID: "setup/namespace", Status: Error, Reason: "namespaces is forbidden", Fix: "grant create on namespaces, or --namespace"}}}
	var tb, ju strings.Builder
	if err := Table(&tb, r); err != nil {
		t.Fatal(err)
	}
	if err := JUnit(&ju, r); err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"table": tb.String(), "junit": ju.String()} {
		if !strings.Contains(out, "namespaces is forbidden") || !strings.Contains(out, "grant create on namespaces") {
			t.Errorf("%s lacks the reason or the fix:\n%s", what, out)
		}
	}
}
