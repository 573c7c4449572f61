package portcounters

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite COUNTERS.md from the counter table")

// COUNTERS.md is generated from the table; this keeps the two in step.
func TestCountersDocInSync(t *testing.T) {
	want := []byte(renderMarkdown(Table()))
	if *update {
		if err := os.WriteFile("COUNTERS.md", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("COUNTERS.md")
	if err != nil {
		t.Fatalf("%v (run: go test ./workloads/portcounters -run TestCountersDocInSync -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Error("COUNTERS.md is out of date: go test ./workloads/portcounters -run TestCountersDocInSync -update")
	}
}

// Every counter the suite reads (link and physical errors, congestion
// signals, data and packet counts, the drivers' retry and sequence
// errors) is in the table, in the right group and driver.
func TestTableCoversTheCountersRead(t *testing.T) {
	want := map[string][]string{
		"counters/": {"symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
			"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
			"port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
			"excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_wait", "port_xmit_data",
			"port_rcv_data", "port_xmit_packets", "port_rcv_packets"},
		"hw_counters/mlx5": {"out_of_buffer", "out_of_sequence", "packet_seq_err", "local_ack_timeout_err",
			"rnr_nak_retry_err", "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart",
			"implied_nak_seq_err", "duplicate_request", "rx_read_requests", "rx_write_requests",
			"np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored",
			"req_cqe_error", "resp_cqe_error"},
		"hw_counters/rxe": {"sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request",
			"rcvd_rnr_err", "send_rnr_err", "rcvd_seq_err", "ack_deferred", "retry_exceeded_err",
			"retry_rnr_exceeded_err", "completer_retry_err", "send_err", "link_downed", "rdma_sends", "rdma_recvs"},
	}
	for where, names := range want {
		for _, n := range names {
			var e Entry
			var ok bool
			switch where {
			case "counters/":
				e, ok = Lookup(Counters, n, "")
				ok = ok && e.Driver == ""
			case "hw_counters/mlx5":
				e, ok = Lookup(HWCounters, n, "mlx5")
				ok = ok && e.Driver == "mlx5"
			case "hw_counters/rxe":
				e, ok = Lookup(HWCounters, n, "rxe")
				ok = ok && e.Driver == "rxe"
			}
			if !ok {
				t.Errorf("%s%s missing from the table", where, n)
			}
		}
	}
}

func TestTableIsWellFormed(t *testing.T) {
	type key struct {
		g            Group
		name, driver string
	}
	seen := map[key]bool{}
	for _, e := range Table() {
		k := key{e.Group, e.Name, e.Driver}
		if seen[k] {
			t.Errorf("duplicate entry %+v", k)
		}
		seen[k] = true
		if e.Meaning == "" || e.Source == "" || e.Class == "" || e.Policy == "" {
			t.Errorf("%s/%s: incomplete entry %+v", e.Group, e.Name, e)
		}
		switch e.Group {
		case Counters:
			if e.Bits == 0 || e.Driver != "" {
				t.Errorf("counters/%s: PortCounters entries need a width and no driver", e.Name)
			}
		case HWCounters:
			if e.Bits != 0 || e.Driver == "" {
				t.Errorf("hw_counters/%s: driver counters have no IBTA width but a driver", e.Name)
			}
		default:
			t.Errorf("%s: unknown group %q", e.Name, e.Group)
		}
		if e.Class == ClassPhysicalLink && (e.Policy != Judged || e.DefaultAllowance != 0) {
			t.Errorf("%s/%s: physical/link errors are judged with allowance 0", e.Group, e.Name)
		}
		if e.Policy != Judged && e.DefaultAllowance != 0 {
			t.Errorf("%s/%s: allowance on an unjudged counter", e.Group, e.Name)
		}
	}
}
