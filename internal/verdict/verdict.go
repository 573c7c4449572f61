// Package verdict turns probe output into checks of the results model: pure
// functions of what the pods printed, the node facts and the SKU's
// thresholds, so every diagnosis is unit-tested on recorded output.
package verdict

import (
	"fmt"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/mr"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

// BWOutput mirrors what `rdmaprobe bw` prints (cmd/rdmaprobe).
type BWOutput struct {
	Runs  []bw.Report `json:"runs"`
	Error string      `json:"error,omitempty"`
}

// Side is one pod of a pair, as the suite observed it.
type Side struct {
	Node, Pod string
	Logs      string
	Exit      int32
	PodErr    error // the pod never ran or did not finish (scheduling, image, timeout)
	Command   string
}

// BWInput is one pair's observation.
type BWInput struct {
	Variant  string // shared-dev or hostdev
	Resource string // the extended resource the pods requested
	Network  string // Multus network (hostdev)
	Ops      []string
	Client   Side
	Server   Side
	SKU      *thresholds.SKU
	SKUErr   error
}

// Fixes named by the diagnoses.
const (
	FixNoDevice = "check the RDMA device plugin (or SR-IOV device plugin) pod and the MOFED driver pod on this node " +
		"(kubectl -n nvidia-network-operator get pods -o wide): the plugin must hand /dev/infiniband/uverbs* to pods " +
		"that request the resource; a node must not advertise it before the driver is ready"
	FixNoNetdev = "the pod's secondary interface has no RDMA device: check the NetworkAttachmentDefinition named in " +
		"k8s.v1.cni.cncf.io/networks, the SR-IOV CNI and that the VF is bound to mlx5_core with RDMA enabled"
)

// Bandwidth judges one pair: one check per op.
func Bandwidth(in BWInput) []reports.Check {
	nodes := []string{in.Client.Node, in.Server.Node}
	var out []reports.Check
	for _, op := range in.Ops {
		c := reports.Check{ID: "bandwidth/" + op, Title: fmt.Sprintf("RDMA %s bandwidth %s → %s", op, in.Client.Node, in.Server.Node),
			Nodes: nodes, Variant: in.Variant}
		c.Evidence = evidence(in)
		judgeBandwidth(&c, in, op)
		out = append(out, c)
	}
	return out
}

func evidence(in BWInput) []string {
	var ev []string
	for _, s := range []Side{in.Client, in.Server} {
		ev = append(ev, fmt.Sprintf("pod %s on %s: %s (exit %d)", s.Pod, s.Node, s.Command, s.Exit))
		if s.PodErr != nil {
			ev = append(ev, "  "+s.PodErr.Error())
		}
		if t := lastLines(s.Logs, 6); t != "" {
			ev = append(ev, "  "+strings.ReplaceAll(t, "\n", "\n  "))
		}
	}
	return ev
}

func judgeBandwidth(c *reports.Check, in BWInput, op string) {
	for _, s := range []Side{in.Client, in.Server} {
		if s.PodErr != nil {
			c.Status, c.Reason = reports.Error, fmt.Sprintf("pod %s on %s did not run to completion: %v", s.Pod, s.Node, s.PodErr)
			return
		}
	}
	cli, cerr := parseBW(in.Client.Logs)
	srv, serr := parseBW(in.Server.Logs)
	// Attribute a missing device to the side that saw it first-hand (the
	// other side reports "peer … failed").
	for _, side := range []struct {
		s   Side
		out BWOutput
		err error
	}{{in.Client, cli, cerr}, {in.Server, srv, serr}} {
		if side.err != nil || side.out.Error == "" || strings.HasPrefix(side.out.Error, "peer ") || strings.Contains(side.out.Error, ": peer ") {
			continue
		}
		switch msg := side.out.Error; {
		case strings.Contains(msg, strings.SplitN(verbs.ErrNoDevice.Error(), ":", 2)[0]):
			c.Status = reports.Fail
			c.Diagnosis = fmt.Sprintf("node %s advertises %s but no RDMA device is visible in pod %s: device plugin / MOFED not ready", side.s.Node, in.Resource, side.s.Pod)
			c.Fix = FixNoDevice
			return
		case strings.Contains(msg, "behind netdev"):
			c.Status = reports.Fail
			c.Diagnosis = fmt.Sprintf("pod %s on %s: %s (network %q)", side.s.Pod, side.s.Node, msg, in.Network)
			c.Fix = FixNoNetdev
			return
		case strings.Contains(msg, "the link is not up"):
			c.Status, c.Diagnosis = reports.Fail, fmt.Sprintf("node %s: %s", side.s.Node, msg)
			c.Fix = "bring the port up (cable, switch port, subnet manager for InfiniBand); ibstat on the node shows the same state"
			return
		}
	}
	if cerr != nil {
		c.Status, c.Reason = reports.Error, fmt.Sprintf("client pod %s printed no bandwidth result: %v", in.Client.Pod, cerr)
		return
	}
	if in.SKUErr != nil {
		c.Status, c.Reason = reports.Error, in.SKUErr.Error()
		return
	}
	floor, err := in.SKU.BandwidthFloor(op)
	if err != nil {
		c.Status, c.Reason = reports.Error, err.Error()
		return
	}
	var rep *bw.Report
	for i := range cli.Runs {
		if string(cli.Runs[i].Params.Op) == op && len(cli.Runs[i].Results) > 0 {
			rep = &cli.Runs[i]
		}
	}
	port := ""
	var judged *float64
	if rep != nil {
		port = fmt.Sprintf("%s/%d", rep.Device.Name, rep.Device.Port)
		// Sizes below the largest are recorded; the largest (line rate) is judged.
		for _, r := range rep.Results {
			c.Measured = append(c.Measured, reports.Measurement{Name: fmt.Sprintf("%s_%s_avg", op, sizeName(r.Local.Bytes)),
				Port: port, Value: r.Local.AvgGbps, Unit: "Gb/s"})
		}
		last := rep.Results[len(rep.Results)-1].Local.AvgGbps
		judged = &last
		c.Measured = c.Measured[:len(c.Measured)-1]
	}
	name := op + "_avg"
	if rep != nil {
		name = fmt.Sprintf("%s_%s_avg", op, sizeName(rep.Results[len(rep.Results)-1].Local.Bytes))
	}
	m, st, why := thresholds.Judge(name, "Gb/s", port, judged, floor)
	c.Measured = append(c.Measured, m)
	c.Status = st
	if st == reports.Fail {
		c.Diagnosis = why
		if rep == nil && cli.Error != "" {
			c.Diagnosis += "; client error: " + cli.Error
		}
		if rep != nil && rep.Device.RateGbps > 0 && in.SKU.LinkRateGbps.Value != nil && rep.Device.RateGbps < *in.SKU.LinkRateGbps.Value {
			c.Diagnosis += fmt.Sprintf("; port %s runs at %g Gb/s, the SKU expects %g Gb/s (link trained down: cable or switch port)",
				port, rep.Device.RateGbps, *in.SKU.LinkRateGbps.Value)
		}
		c.Fix = "compare with ib_write_bw between the same nodes; check port rate/width (ibstat), PCIe width (lspci -vv), and the switch counters"
	}
}

func parseBW(logs string) (BWOutput, error) {
	var o BWOutput
	err := probeout.Parse(logs, "bw", &o)
	return o, err
}

func sizeName(b int) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + "…"
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// Memlock judges `rdmaprobe mr` in one pod: the rlimit (judged even with no
// device) and the registration (not-run without a device).
func Memlock(variant string, s Side, sku *thresholds.SKU, skuErr error) []reports.Check {
	base := func(id, title string) reports.Check {
		return reports.Check{ID: id, Title: title, Nodes: []string{s.Node}, Variant: variant,
			Evidence: []string{fmt.Sprintf("pod %s on %s: %s (exit %d)", s.Pod, s.Node, s.Command, s.Exit), lastLines(s.Logs, 4)}}
	}
	rl := base("memlock/rlimit", "pod memlock limit allows registering the required size")
	reg := base("memlock/registration", "memory regions of the required size register in a pod")
	if s.PodErr != nil {
		for _, c := range []*reports.Check{&rl, &reg} {
			c.Status, c.Reason = reports.Error, fmt.Sprintf("pod %s on %s did not run: %v", s.Pod, s.Node, s.PodErr)
		}
		return []reports.Check{rl, reg}
	}
	var r mr.Result
	if err := probeout.Parse(s.Logs, "mr", &r); err != nil {
		for _, c := range []*reports.Check{&rl, &reg} {
			c.Status, c.Reason = reports.Error, "no mr result: "+err.Error()
		}
		return []reports.Check{rl, reg}
	}
	var th reports.Threshold
	if skuErr == nil {
		th = sku.MinMemlock()
	} else {
		th = reports.Threshold{Op: ">=", Value: float64(r.RequiredBytes), Source: "--memlock-required"}
	}
	limit := float64(r.Memlock.Soft)
	if r.Memlock.Soft < 0 || r.IPCLock {
		limit = -1 // unlimited, or not enforced with IPC_LOCK
	}
	rl.Measured = []reports.Measurement{{Name: "memlock_soft", Value: limit, Unit: "bytes", Threshold: &th}}
	rl.Status = reports.Status(r.RlimitStatus)
	if rl.Status == reports.Fail {
		rl.Diagnosis, rl.Fix = r.Diagnosis, r.Fix
	}
	reg.Status = reports.Status(r.RegStatus)
	switch reg.Status {
	case reports.NotRun:
		reg.Reason = r.NotRunWhy
	case reports.Fail:
		reg.Diagnosis, reg.Fix = r.Diagnosis, r.Fix
		fallthrough
	default:
		reg.Measured = []reports.Measurement{{Name: "largest_mr", Value: float64(r.LargestOK), Unit: "bytes",
			Threshold: &reports.Threshold{Op: ">=", Value: float64(r.RequiredBytes), Source: th.Source}}}
	}
	return []reports.Check{rl, reg}
}
