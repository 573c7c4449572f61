package doctor

import (
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

func nodeChecks(t *testing.T, s State) map[string]reports.Check {
	t.Helper()
	got := map[string]reports.Check{}
	for _, c := range Checks(s, Diagnose(s), 0) {
		if c.ID == "doctor/node" {
			got[c.Nodes[0]] = c
		}
	}
	return got
}

// A node check passes only when API and host facts were both read and
// everything on the node could be judged.
func TestNodeCheckNeedsEverythingJudged(t *testing.T) {
	s := healthy()
	if c := nodeChecks(t, s); c["node-1"].Status != reports.Pass || c["node-2"].Status != reports.Pass {
		t.Fatalf("healthy: %+v", c)
	}
	for _, tc := range []struct {
		name, want string
		edit       func(*State)
	}{
		{"host probe refused", "PodSecurity", func(s *State) {
			delete(s.Hosts, "node-2")
			s.HostsMissing = map[string]string{"node-2": `pods "node-x" is forbidden: violates PodSecurity "baseline:latest": privileged`}
		}},
		{"no host facts at all", "host facts were not gathered", func(s *State) { s.Hosts = nil }},
		{"port state unreadable", "mlx5_0/1 could not be read (unknown, not down)", func(s *State) {
			s.host("node-2", func(h *HostFacts) { h.PortsUnknown = []string{"mlx5_0/1"} })
		}},
		{"kernel without PSI", "I/O pressure not judged: /proc/pressure/io: no such file", func(s *State) {
			s.host("node-2", func(h *HostFacts) { h.IO, h.IOUnavailable = nil, "/proc/pressure/io: no such file" })
		}},
		// Unknown: no policy names one, and no selected node advertises
		// one (else the allocatable of the others would name it).
		{"RDMA node, resource names unknown", "no RDMA resource name is known", func(s *State) {
			s.Policy, s.NoNetworkOperator = nil, true
			s.dropAllocatable("rdma/rdma_shared_device_a")
		}},
		{"RDMA node, the policy configures no device plugin", "no RDMA resource name is known", func(s *State) {
			delete(s.Policy.Object["spec"].(map[string]any), "rdmaSharedDevicePlugin")
			s.dropAllocatable("rdma/rdma_shared_device_a")
		}},
		{"device-plugin config is not JSON", "spec.rdmaSharedDevicePlugin.config is not valid JSON", func(s *State) {
			s.Policy.Object["spec"].(map[string]any)["rdmaSharedDevicePlugin"] = map[string]any{"config": "{configList: ["}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := healthy()
			tc.edit(&s)
			c := nodeChecks(t, s)["node-2"]
			if c.Status != reports.NotRun || !strings.Contains(c.Reason, tc.want) {
				t.Fatalf("node-2: %s %q, want not-run naming %q", c.Status, c.Reason, tc.want)
			}
		})
	}
}

// A pass says where the resource expectations came from and which ports
// were declared unused.
func TestNodePassShowsItsSources(t *testing.T) {
	s := healthy()
	s.host("node-1", func(h *HostFacts) { h.PortsDown = []string{"mlx5_3/1: 1: DOWN (3: Disabled)"} })
	s.UnusedPorts = []string{"mlx5_3"}
	c := nodeChecks(t, s)["node-1"]
	ev := strings.Join(c.Evidence, "\n")
	if c.Status != reports.Pass || !strings.Contains(ev, "port mlx5_3/1: 1: DOWN (3: Disabled) declared unused") ||
		!strings.Contains(ev, "expects rdma/rdma_shared_device_a (source: NicClusterPolicy nic-cluster-policy device-plugin config") ||
		!strings.Contains(ev, "expects nvidia.com/gpu (source: node label nvidia.com/gpu.present=true)") {
		t.Fatalf("%s\n%s", c.Status, ev)
	}
	s.Nodes = append(s.Nodes, cpuNode("cp-1"))
	s.Hosts["cp-1"] = HostFacts{IO: &PSIAverages{}}
	if c := nodeChecks(t, s)["cp-1"]; c.Status != reports.Pass || !strings.Contains(strings.Join(c.Evidence, " "), "expects no extended resource") {
		t.Fatalf("cp-1: %+v", c)
	}
}

// A finding fails its node's check; a cluster-wide finding that could not
// look (no NicClusterPolicy) is not-run.
func TestFindingsBecomeChecks(t *testing.T) {
	s := healthy()
	s.Nodes[0].Spec.Unschedulable = true
	s.Policy, s.PolicyErr = nil, "no NicClusterPolicy CRD"
	s.Resources = []string{"rdma/rdma_shared_device_a"}
	byID := map[string]reports.Check{}
	for _, c := range Checks(s, Diagnose(s), 0) {
		byID[c.ID+"@"+strings.Join(c.Nodes, ",")] = c
	}
	if c := byID["doctor/node-cordoned@node-1"]; c.Status != reports.Fail || c.Fix == "" {
		t.Fatalf("cordon: %+v", byID)
	}
	if _, ok := byID["doctor/node@node-1"]; ok {
		t.Fatal("a node with a finding also got a doctor/node row")
	}
	if c := byID["doctor/nicclusterpolicy-missing@"]; c.Status != reports.NotRun {
		t.Fatalf("missing policy: %+v", c)
	}
}

func TestRulesComplete(t *testing.T) {
	for _, r := range Rules() {
		if r.Severity == "" || r.Seed == "" || len(r.Silent) == 0 {
			t.Errorf("rule %s incomplete: severity %q seed %q silent %d", r.ID, r.Severity, r.Seed, len(r.Silent))
		}
	}
}

// The API-only doctor judges what it can see. Its node check
// is doctor/node-api (a pass says what it covered, never a host pass);
// host checks are not its rows at all, so a healthy cluster passes, and
// what it could not judge in the API stays not-run for --allow-not-run.
func TestAPIOnlyNodeCheckPassesOnWhatItSees(t *testing.T) {
	s := healthy()
	s.Hosts, s.APIOnly = nil, true
	cs := Checks(s, Diagnose(s), 0)
	run := reports.Run{Checks: cs}
	for _, c := range cs {
		if c.ID == "doctor/node" {
			t.Fatalf("API-only doctor wrote a host-level doctor/node row: %+v", c)
		}
		if c.ID == "doctor/node-api" && (c.Status != reports.Pass || !strings.Contains(c.Title, "API")) {
			t.Errorf("%s: %+v", c.Nodes, c)
		}
	}
	if run.ExitCode() != reports.ExitPassed {
		t.Fatalf("a healthy cluster seen through the API exits %d: %s", run.ExitCode(), reports.SummaryText(run))
	}
	// A finding still fails; an API fact it could not judge is not-run,
	// and --allow-not-run=doctor/node-api lets it through.
	s.Nodes[1].Status.Allocatable = nil
	if run := (reports.Run{Checks: Checks(s, Diagnose(s), 0)}); run.ExitCode() == reports.ExitPassed {
		t.Fatalf("a finding passes: %s", reports.SummaryText(run))
	}
}
