package portcounters

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func countGroup(s Snapshot, g Group) int {
	n := 0
	for _, c := range s.Counters {
		if c.Group == g {
			n++
		}
	}
	return n
}

func TestReadMLX5InfiniBand(t *testing.T) {
	s := mustRead(t, ibRoot, ibDev)
	if got := countGroup(s, Counters); got != 21 {
		t.Errorf("counters/: %d counters, want 21", got)
	}
	// 26 counters; lifespan is the cache knob, not a counter.
	if got := countGroup(s, HWCounters); got != 26 {
		t.Errorf("hw_counters/: %d counters, want 26", got)
	}
	if _, ok := s.Get(HWCounters, "lifespan"); ok {
		t.Error("lifespan read as a counter")
	}
	if s.Lifespan != 10*time.Millisecond {
		t.Errorf("Lifespan = %v, want 10ms", s.Lifespan)
	}
	if len(s.Absent) != 0 || len(s.GroupErrs) != 0 {
		t.Errorf("Absent %v GroupErrs %v, want none", s.Absent, s.GroupErrs)
	}
	for name, want := range map[string]uint64{"port_xmit_data": 205143497464492, "link_downed": 255, "port_xmit_wait": 4294967295} {
		c, ok := s.Get(Counters, name)
		if !ok || c.Err != "" || c.Value != want {
			t.Errorf("counters/%s = %+v (ok %v), want %d", name, c, ok, want)
		}
	}
	if s.Driver() != "mlx5" {
		t.Errorf("Driver() = %q, want mlx5", s.Driver())
	}
	if s.Time.IsZero() || s.Device != ibDev || s.Port != 1 {
		t.Errorf("snapshot header %+v", s)
	}
}

func TestReadMLX5RoCE(t *testing.T) {
	s := mustRead(t, roceRoot, roceDev)
	if got := countGroup(s, Counters); got != 21 {
		t.Errorf("counters/: %d, want 21", got)
	}
	if got := countGroup(s, HWCounters); got != 31 {
		t.Errorf("hw_counters/: %d, want 31", got)
	}
	for _, name := range []string{"np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored", "rx_icrc_encapsulated"} {
		if c, ok := s.Get(HWCounters, name); !ok || c.Err != "" {
			t.Errorf("hw_counters/%s: %+v ok=%v", name, c, ok)
		}
	}
	if c, _ := s.Get(Counters, "port_xmit_data"); c.Value != 2880761508848 {
		t.Errorf("port_xmit_data = %d", c.Value)
	}
}

func TestReadRXEHasNoCountersDir(t *testing.T) {
	s := mustRead(t, rxeRoot, rxeDev)
	if len(s.Absent) != 1 || s.Absent[0] != Counters {
		t.Fatalf("Absent = %v, want [counters]", s.Absent)
	}
	if got := countGroup(s, HWCounters); got != 15 {
		t.Errorf("hw_counters/: %d, want 15", got)
	}
	if s.Driver() != "rxe" {
		t.Errorf("Driver() = %q, want rxe", s.Driver())
	}
}

func TestReadFixtureNamesAreInTable(t *testing.T) {
	for _, l := range []struct{ root, dev string }{{ibRoot, ibDev}, {roceRoot, roceDev}, {rxeRoot, rxeDev}} {
		s := mustRead(t, l.root, l.dev)
		for _, c := range s.Counters {
			if _, ok := Lookup(c.Group, c.Name, s.Driver()); !ok {
				t.Errorf("%s: %s/%s has no table entry", l.root, c.Group, c.Name)
			}
		}
	}
}

func TestReadMissingPortIsTheOnlyError(t *testing.T) {
	if _, err := Read(ibRoot, ibDev, 2); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing port: err = %v, want not-exist", err)
	}
	if _, err := Read(ibRoot, "mlx5_9", 1); err == nil {
		t.Error("missing device: no error")
	}
	for _, bad := range []string{"", "..", "../mlx5_1", "a/b"} {
		if _, err := Read(ibRoot, bad, 1); err == nil {
			t.Errorf("device %q: no error", bad)
		}
	}
	// A port directory with neither group: no error, both named absent.
	root := t.TempDir()
	if err := os.MkdirAll(PortDir(root, "bare0", 1), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Read(root, "bare0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Absent) != 2 || len(s.Counters) != 0 {
		t.Errorf("bare port: Absent %v, %d counters", s.Absent, len(s.Counters))
	}
}

func TestReadUnreadableCounterIsNamedNotZero(t *testing.T) {
	root := copyTree(t, ibRoot)
	// What sysfs.c show_pma_counter prints when the PMA query fails.
	setCounter(t, root, ibDev, Counters, "port_rcv_data", "N/A (no PMA)")
	setCounter(t, root, ibDev, Counters, "port_rcv_errors", "")
	// A file that cannot be read at all, even as root.
	if err := os.Symlink(filepath.Join(root, "nowhere"), counterPath(root, ibDev, HWCounters, "out_of_buffer_gone")); err != nil {
		t.Fatal(err)
	}
	unreadable := []string{"counters/port_rcv_data", "counters/port_rcv_errors", "hw_counters/out_of_buffer_gone"}
	if os.Geteuid() != 0 {
		if err := os.Chmod(counterPath(root, ibDev, Counters, "symbol_error"), 0); err != nil {
			t.Fatal(err)
		}
		unreadable = append(unreadable, "counters/symbol_error")
	}
	s := mustRead(t, root, ibDev)
	for _, key := range unreadable {
		g, name, _ := strings.Cut(key, "/")
		c, ok := s.Get(Group(g), name)
		if !ok {
			t.Errorf("%s dropped from the snapshot", key)
			continue
		}
		if c.Err == "" {
			t.Errorf("%s read as %d with no error", key, c.Value)
		}
	}
	if c, _ := s.Get(Counters, "port_rcv_data"); !strings.Contains(c.Err, "N/A (no PMA)") {
		t.Errorf("port_rcv_data error %q does not quote the file", c.Err)
	}
}
