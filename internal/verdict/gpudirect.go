package verdict

import (
	"fmt"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// GPUDirectPrefix is the gpudirect feature's check id prefix:
// gpudirect/write, gpudirect/read.
const GPUDirectPrefix = "gpudirect/"

// Fixes named by the GPUDirect diagnoses.
const (
	FixGPUDirect = "GPUDirect RDMA needs a path from the NIC to GPU memory: DMA-BUF (NVIDIA open GPU kernel modules, kernel ≥ 5.12, " +
		"rdma-core ≥ 34 / MOFED with ibv_reg_dmabuf_mr) or nvidia_peermem (modprobe nvidia-peermem; the GPU Operator's driver.rdma.enabled=true, " +
		"loaded after MOFED: loaded before the MOFED driver is ready it fails with \"Invalid argument\" and GPUDirect is gone until the driver pod restarts); " +
		"the evidence says why each path was refused"
	FixCrossSocket = "the GPU and the NIC sit on different CPU sockets, so GPUDirect traffic crosses the CPU interconnect: " +
		"give the pod the GPU under the NIC's PCIe switch (nvidia-smi topo -m; the probe's cuda:auto picks the nearest GPU the pod has, " +
		"so request more GPUs or use a topology-aware device plugin / NUMA-aligned kubelet topology manager)"
)

// GPUDirect judges one gpudirect pair: the bandwidth verdict (every rail
// pair × op must be measured at every size, errors typed, exit codes
// agree: verdict.Bandwidth, not a copy of it) with its metric from GPU
// memory (gpuDirectMetric: the SKU's gpuDirectWrite floor, gpudirect/<op>
// ids), plus what only GPU memory has:
//   - a pod without a usable GPU (the probe's no-gpu error, the whole
//     probe's or a rail's) is not-run with the probe's message: nothing on
//     the fabric was measured;
//   - each rail's evidence says, for both sides, which GPU held the
//     buffer (ordinal, name, PCI address, how it was chosen), the
//     GPUDirect path that registered it (dmabuf or peermem) and why the
//     other did not, and the GPU–NIC relation (PIX … SYS, NUMA nodes);
//   - a rail whose GPU and NIC sit on different sockets says so in its
//     diagnosis, pass or fail;
//   - a buffer that neither GPUDirect path could register fails naming
//     both reasons and the fix;
//   - a side whose output does not show GPU memory for the rail (host
//     memory, or no memory record) is never a pass.
func GPUDirect(in BWInput) BWResult {
	in.metric = &gpuDirectMetric
	var cli, srv bw.ProbeOutput
	cPerr, cErr := probeout.ParseError(in.Client.Logs, bw.ProbeName, &cli)
	sPerr, sErr := probeout.ParseError(in.Server.Logs, bw.ProbeName, &srv)
	for _, pe := range []struct {
		s    Side
		perr *probeout.Error
	}{{in.Client, cPerr}, {in.Server, sPerr}} {
		if pe.perr != nil && pe.perr.Kind == probeout.KindNoGPU && in.Client.PodErr == nil && in.Server.PodErr == nil {
			var res BWResult
			for _, op := range in.Ops {
				c := in.check(op, "")
				setOutcome(&c, reports.NotRun, fmt.Sprintf("pod %s on %s has no usable GPU: %s", pe.s.Pod, pe.s.Node, pe.perr.Message), "")
				res.Checks = append(res.Checks, c)
			}
			return res
		}
	}
	res := Bandwidth(in)
	cliRails, srvRails := map[string]bw.RailResult{}, map[string]bw.RailResult{}
	if cErr == nil {
		for _, rr := range cli.Rails {
			cliRails[railLabel(rr.Local, rr.Peer)] = rr
		}
	}
	if sErr == nil {
		for _, rr := range srv.Rails {
			if rr.Peer != nil {
				local := rr.Local
				srvRails[railLabel(*rr.Peer, &local)] = rr
			}
		}
	}
	for i := range res.Checks {
		c := &res.Checks[i]
		if c.Rail == "" {
			continue
		}
		var cross, noGPU, regFailed, hostMem []string
		// A side's fault on this rail that no GPU explains (a down port, a
		// missing device, a transport error): the rail fails on it even
		// when the other side had no GPU to run with.
		var faultMsg, faultFix string
		for _, sd := range []struct {
			s     Side
			role  string
			rails map[string]bw.RailResult
		}{{in.Client, "client", cliRails}, {in.Server, "server", srvRails}} {
			rr, ok := sd.rails[c.Rail]
			if !ok {
				continue
			}
			c.Evidence = append(c.Evidence, memoryEvidence(sd.s, sd.role, rr))
			if rr.Error != nil && rr.Error.Kind == probeout.KindNoGPU {
				noGPU = append(noGPU, fmt.Sprintf("pod %s on %s, rail %s: %s", sd.s.Pod, sd.s.Node, rr.Local.Name(), rr.Error.Message))
			}
			if e := rr.Error; e != nil && faultMsg == "" && e.Kind != probeout.KindNoGPU && e.Kind != probeout.KindPeer && e.Kind != probeout.KindGPUDirect {
				if st, msg, fix := in.explain(sd.s, rr.Local.Name(), e); st == reports.Fail {
					faultMsg, faultFix = msg, fix
				}
			}
			m := rr.Memory
			// Neither GPUDirect path registered the buffer: the kind says
			// so (the memory record adds which GPU, when the probe got
			// that far).
			if rr.Error != nil && rr.Error.Kind == probeout.KindGPUDirect {
				gpu, msg := "", rr.Error.Message
				if m != nil && m.Kind == bw.MemoryCUDA {
					gpu = fmt.Sprintf(", GPU %d (%s)", m.GPU, m.GPUPCI)
					if m.Why != "" && !strings.Contains(msg, m.Why) {
						msg += ": " + m.Why
					}
				}
				regFailed = append(regFailed, fmt.Sprintf("on %s%s for rail %s: %s", sd.s.Node, gpu, rr.Local.Name(), msg))
				if m == nil {
					continue
				}
			}
			switch {
			case m == nil:
				hostMem = append(hostMem, fmt.Sprintf("%s's output does not say where the buffer of rail %s lived (an rdmaprobe image without --mem?)", sd.s.Node, rr.Local.Name()))
				continue
			case m.Kind != bw.MemoryCUDA:
				hostMem = append(hostMem, fmt.Sprintf("%s measured rail %s from %s memory, not GPU memory", sd.s.Node, rr.Local.Name(), m.Kind))
				continue
			}
			if m.CrossSocket {
				cross = append(cross, fmt.Sprintf("on %s, GPU %d (%s) and NIC %s (rail %s) sit on different sockets (%s, NUMA node %d vs %d)",
					sd.s.Node, m.GPU, m.GPUPCI, orDash(m.NICPCI), rr.Local.Name(), orDash(m.Topology), m.NUMAGPU, m.NUMANIC))
			}
			if rr.Error != nil && m.Path == "" && rr.Error.Kind != probeout.KindGPUDirect {
				regFailed = append(regFailed, fmt.Sprintf("on %s, GPU %d (%s) for rail %s: neither GPUDirect RDMA path registered its memory: %s",
					sd.s.Node, m.GPU, m.GPUPCI, rr.Local.Name(), orDash(m.Why)))
			}
		}
		switch {
		case len(noGPU) > 0 && faultMsg != "":
			setOutcome(c, reports.Fail, faultMsg+" (and no usable GPU: "+strings.Join(noGPU, "; ")+")", faultFix)
			continue
		case len(noGPU) > 0:
			setOutcome(c, reports.NotRun, "no usable GPU: "+strings.Join(noGPU, "; "), "")
			continue
		case len(regFailed) > 0:
			setOutcome(c, reports.Fail, strings.Join(regFailed, "; "), FixGPUDirect)
		case c.Status == reports.Pass && len(hostMem) > 0:
			setOutcome(c, reports.Error, strings.Join(hostMem, "; ")+": not a GPUDirect measurement", "")
		}
		if len(cross) > 0 {
			msg := "cross-socket pair: " + strings.Join(cross, "; ") + ": GPUDirect traffic crosses the CPU interconnect"
			switch c.Status {
			case reports.Fail:
				c.Diagnosis += "; " + msg
				if c.Fix == FixSlow {
					c.Fix = FixCrossSocket
				}
			case reports.Pass:
				c.Diagnosis, c.ShowEvidence = msg+" (it met the floor)", true
			default:
				c.Evidence = append(c.Evidence, msg)
			}
		}
	}
	return res
}

// memoryEvidence is one side's buffer on one rail, for a person: which
// GPU, how chosen, the registration path and why, the topology.
func memoryEvidence(s Side, role string, rr bw.RailResult) string {
	head := fmt.Sprintf("%s %s (pod %s) rail %s memory: ", s.Node, role, s.Pod, rr.Local.Name())
	m := rr.Memory
	if m == nil {
		return head + "not reported"
	}
	if m.Kind != bw.MemoryCUDA {
		return head + m.Kind
	}
	var b strings.Builder
	b.WriteString(head)
	fmt.Fprintf(&b, "GPU %d %s (%s), chosen %s", m.GPU, m.GPUName, m.GPUPCI, orDash(m.Selected))
	if m.Path != "" {
		fmt.Fprintf(&b, "; GPUDirect RDMA via %s", m.Path)
	} else {
		b.WriteString("; no GPUDirect RDMA path")
	}
	if m.Why != "" {
		fmt.Fprintf(&b, " (%s)", m.Why)
	}
	if m.Topology != "" {
		fmt.Fprintf(&b, "; %s to NIC %s", m.Topology, orDash(m.NICPCI))
	} else if m.TopologyWhy != "" {
		fmt.Fprintf(&b, "; topology unknown: %s", m.TopologyWhy)
	}
	fmt.Fprintf(&b, "; NUMA node NIC %d, GPU %d", m.NUMANIC, m.NUMAGPU)
	if m.CrossSocket {
		b.WriteString("; CROSS-SOCKET")
	}
	return b.String()
}
