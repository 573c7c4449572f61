package nccl

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// LogFacts is what an NCCL_DEBUG=INFO log says about how NCCL connected
// the ranks. A log usually interleaves every rank of a job; the facts are
// summed over all of them. Line formats are those of NVIDIA/nccl from 2.4
// to 2.30 (the field comments name the source lines they read).
type LogFacts struct {
	// Lines counts the NCCL lines read (INFO, WARN and the bare
	// "NCCL version" line); 0 means the text was no NCCL log at all.
	Lines int
	// Version is the first "NCCL version 2.21.5+cuda12.4" (init.cc
	// showVersion), "" if the log has none.
	Version string
	// Networks counts the "Using network X" lines (init.cc) per network:
	// "IB" (the internal verbs transport, IB and RoCE alike), "Socket", or
	// an external plugin's name ("IBext_v8", "AWS Libfabric",
	// "GPUDirectTCPX_v7"). Every communicator prints one (init.cc
	// commAlloc), whatever its node count: a split communicator prints its
	// own, so the counts are communicators, about one per rank.
	Networks map[string]int
	Plugin   NetPlugin
	// IBDevices are the ports of the "NET/IB : Using [0]mlx5_0:1/IB
	// [1]mlx5_1:1/RoCE [RO]; OOB eth0:..." lines (net_ib init: only ACTIVE
	// ports with an IB or Ethernet link layer, after NCCL_IB_HCA), distinct
	// by name and port.
	IBDevices []IBDevice
	// IBNoDevice is "NET/IB : No device found." (net_ib init: no active
	// port was usable).
	IBNoDevice bool
	// SocketIfaces are the interfaces of "NET/Socket : Using
	// [0]eth0:10.0.0.1<0>" (net_socket.cc), distinct. Before NCCL 2.7 every
	// rank printed this line even when it then used IB; Networks and the
	// connections are what tell the transport.
	SocketIfaces []string
	// IBVerbsMissing is "Failed to open libibverbs.so[.1]" (INFO since
	// 2.11, WARN before) or "Count not open libibverbs.so.1" (2.30+): NCCL
	// could not load libibverbs, so its IB transport is off.
	IBVerbsMissing bool
	// Env holds the "NCCL_X set by environment to Y." and "NCCL_X set to Y"
	// lines (param.cc, socket.cc, net_ib): the variables NCCL read.
	Env map[string]string

	// NetConnections counts the "Channel 00/0 : 0[0] -> 1[0] [send] via
	// NET/IB/0/GDRDMA" lines (transport/net.cc; "Channel 00 :" before 2.12
	// and "Ring 00 :" before 2.5): one per direction, channel and peer
	// that crosses the network. GDRConnections counts those with /GDRDMA:
	// the NIC reads or writes GPU memory directly (GPUDirect RDMA). ByNet
	// splits NetConnections by the network name after "NET/".
	NetConnections, GDRConnections int
	NetConnectionsByNet            map[string]int
	// NetChannels and GDRChannels are the distinct channel numbers with a
	// NET connection, and with a GDRDMA one.
	NetChannels, GDRChannels []int
	// P2PConnections counts connections that stayed inside a node
	// ("via P2P/IPC", "via P2P/CUMEM/read", "via SHM/direct/direct").
	P2PConnections int
	// GDRDisabled are the distinct "GPU Direct RDMA Disabled for ..."
	// lines: "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no
	// module)" (2.12: no nv_peer_mem/nvidia_peermem), "NET/IB : GPU Direct
	// RDMA Disabled for HCA 0 'mlx5_0'" (2.18+: neither peermem nor
	// DMA-BUF), "... for GPU 2[2] / HCA 0 (distance 3 >= 2)" (the GPU is
	// too far from the NIC for NCCL_NET_GDR_LEVEL).
	GDRDisabled []string
	// GDREnabled are the distinct "NET/IB : GPU Direct RDMA Enabled for
	// HCA 0 'mlx5_0'" lines (graph/topo.cc, NET subsystem): the NIC side of
	// GPUDirect (nvidia_peermem or DMA-BUF) works; a connection without
	// GDRDMA beside it was NCCL's choice (distance, NCCL_NET_GDR_LEVEL or
	// _READ), not a missing module.
	GDREnabled []string
	// DMABuf is "DMA-BUF is available on GPU device N" (init.cc, 2.18+).
	DMABuf bool

	// Channels is the number of rings NCCL built: the NN of the ring
	// listings "Channel 00/NN :    0   1" (rings.cc; rank 0 prints them),
	// or of "N coll channels, ..." (2.9+), whichever is larger.
	Channels int
	Rings    []string // the distinct rank orders of the ring listings
	Trees    []string // the distinct "Trees [0] 1/-1/-1->0->-1 ..." bodies
	// NRanks is the communicator size from the "comm 0x... rank R nranks
	// N ..." lines (Init START/COMPLETE, Destroy COMPLETE, Init timings).
	NRanks int
	// NNodes is the largest node count of the "comm 0x... rank R nRanks N
	// nNodes M localRanks ..." lines (init.cc, 2.12+); 0 when no line has
	// one. "Using network IB" is printed per communicator whatever its
	// node count, so only NNodes > 1 says that NCCL had a network to use.
	NNodes int
	// InitComplete counts "... - Init COMPLETE" lines: ranks whose
	// communicator finished ncclCommInitRank.
	InitComplete int
	Warnings     []Warning

	first map[string]string // the first log line behind a fact, for Verdict.Evidence
}

// NetPlugin is what the log says of the external net plugin.
type NetPlugin struct {
	// Name and APIVersion of "NET/Plugin: Loaded net plugin NCCL RDMA
	// Plugin (v5)" (plugin/net_v*.cc, net.cc before 2.20).
	Name, APIVersion string
	// Path of "Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
	// (printed by the nccl-rdma-sharp plugin), Transport of its "P2P plugin IBext".
	Path, Transport string
	// Internal is set by "NET/Plugin : No plugin found (libnccl-net.so),
	// using internal implementation" and "NET/Plugin: Using internal
	// network plugin." (no libnccl-net.so was loaded).
	Internal bool
}

// IBDevice is one port of the "NET/IB : Using" line.
type IBDevice struct {
	Index     int    // NCCL's device index, the N of "NET/IB/N" in connections
	Name      string // "mlx5_0", "mlx5_bond_0", "rocep1s0f0"
	Port      int
	LinkLayer string // "IB" or "RoCE"
	// Extra is what follows the link layer ("SHARP" for "/IB/SHARP",
	// printed by the nccl-rdma-sharp plugin).
	Extra string
}

// WarnKind classifies a problem line.
type WarnKind string

const (
	// WarnMemlock: memory registration or queue creation failed
	// ("Call to ibv_reg_mr failed", "ibv_create_qp", "ibv_create_cq", or
	// "Cannot allocate memory"), which NCCL's troubleshooting guide
	// (docs/userguide/source/troubleshooting/networking_troubleshooting.rst)
	// attributes to the locked-memory limit.
	WarnMemlock WarnKind = "memlock"
	// WarnDeviceOpen: "Call to ibv_open_device failed", "NET/IB : Unable
	// to open device mlx5_59": a device is listed but its device node is not
	// usable (in a pod: not one the device plugin mounted).
	WarnDeviceOpen WarnKind = "device-open"
	WarnLibibverbs WarnKind = "libibverbs" // libibverbs.so could not be loaded
	WarnVerbs      WarnKind = "verbs"      // another failed verbs call
	// WarnPlugin: an external net plugin failed ("NET/OFI aws-ofi-nccl
	// initialization failed", "Failed to initialize NET plugin X", and
	// since 2.2x "NET/Plugin: libnccl-net.so: <dlerror>" for a plugin file
	// that will not load, "External network plugin X is unsupported").
	WarnPlugin WarnKind = "net-plugin"
	WarnCUDA   WarnKind = "cuda" // "Cuda failure 'initialization error'"
	// WarnCUDAIgnored: an INFO "Cuda failure" (include/checks.h
	// CUDACHECKIGNORE, cudawrap.h CUCHECKIGNORE: "report failure but clear
	// error and continue"), kept as evidence, never a failed init.
	WarnCUDAIgnored WarnKind = "cuda-ignored"
	WarnOther       WarnKind = "other"
)

// Warning is one distinct problem line.
type Warning struct {
	Kind  WarnKind
	Text  string // the message after "NCCL WARN " (or "NCCL INFO ")
	Count int    // how many times it appeared
}

var (
	logMarkRE   = regexp.MustCompile(`\bNCCL (INFO|WARN) ?`)
	versionRE   = regexp.MustCompile(`NCCL version (\S+)`)
	usingNetRE  = regexp.MustCompile(`^Using network (.+?)\s*$`)
	ibUsingRE   = regexp.MustCompile(`^NET/IB ?: Using(.*)$`)
	ibDevRE     = regexp.MustCompile(`\[(\d+)\]([^\s:\[\]]+):(\d+)(?::\d*)*/([A-Za-z]+)((?:/[A-Za-z0-9_]+)*)`)
	ibNoDevRE   = regexp.MustCompile(`^NET/IB ?: No device found|^Net/IB: call to devices\(\) returned 0 devices`)
	sockUsingRE = regexp.MustCompile(`^NET/Socket ?: Using(.*)$`)
	sockIfRE    = regexp.MustCompile(`\[\d+\](\S+)`)
	// "Failed to open libibverbs.so[.1]" (up to 2.29) is printed once both
	// names failed; 2.30 prints "Count not open <lib>" per attempt, so only
	// the last one, libibverbs.so.1, means the library is missing.
	// 2.30 prints "Count not open X" for each library it tries
	// (NCCL_IBVERBS_LIB, libibverbs.so, libibverbs.so.1): only the last
	// one failing means no libibverbs.
	verbsLibRE   = regexp.MustCompile(`Failed to open libibverbs|Count not open libibverbs\.so\.1\s*$`)
	envRE        = regexp.MustCompile(`^(NCCL_[A-Z0-9_]+) set (?:by environment )?to (.*?)\.?\s*$`)
	pluginLoadRE = regexp.MustCompile(`^NET/Plugin ?: Loaded net plugin (.+) \((v\d+)\)`)
	// "Could not find: libnccl-net.so" is NCCL 2.28's wording for "no
	// external plugin": the internal transports are used.
	pluginIntRE  = regexp.MustCompile(`^NET/Plugin ?: .*(?:[Uu]sing internal|No plugin found|Could not find: ?libnccl-net)`)
	pluginPathRE = regexp.MustCompile(`^Plugin Path : (\S+)`)
	p2pPluginRE  = regexp.MustCompile(`^P2P plugin (\S+)`)
	connRE       = regexp.MustCompile(`^(?:Channel|Ring) (\d+)(?:/\d+)? : .*? via (.+?)\s*$`)
	netConnRE    = regexp.MustCompile(`^NET/(.+?)/(\d+)(?:\(\d+\))?(/GDRDMA)?`)
	// rings.cc prints a listing into 128 bytes and ends a cut one "...".
	ringListRE   = regexp.MustCompile(`^Channel (\d+)(?:/(\d+))? :((?:\s+\d+)+(?:\s*\.\.\.)?)\s*$`)
	collChanRE   = regexp.MustCompile(`^(\d+) coll channels`)
	treesRE      = regexp.MustCompile(`^Trees\s*(.*?)\s*$`)
	nnodesRE     = regexp.MustCompile(`\bcomm 0x[0-9a-f]+ rank \d+ nRanks \d+ nNodes (\d+)\b`)
	nranksRE     = regexp.MustCompile(`\bcomm 0x[0-9a-f]+ rank \d+ n[Rr]anks (\d+)\b|\brank \d+ nranks (\d+) total\b`)
	memlockRE    = regexp.MustCompile(`Call to (?:ibv_reg_mr\w*|ibv_create_qp|ibv_create_cq) failed|Cannot allocate memory`)
	openDevRE    = regexp.MustCompile(`ibv_open_device failed|Unable to open device`)
	verbsCallRE  = regexp.MustCompile(`Call to ibv_\w+ failed`)
	pluginFailRE = regexp.MustCompile(`^NET/OFI .*(?:failed|[Cc]ouldn't)|Failed to initialize (?:any )?NET plugin|` +
		`^NET/Plugin ?: [^\s=:]+\.so[^\s:]*: |^External network plugin .* is unsupported`)
	// Since NCCL 2.2x the internal transports are "NET plugins" too: IB
	// failing to initialize (no device: an INFO line before falling back)
	// is no external plugin's failure; the IB lines say why.
	internalNetRE = regexp.MustCompile(`^Failed to initialize NET plugin (?:IB|Socket)\s*$`)
)

// ParseNCCLLog reads an NCCL_DEBUG=INFO log (or any text with NCCL lines in
// it: nccl-tests output, a pod log with mpirun tags, a timestamped log
// shipper's lines). Lines that are not NCCL's are skipped; the only error
// is the reader's.
func ParseNCCLLog(r io.Reader) (LogFacts, error) {
	f := LogFacts{
		Networks:            map[string]int{},
		NetConnectionsByNet: map[string]int{},
		Env:                 map[string]string{},
		first:               map[string]string{},
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	n := 0
	for sc.Scan() {
		n++
		f.line(strings.TrimRight(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return f, fmt.Errorf("nccl log after line %d: %w", n, err)
	}
	slices.Sort(f.NetChannels)
	slices.Sort(f.GDRChannels)
	return f, nil
}

func (f *LogFacts) note(key, line string) {
	if _, ok := f.first[key]; !ok {
		f.first[key] = strings.TrimSpace(line)
	}
}

func (f *LogFacts) line(line string) {
	loc := logMarkRE.FindStringSubmatchIndex(line)
	if loc == nil {
		// "NCCL version 2.10.3+cuda11.0" is printed bare at the VERSION level.
		if m := versionRE.FindStringSubmatch(line); m != nil && strings.HasPrefix(strings.TrimSpace(line), "NCCL version") {
			f.Lines++
			if f.Version == "" {
				f.Version = m[1]
			}
		}
		return
	}
	f.Lines++
	level := line[loc[2]:loc[3]]
	msg := strings.TrimSpace(line[loc[1]:])
	if level == "WARN" {
		f.warn(msg, line)
		return
	}
	f.info(msg, line)
}

func (f *LogFacts) warn(msg, line string) {
	kind := WarnOther
	switch {
	case verbsLibRE.MatchString(msg):
		kind = WarnLibibverbs
		f.IBVerbsMissing = true
	case memlockRE.MatchString(msg):
		kind = WarnMemlock
	case openDevRE.MatchString(msg):
		kind = WarnDeviceOpen
	case verbsCallRE.MatchString(msg):
		kind = WarnVerbs
	case pluginFailRE.MatchString(msg) && !internalNetRE.MatchString(msg):
		kind = WarnPlugin
	case strings.Contains(msg, "Cuda failure"):
		kind = WarnCUDA
	}
	f.addWarning(kind, msg, line)
}

func (f *LogFacts) addWarning(kind WarnKind, msg, line string) {
	f.note("warn:"+string(kind), line)
	for i := range f.Warnings {
		if f.Warnings[i].Text == msg {
			f.Warnings[i].Count++
			return
		}
	}
	f.Warnings = append(f.Warnings, Warning{Kind: kind, Text: msg, Count: 1})
}

func (f *LogFacts) info(msg, line string) {
	switch {
	case strings.HasPrefix(msg, "NCCL version "):
		if f.Version == "" {
			f.Version = strings.Fields(msg)[2]
		}
	case usingNetRE.MatchString(msg):
		name := usingNetRE.FindStringSubmatch(msg)[1]
		f.Networks[name]++
		f.note("net:"+name, line)
	case ibUsingRE.MatchString(msg):
		f.note("ib-using", line)
		for _, m := range ibDevRE.FindAllStringSubmatch(ibUsingRE.FindStringSubmatch(msg)[1], -1) {
			d := IBDevice{Name: m[2], LinkLayer: m[4], Extra: strings.TrimPrefix(m[5], "/")}
			d.Index, _ = strconv.Atoi(m[1])
			d.Port, _ = strconv.Atoi(m[3])
			if !slices.ContainsFunc(f.IBDevices, func(e IBDevice) bool { return e.Name == d.Name && e.Port == d.Port }) {
				f.IBDevices = append(f.IBDevices, d)
			}
		}
	case ibNoDevRE.MatchString(msg):
		f.IBNoDevice = true
		f.note("ib-nodev", line)
	case sockUsingRE.MatchString(msg):
		for _, m := range sockIfRE.FindAllStringSubmatch(sockUsingRE.FindStringSubmatch(msg)[1], -1) {
			if !slices.Contains(f.SocketIfaces, m[1]) {
				f.SocketIfaces = append(f.SocketIfaces, m[1])
			}
		}
	case verbsLibRE.MatchString(msg):
		f.IBVerbsMissing = true
		f.addWarning(WarnLibibverbs, msg, line)
	case envRE.MatchString(msg):
		m := envRE.FindStringSubmatch(msg)
		f.Env[m[1]] = m[2]
		f.note("env:"+m[1], line)
	case pluginLoadRE.MatchString(msg):
		m := pluginLoadRE.FindStringSubmatch(msg)
		f.Plugin.Name, f.Plugin.APIVersion = m[1], m[2]
	case pluginIntRE.MatchString(msg):
		f.Plugin.Internal = true
	case pluginPathRE.MatchString(msg):
		f.Plugin.Path = pluginPathRE.FindStringSubmatch(msg)[1]
	case p2pPluginRE.MatchString(msg):
		f.Plugin.Transport = p2pPluginRE.FindStringSubmatch(msg)[1]
	case strings.Contains(msg, "GPU Direct RDMA Disabled"):
		if !slices.Contains(f.GDRDisabled, msg) {
			f.GDRDisabled = append(f.GDRDisabled, msg)
		}
		f.note("gdr-disabled", line)
	case strings.Contains(msg, "GPU Direct RDMA Enabled for HCA"):
		if !slices.Contains(f.GDREnabled, msg) {
			f.GDREnabled = append(f.GDREnabled, msg)
		}
		f.note("gdr-enabled", line)
	case strings.HasPrefix(msg, "DMA-BUF is available"):
		f.DMABuf = true
	case ringListRE.MatchString(msg):
		m := ringListRE.FindStringSubmatch(msg)
		id, _ := strconv.Atoi(m[1])
		total := id + 1
		if m[2] != "" {
			total, _ = strconv.Atoi(m[2])
		}
		f.Channels = max(f.Channels, total)
		ring := strings.Join(strings.Fields(m[3]), " ")
		if !slices.Contains(f.Rings, ring) {
			f.Rings = append(f.Rings, ring)
		}
	case connRE.MatchString(msg):
		m := connRE.FindStringSubmatch(msg)
		ch, _ := strconv.Atoi(m[1])
		f.connection(ch, m[2], line)
	case collChanRE.MatchString(msg):
		c, _ := strconv.Atoi(collChanRE.FindStringSubmatch(msg)[1])
		f.Channels = max(f.Channels, c)
	case treesRE.MatchString(msg):
		t := treesRE.FindStringSubmatch(msg)[1]
		if !slices.Contains(f.Trees, t) {
			f.Trees = append(f.Trees, t)
		}
	case strings.Contains(msg, "Cuda failure"):
		f.addWarning(WarnCUDAIgnored, msg, line)
	case pluginFailRE.MatchString(msg) && !internalNetRE.MatchString(msg):
		f.addWarning(WarnPlugin, msg, line)
	}
	if m := nnodesRE.FindStringSubmatch(msg); m != nil {
		v, _ := strconv.Atoi(m[1])
		f.NNodes = max(f.NNodes, v)
		f.note("nnodes", line)
	}
	if m := nranksRE.FindStringSubmatch(msg); m != nil {
		v, _ := strconv.Atoi(m[1] + m[2])
		f.NRanks = max(f.NRanks, v)
	}
	if strings.Contains(msg, "Init COMPLETE") {
		f.InitComplete++
		f.note("init", line)
	}
}

func (f *LogFacts) connection(ch int, via, line string) {
	m := netConnRE.FindStringSubmatch(via)
	if m == nil {
		if strings.HasPrefix(via, "P2P/") || strings.HasPrefix(via, "SHM/") || strings.HasPrefix(via, "direct shared memory") {
			f.P2PConnections++
		}
		return
	}
	f.NetConnections++
	f.NetConnectionsByNet[m[1]]++
	f.note("conn:"+m[1], line)
	if !slices.Contains(f.NetChannels, ch) {
		f.NetChannels = append(f.NetChannels, ch)
	}
	if m[3] != "" {
		f.GDRConnections++
		f.note("gdr-conn", line)
		if !slices.Contains(f.GDRChannels, ch) {
			f.GDRChannels = append(f.GDRChannels, ch)
		}
	} else {
		f.note("nogdr-conn", line)
	}
}

// WarningsOf returns the warnings of one kind.
func (f LogFacts) WarningsOf(kind WarnKind) []Warning {
	var out []Warning
	for _, w := range f.Warnings {
		if w.Kind == kind {
			out = append(out, w)
		}
	}
	return out
}
