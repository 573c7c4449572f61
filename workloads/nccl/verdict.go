package nccl

import (
	"fmt"
	"slices"
	"strings"
)

// Expect is what a run must have used.
type Expect struct {
	// RDMA: every rank's network must be an RDMA one (NCCL's IB transport,
	// IB or RoCE alike, or an RDMA net plugin), never sockets.
	RDMA bool
	// GPUDirect: every NET connection must be GPUDirect RDMA (/GDRDMA).
	// Implies RDMA.
	GPUDirect bool
}

// Status of a verdict, spelled as the results model spells check statuses.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// Inconclusive: the log cannot decide (no NCCL lines, nothing crossed
	// the network, no connection lines to tell GPUDirect by).
	Inconclusive Status = "inconclusive"
)

// Cause names why a verdict is what it is; runners decide on causes, never
// on the wording of Diagnosis.
type Cause string

const (
	CauseOK            Cause = "ok"
	CauseNoLog         Cause = "no-nccl-log"      // no NCCL line: NCCL_DEBUG=INFO was not set
	CauseNoNetwork     Cause = "no-network"       // nothing crossed the network (one node)
	CauseUnknownNet    Cause = "unknown-network"  // a net plugin this package does not classify
	CauseNotRDMA       Cause = "not-rdma"         // a non-RDMA plugin (GPUDirect-TCPX)
	CauseSocket        Cause = "socket-fallback"  // sockets, and the log does not say why
	CauseNoDevice      Cause = "no-rdma-device"   // NET/IB : No device found
	CauseDeviceOpen    Cause = "rdma-device-open" // devices listed but not openable
	CauseNoVerbs       Cause = "libibverbs-missing"
	CauseIBDisabled    Cause = "ib-disabled" // NCCL_IB_DISABLE set
	CauseMemlock       Cause = "memlock"
	CausePluginFailed  Cause = "net-plugin-failed"
	CauseInitFailed    Cause = "init-failed"        // a verbs or CUDA call failed before Init COMPLETE
	CauseNoGPUDirect   Cause = "no-gpudirect"       // NET connections without GDRDMA
	CauseGDRTopology   Cause = "gpudirect-topology" // GDR off because the GPU is far from the NIC
	CauseNoConnections Cause = "no-connection-lines"
)

// Verdict is Judge's answer.
type Verdict struct {
	Status    Status
	Cause     Cause
	Diagnosis string
	// Evidence are log lines behind the verdict (the first of each kind).
	Evidence []string
}

// NetworkIsRDMA classifies a network name of "Using network X" / "via
// NET/X/": rdma tells whether it moves data by RDMA, known whether this
// package knows the name. NCCL's own "IB" (verbs: InfiniBand and RoCE) and
// "Socket"; the nccl-rdma-sharp plugin's "IBext", "IBext_v8" (verbs); the
// aws-ofi-nccl plugin's "AWS Libfabric"/"Libfabric" (EFA, Slingshot); the
// GPUDirect-TCPX plugin's "GPUDirectTCPX_v7" (TCP, not RDMA).
func NetworkIsRDMA(name string) (rdma, known bool) {
	switch {
	case name == "Socket":
		return false, true
	case name == "IB", strings.HasPrefix(name, "IBext"), strings.Contains(name, "Libfabric"):
		return true, true
	case strings.Contains(name, "TCPX"):
		return false, true
	}
	return false, false
}

// Judge decides from the log whether NCCL used the transport want asks
// for. It judges the transport only: whether the collective then ran and
// how fast is the nccl-tests table's business. When the log shows sockets
// where RDMA was expected it names the most likely reason, in NCCL's own
// order of checks (net_ib init: NCCL_IB_DISABLE, then libibverbs, then the
// device list), after a failed external plugin.
func Judge(f LogFacts, want Expect) Verdict {
	if want.GPUDirect {
		want.RDMA = true
	}
	if f.Lines == 0 {
		return Verdict{Status: Inconclusive, Cause: CauseNoLog,
			Diagnosis: "no NCCL log lines: run with NCCL_DEBUG=INFO (and an NCCL_DEBUG_SUBSYS that keeps INIT, the default; the suite sets INIT,NET,ENV)"}
	}
	nets := f.networks()
	var rdma, socket, other, unknown []string
	for _, n := range nets {
		switch isRDMA, known := NetworkIsRDMA(n); {
		case n == "Socket":
			socket = append(socket, n)
		case isRDMA:
			rdma = append(rdma, n)
		case known:
			other = append(other, n)
		default:
			unknown = append(unknown, n)
		}
	}
	memlock := f.WarningsOf(WarnMemlock)
	fatal := len(memlock) + len(f.WarningsOf(WarnVerbs)) + len(f.WarningsOf(WarnCUDA))

	if !want.RDMA {
		if f.InitComplete == 0 && fatal > 0 {
			return f.initFailed()
		}
		return Verdict{Status: Pass, Cause: CauseOK, Diagnosis: f.summary(nets)}
	}

	blocked := f.IBNoDevice || f.IBVerbsMissing || f.ibDisabled()
	if len(socket) > 0 || (len(rdma) == 0 && len(other) == 0 && len(unknown) == 0 && blocked) {
		v := f.whySocket()
		if len(rdma) > 0 && f.Networks["Socket"] > 0 {
			v.Diagnosis = fmt.Sprintf("%d of %d ranks used sockets: %s", f.Networks["Socket"], f.ranksReporting(), v.Diagnosis)
		}
		return v
	}
	// Every communicator on one node (and nothing above blocked RDMA): "Using network IB" is printed all
	// the same, but nothing crossed the network.
	if f.NNodes == 1 && f.NetConnections == 0 {
		return Verdict{Status: Inconclusive, Cause: CauseNoNetwork, Evidence: f.evidence("nnodes", "init"),
			Diagnosis: fmt.Sprintf("every communicator is on one node (nNodes 1; NCCL named %s): no connection crossed the network, RDMA was not exercised", strings.Join(nets, ", "))}
	}
	if len(rdma) == 0 {
		switch {
		case len(other) > 0:
			return Verdict{Status: Fail, Cause: CauseNotRDMA, Evidence: f.evidence("net:" + other[0]),
				Diagnosis: fmt.Sprintf("NCCL used %s, which is not an RDMA transport", strings.Join(other, ", "))}
		case len(unknown) > 0:
			return Verdict{Status: Inconclusive, Cause: CauseUnknownNet, Evidence: f.evidence("net:" + unknown[0]),
				Diagnosis: fmt.Sprintf("NCCL used network %s, which this check cannot classify as RDMA or not", strings.Join(unknown, ", "))}
		case fatal > 0:
			return f.initFailed()
		case f.InitComplete > 0 || f.P2PConnections > 0:
			return Verdict{Status: Inconclusive, Cause: CauseNoNetwork, Evidence: f.evidence("init"),
				Diagnosis: "no connection crossed the network (all ranks on one node?): RDMA was not exercised"}
		}
		return Verdict{Status: Inconclusive, Cause: CauseNoConnections,
			Diagnosis: "the log names no network and no NET connection"}
	}
	if len(memlock) > 0 {
		return Verdict{Status: Fail, Cause: CauseMemlock, Evidence: f.evidence("warn:memlock"),
			Diagnosis: fmt.Sprintf("%s was chosen but registering memory failed (%s): %s", strings.Join(rdma, ", "), memlock[0].Text, memlockFix)}
	}
	if f.InitComplete == 0 && fatal > 0 {
		return f.initFailed()
	}
	if want.GPUDirect {
		if f.NetConnections == 0 {
			return Verdict{Status: Inconclusive, Cause: CauseNoConnections, Evidence: f.evidence("net:" + rdma[0]),
				Diagnosis: fmt.Sprintf("NCCL used %s but the log has no NET connection lines to tell GPUDirect RDMA by (NCCL prints them under NCCL_DEBUG_SUBSYS INIT or NET)", strings.Join(rdma, ", "))}
		}
		if f.GDRConnections < f.NetConnections {
			return f.noGDR(rdma)
		}
	}
	return Verdict{Status: Pass, Cause: CauseOK, Diagnosis: f.summary(nets), Evidence: f.evidence("net:"+rdma[0], "ib-using", "conn:"+rdma[0], "gdr-conn")}
}

const (
	memlockFix = "memlock too low: set IPC_LOCK / raise RLIMIT_MEMLOCK (securityContext.capabilities.add: [IPC_LOCK]; ulimit -l unlimited)"
	gdrFix     = "load nvidia_peermem on the node (modprobe nvidia-peermem; the GPU operator's driver.rdma.enabled), or use DMA-BUF (NVIDIA open kernel modules, a dma-buf capable kernel, NCCL 2.13+)"
)

func (f LogFacts) whySocket() Verdict {
	if w := f.WarningsOf(WarnPlugin); len(w) > 0 {
		return Verdict{Status: Fail, Cause: CausePluginFailed, Evidence: f.evidence("warn:net-plugin"),
			Diagnosis: fmt.Sprintf("the external net plugin failed (%s) and NCCL fell back to sockets: check the plugin's devices and libraries in the pod", texts(w))}
	}
	if f.ibDisabled() {
		return Verdict{Status: Fail, Cause: CauseIBDisabled, Evidence: f.evidence("env:NCCL_IB_DISABLE"),
			Diagnosis: fmt.Sprintf("NCCL_IB_DISABLE=%s in the environment: NCCL was told not to use IB/RoCE; remove it", f.Env["NCCL_IB_DISABLE"])}
	}
	if f.IBVerbsMissing {
		return Verdict{Status: Fail, Cause: CauseNoVerbs, Evidence: f.evidence("warn:libibverbs"),
			Diagnosis: "libibverbs missing in the image: NCCL could not load libibverbs.so.1; install rdma-core's libibverbs and the provider (libmlx5) in the container image"}
	}
	if f.IBNoDevice && len(f.WarningsOf(WarnDeviceOpen)) > 0 {
		return Verdict{Status: Fail, Cause: CauseDeviceOpen, Evidence: f.evidence("warn:device-open", "ib-nodev"),
			Diagnosis: "RDMA devices are listed but none could be opened (no /dev/infiniband device nodes for them in the pod): request the RDMA resource / check the device plugin"}
	}
	if f.IBNoDevice {
		return Verdict{Status: Fail, Cause: CauseNoDevice, Evidence: f.evidence("ib-nodev", "net:Socket"),
			Diagnosis: "no RDMA device in the pod (NET/IB : No device found): request the RDMA resource / check the device plugin"}
	}
	if len(f.WarningsOf(WarnMemlock)) > 0 {
		return Verdict{Status: Fail, Cause: CauseMemlock, Evidence: f.evidence("warn:memlock"), Diagnosis: memlockFix}
	}
	return Verdict{Status: Fail, Cause: CauseSocket, Evidence: f.evidence("net:Socket", "conn:Socket"),
		Diagnosis: "NCCL used sockets and the log does not say why (no NET/IB line): check NCCL_NET, NCCL_IB_HCA and that the RDMA device is in the pod"}
}

func (f LogFacts) noGDR(rdma []string) Verdict {
	counts := fmt.Sprintf("%d of %d NET connections over %s without GDRDMA", f.NetConnections-f.GDRConnections, f.NetConnections, strings.Join(rdma, ", "))
	for _, d := range f.GDRDisabled {
		if strings.Contains(d, "distance") {
			return Verdict{Status: Fail, Cause: CauseGDRTopology, Evidence: f.evidence("gdr-disabled", "nogdr-conn"),
				Diagnosis: counts + ": NCCL turned GPUDirect RDMA off because the GPU is too far from the NIC (" + d + "); put GPU and NIC under one PCIe switch or raise NCCL_NET_GDR_LEVEL"}
		}
	}
	if len(f.GDREnabled) > 0 && !slices.ContainsFunc(f.GDRDisabled, func(d string) bool { return strings.Contains(d, "for HCA") }) {
		// The NIC side works (peermem or DMA-BUF): NCCL chose host
		// memory for these connections. NCCL 2.30+ logs the distance
		// reason only at TRACE.
		return Verdict{Status: Fail, Cause: CauseGDRTopology, Evidence: f.evidence("gdr-enabled", "nogdr-conn"),
			Diagnosis: counts + ": NCCL reports GPU Direct RDMA enabled for the HCA (" + f.GDREnabled[0] + "), so nvidia_peermem or DMA-BUF works, and still did not use it: " +
				"the GPU is too far from the NIC for NCCL_NET_GDR_LEVEL (NCCL 2.30+ logs the distance only at TRACE) or NCCL_NET_GDR_READ is off for sends; " +
				"put GPU and NIC under one PCIe switch or raise NCCL_NET_GDR_LEVEL"}
	}
	d := counts + ": NCCL staged network traffic through host memory; " + gdrFix
	if f.DMABuf {
		d += " (the log says DMA-BUF is available on the GPU)"
	}
	return Verdict{Status: Fail, Cause: CauseNoGPUDirect, Evidence: f.evidence("gdr-disabled", "nogdr-conn"), Diagnosis: d}
}

func (f LogFacts) initFailed() Verdict {
	if w := f.WarningsOf(WarnMemlock); len(w) > 0 {
		return Verdict{Status: Fail, Cause: CauseMemlock, Evidence: f.evidence("warn:memlock"),
			Diagnosis: fmt.Sprintf("%s (%s)", memlockFix, w[0].Text)}
	}
	for _, k := range []WarnKind{WarnVerbs, WarnCUDA} {
		if w := f.WarningsOf(k); len(w) > 0 {
			return Verdict{Status: Fail, Cause: CauseInitFailed, Evidence: f.evidence("warn:" + string(k)),
				Diagnosis: "NCCL did not complete init: " + w[0].Text}
		}
	}
	return Verdict{Status: Fail, Cause: CauseInitFailed, Diagnosis: "NCCL did not complete init"}
}

// networks are the network names the log shows in use, from "Using
// network" and from the connections, sorted.
func (f LogFacts) networks() []string {
	var out []string
	for n := range f.Networks {
		out = append(out, n)
	}
	for n := range f.NetConnectionsByNet {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func (f LogFacts) ranksReporting() int {
	n := 0
	for _, c := range f.Networks {
		n += c
	}
	return n
}

func (f LogFacts) ibDisabled() bool {
	v, ok := f.Env["NCCL_IB_DISABLE"]
	return ok && v != "0"
}

func (f LogFacts) summary(nets []string) string {
	var b strings.Builder
	if len(nets) == 0 {
		b.WriteString("NCCL used no network")
	} else {
		b.WriteString("NCCL used " + strings.Join(nets, ", "))
	}
	if len(f.IBDevices) > 0 {
		var devs []string
		for _, d := range f.IBDevices {
			devs = append(devs, fmt.Sprintf("%s:%d/%s", d.Name, d.Port, d.LinkLayer))
		}
		b.WriteString(" (" + strings.Join(devs, " ") + ")")
	}
	if f.NetConnections > 0 {
		fmt.Fprintf(&b, "; %d NET connections on %d channels, %d with GDRDMA", f.NetConnections, len(f.NetChannels), f.GDRConnections)
	}
	if w := f.WarningsOf(WarnDeviceOpen); len(w) > 0 {
		fmt.Fprintf(&b, "; %d device-open warnings (%s), NCCL used the devices it could open", len(w), w[0].Text)
	}
	if f.InitComplete == 0 {
		b.WriteString("; no Init COMPLETE line in the log")
	}
	return b.String()
}

func (f LogFacts) evidence(keys ...string) []string {
	var out []string
	for _, k := range keys {
		if l, ok := f.first[k]; ok && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

func texts(ws []Warning) string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Text
	}
	return strings.Join(out, "; ")
}
