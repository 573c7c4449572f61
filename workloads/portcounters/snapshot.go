package portcounters

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Group is the directory under a port that a counter lives in.
type Group string

const (
	// Counters is ports/N/counters/: the IBTA PortCounters (or
	// PortCountersExtended) the core reads through the device's PMA
	// (drivers/infiniband/core/sysfs.c). Only devices with a process_mad op
	// have it; rxe does not.
	Counters Group = "counters"
	// HWCounters is ports/N/hw_counters/: whatever the driver defines
	// (mlx5: drivers/infiniband/hw/mlx5/counters.c; rxe:
	// drivers/infiniband/sw/rxe/rxe_hw_counters.c).
	HWCounters Group = "hw_counters"
)

// groups is the read order.
var groups = []Group{Counters, HWCounters}

// lifespanFile is hw_counters' cache knob, not a counter: the kernel serves
// hw_counters values up to this many milliseconds old (default 10;
// Documentation/ABI/stable/sysfs-class-infiniband).
const lifespanFile = "lifespan"

// Counter is one counter file as read.
type Counter struct {
	Group Group  `json:"group"`
	Name  string `json:"name"`
	Value uint64 `json:"value"`
	// Err says why Value is not known (unreadable, or not a decimal
	// number, e.g. "N/A (no PMA)"). Empty when Value is good.
	Err string `json:"err,omitempty"`
}

// Key is "group/name", the way findings and reports name a counter.
func (c Counter) Key() string { return key(c.Group, c.Name) }

func key(g Group, name string) string { return string(g) + "/" + name }

// Snapshot is one read of a port's counters.
type Snapshot struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	// Time is when the read began and Took how long it ran: the bracket
	// around a measurement is only as tight as these say.
	Time time.Time     `json:"time"`
	Took time.Duration `json:"took"`
	// Counters is sorted by group, then name.
	Counters []Counter `json:"counters"`
	// Absent lists the groups whose directory this device does not have
	// (rxe has no counters/), so a report can say what was not watched.
	Absent []Group `json:"absent,omitempty"`
	// GroupErrs holds groups whose directory exists but could not be
	// listed: their counters are unknown, not absent.
	GroupErrs map[Group]string `json:"group_errs,omitempty"`
	// Lifespan is hw_counters/lifespan: hw_counters may lag by this much,
	// so an after-read should come at least this long after the traffic.
	// 0 when the file is absent or unreadable.
	Lifespan time.Duration `json:"lifespan,omitempty"`
	// Root is the root the port was read under ("/": the reader's own
	// sysfs; ReadFirst may fall back to a mounted host root).
	Root string `json:"root,omitempty"`
}

// ReadFirst reads the port under each root in turn and returns the first
// read that shows a counter group. Why: a pod in its own network namespace
// (the RDMA subsystem in shared netns mode) sees each device as a compat
// device, whose ports carry neither counters/ nor hw_counters/ (the kernel
// creates them for the full device in the initial namespace only,
// drivers/infiniband/core/sysfs.c); the host's /sys, mounted read-only into
// the pod, has them under the same device name. In exclusive mode the
// device moved into the pod is the full device, so the pod's own sysfs
// comes first. With no root showing a group, the first root's read (or
// error) stands, and says what was absent.
func ReadFirst(roots []string, device string, port int) (Snapshot, error) {
	var first Snapshot
	var firstErr error
	for i, root := range roots {
		s, err := Read(root, device, port)
		s.Root = root
		if err == nil && !(hasGroup(s.Absent, Counters) && hasGroup(s.Absent, HWCounters)) {
			return s, nil
		}
		if i == 0 {
			first, firstErr = s, err
		}
	}
	return first, firstErr
}

// Get returns the counter group/name of the snapshot.
func (s Snapshot) Get(g Group, name string) (Counter, bool) {
	i := sort.Search(len(s.Counters), func(i int) bool {
		c := s.Counters[i]
		return c.Group > g || (c.Group == g && c.Name >= name)
	})
	if i < len(s.Counters) && s.Counters[i].Group == g && s.Counters[i].Name == name {
		return s.Counters[i], true
	}
	return Counter{}, false
}

// Driver guesses which driver published hw_counters from names only it
// uses (rxe_hw_counters.c vs mlx5 counters.c), "" when neither shows. It
// picks between table entries that share a name (duplicate_request).
func (s Snapshot) Driver() string {
	for _, c := range s.Counters {
		if c.Group != HWCounters {
			continue
		}
		switch c.Name {
		case "rcvd_seq_err", "ack_deferred", "completer_retry_err", "sent_pkts":
			return "rxe"
		case "out_of_buffer", "rx_write_requests", "rx_read_requests", "np_cnp_sent":
			return "mlx5"
		}
	}
	return ""
}

// PortDir is the sysfs directory of a port under root ("/" on a host, the
// mount point of the host root inside a pod).
func PortDir(root, device string, port int) string {
	return filepath.Join(root, "sys", "class", "infiniband", device, "ports", strconv.Itoa(port))
}

// Read reads every file of the port's counters/ and hw_counters/. It fails
// only when the port directory itself is missing or the arguments are bad;
// everything else (an absent group, an unreadable file, a non-number) is
// recorded in the snapshot by name.
func Read(root, device string, port int) (Snapshot, error) {
	if device == "" || device == "." || device == ".." || strings.ContainsRune(device, '/') {
		return Snapshot{}, fmt.Errorf("portcounters: bad device name %q", device)
	}
	if port < 0 {
		return Snapshot{}, fmt.Errorf("portcounters: bad port %d", port)
	}
	dir := PortDir(root, device, port)
	s := Snapshot{Device: device, Port: port, Time: time.Now()}
	fi, err := os.Stat(dir)
	if err != nil {
		return Snapshot{}, fmt.Errorf("portcounters: %s port %d: %w", device, port, err)
	}
	if !fi.IsDir() {
		return Snapshot{}, fmt.Errorf("portcounters: %s is not a directory", dir)
	}
	for _, g := range groups {
		s.readGroup(filepath.Join(dir, string(g)), g)
	}
	s.Took = time.Since(s.Time)
	sort.Slice(s.Counters, func(i, j int) bool {
		a, b := s.Counters[i], s.Counters[j]
		return a.Group < b.Group || (a.Group == b.Group && a.Name < b.Name)
	})
	return s, nil
}

func (s *Snapshot) readGroup(dir string, g Group) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		s.Absent = append(s.Absent, g)
		return
	}
	if err != nil {
		// Keep what was listed; the rest of the group is unknown.
		if s.GroupErrs == nil {
			s.GroupErrs = map[Group]string{}
		}
		s.GroupErrs[g] = err.Error()
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		v, err := readValue(filepath.Join(dir, e.Name()))
		if g == HWCounters && e.Name() == lifespanFile {
			if err == nil {
				s.Lifespan = time.Duration(v) * time.Millisecond
			}
			continue
		}
		c := Counter{Group: g, Name: e.Name(), Value: v}
		if err != nil {
			c.Value, c.Err = 0, err.Error()
		}
		s.Counters = append(s.Counters, c)
	}
}

// readValue reads one sysfs counter: a decimal number and a newline.
func readValue(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	text := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		if len(text) > 40 {
			text = text[:40] + "…"
		}
		return 0, fmt.Errorf("not a counter value: %q", text)
	}
	return v, nil
}
