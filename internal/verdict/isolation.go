package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
)

// Sight is one readable bandwidth probe output: the pod that printed it and
// what it saw of the node's RDMA devices (nil View: the probe printed no
// pod view, e.g. an image older than the suite).
type Sight struct {
	Pod  string
	View *bw.PodView
}

// Fixes of the netns-mode diagnoses.
const (
	FixIsolation = "run the RDMA subsystem in exclusive network-namespace mode on SR-IOV nodes " +
		"(`rdma system set netns exclusive` before any pod starts, e.g. ib_core netns_mode=0 module parameter), as rdma-cni requires"
	FixSharedDevExclusive = "the RDMA shared device plugin needs the RDMA subsystem in shared network-namespace mode " +
		"(`rdma system set netns shared`, ib_core netns_mode=1); nodes kept in exclusive mode for SR-IOV must use the hostdev variant"
)

// IsolationID is the check that hostdev pods see only their own device.
const IsolationID = "bandwidth/isolation"

// Isolation judges, for one node of the hostdev variant, what its bandwidth
// pods saw: it passes only when every readable probe output listed exactly
// one visible RDMA device and it is the one behind netdev. A pod seeing
// other devices (shared RDMA netns mode), or none behind netdev, fails; no
// readable observation, or one without a device list, is not-run (unless
// another pod's observation already fails).
func Isolation(variant, node, netdev string, sights []Sight) reports.Check {
	c := reports.Check{ID: IsolationID, Title: "a hostdev pod sees only its own RDMA device", Variant: variant, Nodes: []string{node},
		Traits: &reports.Traits{Localize: true}} // a node's own evidence, as its bandwidth rows
	if len(sights) == 0 {
		c.Status, c.Reason = reports.NotRun, fmt.Sprintf("no readable bandwidth probe output from %s: what its hostdev pods see is unknown (see the bandwidth rows)", node)
		return c
	}
	var (
		unknown                 []string // why an observation does not count
		missing                 []string // pods with no device behind netdev
		missingSaw              []string // what those pods saw instead
		own, extra              []string // over every pod that has its own device
		extraModes, extraWhyNot []string // the netns modes the pods with extra devices read
	)
	for _, s := range sights {
		v := s.View
		switch {
		case v == nil:
			unknown = append(unknown, fmt.Sprintf("pod %s printed no pod view (a probe image older than the suite?)", s.Pod))
			c.Evidence = append(c.Evidence, fmt.Sprintf("pod %s: no pod view in the probe output", s.Pod))
			continue
		case v.DevicesError != "":
			unknown = append(unknown, fmt.Sprintf("pod %s could not list its RDMA devices: %s", s.Pod, v.DevicesError))
			c.Evidence = append(c.Evidence, fmt.Sprintf("pod %s: %s; devices visible in the pod unknown (%s)", s.Pod, modeText(v), v.DevicesError))
			continue
		}
		c.Evidence = append(c.Evidence, fmt.Sprintf("pod %s: %s; devices visible in the pod: %s", s.Pod, modeText(v), devicesText(v.Devices)))
		mine := -1
		for i, d := range v.Devices {
			if d.Netdev == netdev && (mine < 0 || d.Openable && !v.Devices[mine].Openable) {
				mine = i
			}
		}
		if mine < 0 {
			missing = append(missing, s.Pod)
			for _, d := range v.Devices {
				missingSaw = addOnce(missingSaw, d.Name)
			}
			continue
		}
		own = addOnce(own, v.Devices[mine].Name)
		if len(v.Devices) == 1 {
			continue
		}
		for i, d := range v.Devices {
			if i != mine {
				extra = addOnce(extra, d.Name)
			}
		}
		if v.NetnsMode != "" {
			extraModes = addOnce(extraModes, v.NetnsMode)
		} else {
			extraWhyNot = addOnce(extraWhyNot, v.NetnsModeError)
		}
	}
	var diag, fix []string
	if len(missing) > 0 {
		saw := "none"
		if len(missingSaw) > 0 {
			saw = strings.Join(missingSaw, ", ")
		}
		who := "pod " + missing[0] + " on " + node + " sees"
		if len(missing) > 1 {
			who = "pods " + strings.Join(missing, ", ") + " on " + node + " see"
		}
		diag = append(diag, fmt.Sprintf("hostdev %s no RDMA device behind %s (devices visible: %s)", who, netdev, saw))
		fix = append(fix, FixNoNetdev)
	}
	if len(extra) > 0 {
		diag = append(diag, fmt.Sprintf("hostdev pods on %s see %s besides their own %s (on %s): %s",
			node, strings.Join(extra, ", "), strings.Join(own, ", "), netdev, modeClause(extraModes, extraWhyNot)))
		fix = append(fix, FixIsolation)
	}
	switch {
	case len(diag) > 0:
		c.Status, c.Diagnosis, c.Fix = reports.Fail, strings.Join(diag, "; "), strings.Join(fix, "; also: ")
	case len(unknown) > 0:
		c.Status, c.Reason = reports.NotRun, strings.Join(unknown, "; ")
	default:
		c.Status = reports.Pass
	}
	return c
}

// modeClause explains why pods see other devices, from the modes they read.
func modeClause(modes, whyNot []string) string {
	switch {
	case len(modes) == 1 && modes[0] == bw.NetnsShared && len(whyNot) == 0:
		return "the node's RDMA subsystem is in shared netns mode"
	case len(modes) == 1 && modes[0] == bw.NetnsExclusive && len(whyNot) == 0:
		return "although the RDMA subsystem reads exclusive netns mode (were these devices moved into the pods' network namespace?)"
	case len(modes) == 0:
		return fmt.Sprintf("the RDMA netns mode could not be read (%s); shared mode is what makes other devices visible", strings.Join(whyNot, "; "))
	}
	ms := append(append([]string{}, modes...), whyNot...)
	return "the pods read RDMA netns mode " + strings.Join(ms, ", ")
}

// modeText is the mode as evidence reads it.
func modeText(v *bw.PodView) string { return "RDMA netns mode " + modeWord(v) }

func modeWord(v *bw.PodView) string {
	if v.NetnsMode == "" {
		return fmt.Sprintf("unknown (%s)", v.NetnsModeError)
	}
	return v.NetnsMode
}

// devicesText lists visible devices as "rxehd0 (net1), rxe0 (eth1, not openable)".
func devicesText(ds []bw.VisibleDevice) string {
	if len(ds) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		var attrs []string
		if d.Netdev != "" {
			attrs = append(attrs, d.Netdev)
		}
		if !d.Openable {
			attrs = append(attrs, "not openable")
		}
		p := d.Name
		if len(attrs) > 0 {
			p += " (" + strings.Join(attrs, ", ") + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// ModeEvidence is the evidence line of the RDMA netns mode(s) the sights
// read, e.g. "RDMA netns mode in the pods: shared" ("" when none printed a
// pod view).
func ModeEvidence(sights []Sight) string {
	var modes []string
	for _, s := range sights {
		if s.View != nil {
			modes = addOnce(modes, modeWord(s.View))
		}
	}
	if len(modes) == 0 {
		return ""
	}
	return "RDMA netns mode in the pods: " + strings.Join(modes, "; ")
}

func addOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
