package nccl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func parseLogFile(t *testing.T, name string) LogFacts {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	facts, err := ParseNCCLLog(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return facts
}

func parseLogString(t *testing.T, s string) LogFacts {
	t.Helper()
	f, err := ParseNCCLLog(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLogIBWithGDRDMA(t *testing.T) {
	f := parseLogFile(t, "log_ib_gdrdma_sglang4289.txt")
	if f.Version != "2.21.5+cuda12.4" || !f.Plugin.Internal || f.Plugin.Name != "" {
		t.Errorf("version %q plugin %+v", f.Version, f.Plugin)
	}
	if f.NetConnections != 5 || f.GDRConnections != 5 || f.NetConnectionsByNet["IB"] != 5 || f.P2PConnections != 4 {
		t.Errorf("connections net %d gdr %d by %v p2p %d", f.NetConnections, f.GDRConnections, f.NetConnectionsByNet, f.P2PConnections)
	}
	if !reflect.DeepEqual(f.NetChannels, []int{0, 1}) || !reflect.DeepEqual(f.GDRChannels, []int{0, 1}) {
		t.Errorf("channels %v gdr %v", f.NetChannels, f.GDRChannels)
	}
}

func TestLogIBWithoutGDRDMA(t *testing.T) {
	f := parseLogFile(t, "log_ib_nogdr_aks30.txt")
	if f.NetConnections != 13 || f.GDRConnections != 0 || f.P2PConnections != 2 || f.NRanks != 16 || f.InitComplete != 0 {
		t.Errorf("aks: net %d gdr %d p2p %d nranks %d init %d", f.NetConnections, f.GDRConnections, f.P2PConnections, f.NRanks, f.InitComplete)
	}
	if !reflect.DeepEqual(f.NetChannels, []int{3, 5, 7, 9, 11, 12, 13, 14, 15}) || len(f.GDRChannels) != 0 {
		t.Errorf("aks channels %v gdr %v", f.NetChannels, f.GDRChannels)
	}

	f = parseLogFile(t, "log_ib_initcomplete_1412.txt")
	if f.NetConnections != 4 || f.GDRConnections != 0 || f.P2PConnections != 2 || f.NRanks != 16 || f.InitComplete != 5 {
		t.Errorf("1412: net %d gdr %d p2p %d nranks %d init %d", f.NetConnections, f.GDRConnections, f.P2PConnections, f.NRanks, f.InitComplete)
	}
	if !reflect.DeepEqual(f.NetChannels, []int{3, 7}) {
		t.Errorf("1412 channels %v", f.NetChannels)
	}

	// NCCL 2.4-era "Ring 00 : 6 -> 2 [receive] via NET/IB/0" lines and the
	// distance-based GDR decision.
	f = parseLogFile(t, "log_gdr_distance_nvpeermem56.txt")
	if f.NetConnections != 4 || f.GDRConnections != 0 || f.P2PConnections != 6 || len(f.GDRDisabled) != 2 {
		t.Errorf("nv_peer_memory#56: net %d gdr %d p2p %d disabled %q", f.NetConnections, f.GDRConnections, f.P2PConnections, f.GDRDisabled)
	}
}

func TestLogSocketFallbacks(t *testing.T) {
	f := parseLogFile(t, "log_socket_nodevice_941.txt")
	wantPlugin := NetPlugin{Name: "NCCL RDMA Plugin", APIVersion: "v5", Path: "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so", Transport: "IBext"}
	if f.Version != "2.17.1+cuda12.1" || f.Plugin != wantPlugin || !f.IBNoDevice || f.Networks["Socket"] != 1 || len(f.IBDevices) != 0 {
		t.Errorf("941: %+v", f)
	}
	if len(f.SocketIfaces) != 5 || f.SocketIfaces[3] != "bond0:10.220.178.201<0>" {
		t.Errorf("941 socket interfaces %q", f.SocketIfaces)
	}
	if len(f.Warnings) != 0 {
		t.Errorf("941: plugin symbol lookups taken for warnings: %+v", f.Warnings)
	}

	// NCCL 2.28.3+cuda13.0, one rank on an H200 without an RDMA device
	// (the device tool's machine, 2026-11-29). The log is cut after
	// "Channel 51/64": it is what reached stdout before the probe exited
	// (C's buffer is not flushed at a Go exit; see workloads/cstdout).
	f = parseLogFile(t, "log_socket_1rank_h200_device.txt")
	if f.Version != "2.28.3+cuda13.0" || !f.Plugin.Internal || !f.IBNoDevice || f.Networks["Socket"] != 1 || f.NRanks != 1 || f.Channels != 64 {
		t.Errorf("h200: %+v", f)
	}
	if len(f.Warnings) != 0 {
		t.Errorf("h200: the internal IB transport's INFO \"Failed to initialize NET plugin IB\" taken for a warning: %+v", f.Warnings)
	}
	if !reflect.DeepEqual(f.SocketIfaces, []string{"eth0:192.0.2.2<0>"}) || len(f.GDRDisabled) != 1 {
		t.Errorf("h200 socket interfaces %q, GDR disabled %q", f.SocketIfaces, f.GDRDisabled)
	}

	// net_ib (2.30): one "Count not open X" per library tried; a versioned
	// NCCL_IBVERBS_LIB that fails before libibverbs.so.1 loads is not a
	// missing libibverbs.
	f = parseLogString(t, `g:1:1 [0] NCCL INFO NCCL_IBVERBS_LIB set by environment to libibverbs.so.1.14.0
g:1:1 [0] NCCL INFO Count not open libibverbs.so.1.14.0
g:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>
`)
	if f.IBVerbsMissing || len(f.IBDevices) != 1 {
		t.Errorf("versioned NCCL_IBVERBS_LIB: libibverbs taken for missing: %+v", f)
	}
	f = parseLogString(t, `g:1:1 [0] NCCL INFO Count not open libibverbs.so.1
`)
	if !f.IBVerbsMissing {
		t.Errorf("2.30 \"Count not open libibverbs.so.1\" not read as missing libibverbs")
	}

	f = parseLogFile(t, "log_socket_noverbs_1410.txt")
	if !f.IBVerbsMissing || f.Networks["Socket"] != 2 || !reflect.DeepEqual(f.SocketIfaces, []string{"eth0:10.177.137.15<0>"}) {
		t.Errorf("1410: %+v", f)
	}
	if w := f.WarningsOf(WarnLibibverbs); len(w) != 1 || w[0].Count != 3 {
		t.Errorf("1410 warnings %+v", f.Warnings)
	}

	f = parseLogFile(t, "log_socket_ibdisable_188.txt")
	if f.Env["NCCL_IB_DISABLE"] != "1" || f.Networks["Socket"] != 2 || !f.Plugin.Internal {
		t.Errorf("188: %+v", f)
	}

	f = parseLogFile(t, "log_ofi_failed_715.txt")
	if f.Env["NCCL_IB_DISABLE"] != "1" || f.Env["NCCL_SOCKET_IFNAME"] != "eth0" || f.Networks["Socket"] != 1 || len(f.WarningsOf(WarnPlugin)) != 2 {
		t.Errorf("715: %+v", f)
	}
	// libfabric's own "Cannot allocate memory" is not an NCCL line.
	if len(f.WarningsOf(WarnMemlock)) != 0 || f.Lines != 7 {
		t.Errorf("715: %d NCCL lines, warnings %+v", f.Lines, f.Warnings)
	}

	// NCCL_DEBUG=WARN output inside an nccl-tests table (2.9.6: WARN level).
	f = parseLogFile(t, "broadcast_2ranks_82.txt")
	if !f.IBVerbsMissing || f.Version != "2.9.6+cuda11.2" || f.Lines != 3 {
		t.Errorf("82: %+v", f)
	}
}

func TestLogDevicesPluginsRingsTrees(t *testing.T) {
	f := parseLogFile(t, "log_roce_rings_trees_133.txt")
	if f.Version != "2.10.3+cuda11.0" || f.Networks["IB"] != 2 || f.Env["NCCL_IB_GID_INDEX"] != "3" {
		t.Errorf("133: %+v", f)
	}
	if !reflect.DeepEqual(f.IBDevices, []IBDevice{{Index: 0, Name: "mlx5_6", Port: 1, LinkLayer: "RoCE"}}) {
		t.Errorf("133 devices %+v", f.IBDevices)
	}
	if f.Channels != 2 || !reflect.DeepEqual(f.Rings, []string{"0 7 6 5 12 11 10 9 8 15 14 13 4 3 2 1"}) {
		t.Errorf("133 channels %d rings %q", f.Channels, f.Rings)
	}
	if len(f.Trees) != 4 || f.Trees[2] != "[0] 13/-1/-1->12->4 [1] 13/4/-1->12->-1" {
		t.Errorf("133 trees %q", f.Trees)
	}

	f = parseLogFile(t, "log_plugin_ibext_1538.txt")
	if f.Networks["IBext_v8"] != 5 || len(f.IBDevices) != 8 || f.IBDevices[7] != (IBDevice{Index: 7, Name: "mlx5_7", Port: 1, LinkLayer: "RoCE"}) {
		t.Errorf("1538: networks %v devices %+v", f.Networks, f.IBDevices)
	}

	f = parseLogFile(t, "log_ib_opendevice_warn_imagereward65.txt")
	if f.Networks["IB"] != 2 || len(f.IBDevices) != 2 || f.IBDevices[1].Name != "mlx5_18" {
		t.Errorf("ImageReward#65: %+v", f)
	}
	if w := f.WarningsOf(WarnDeviceOpen); len(w) != 3 || w[0].Text != "Call to ibv_open_device failed" || w[0].Count != 2 {
		t.Errorf("ImageReward#65 warnings %+v", f.Warnings)
	}

	f = parseLogFile(t, "log_single_node_1706.txt")
	if f.Channels != 4 || f.NRanks != 2 || f.InitComplete != 1 || f.NetConnections != 0 || len(f.Networks) != 0 || f.Plugin.Internal {
		t.Errorf("1706: %+v", f)
	}

	f = parseLogFile(t, "log_memlock_regmr_206.txt")
	if w := f.WarningsOf(WarnMemlock); len(w) != 1 || w[0].Text != "Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory" {
		t.Errorf("206 warnings %+v", f.Warnings)
	}
}

func TestLogWarningKinds(t *testing.T) {
	cases := map[string]WarnKind{
		// Real lines (issue titles): NVIDIA/nccl#1191, NVIDIA/nccl#1029,
		// NVIDIA/nccl#380, NVIDIA/nccl-tests#185; the others from logs above.
		"misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory":               WarnMemlock,
		"NCCL WARN Cuda failure 'initialization error'":                                                              WarnCUDA,
		"spark01:2683:2826 [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed":                           WarnMemlock,
		"misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable":               WarnVerbs,
		"x:1:2 [0] transport/net_ib.cc:149 NCCL WARN NET/IB : Unable to open device mlx5_59":                         WarnDeviceOpen,
		"v100-gpu-1:14926:14926 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]":                   WarnLibibverbs,
		"algo-1:17778:17848 [5] nccl_net_ofi_create_plugin:259 NCCL WARN NET/OFI aws-ofi-nccl initialization failed": WarnPlugin,
		// Synthetic: NCCL's docs quote these two as the memlock signature.
		"NCCL WARN Call to ibv_create_qp failed": WarnMemlock,
		"NCCL WARN Call to ibv_reg_mr failed":    WarnMemlock,
		// Synthetic: a WARN this package does not classify.
		"h:1:1 [0] NCCL WARN socketProgress: Connection closed by remote peer": WarnOther,
	}
	for line, want := range cases {
		f := parseLogString(t, line+"\n")
		if len(f.Warnings) != 1 || f.Warnings[0].Kind != want {
			t.Errorf("%q: warnings %+v, want kind %s", line, f.Warnings, want)
		}
	}
}

// Synthetic lines in today's formats (NVIDIA/nccl 2.30 source): rails and
// planes in NET/IB, PXN proxies and shared buffers in connections, nRanks in
// the comm line, DMA-BUF, the per-HCA GDR line, and 2.30's per-library
// "Count not open" lines.
func TestLogCurrentFormats(t *testing.T) {
	f := parseLogString(t, `h:1:2 [0] NCCL INFO NCCL version 2.30.7+cuda13.0
h:1:2 [0] NCCL INFO Count not open libibverbs.so
h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1:3/RoCE [2]mlx5_2:1::1/IB [3]mlx5_3_dma:1/IB [RO]; OOB eth0:10.0.0.1<0>
h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'
h:1:2 [0] NCCL INFO DMA-BUF is available on GPU device 0
h:1:2 [0] NCCL INFO Using network IB
h:1:2 [0] NCCL INFO comm 0x55d1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0
h:1:2 [0] NCCL INFO Channel 02/1 : 0[0] -> 9[1] [send] via NET/IB/1(1)/GDRDMA(PCI)/Shared
h:1:2 [0] NCCL INFO Channel 03/0 : 8[0] -> 0[0] [receive] via NET/IB/0
h:1:2 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] via SHM/direct/direct
h:1:2 [0] NCCL INFO 16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer
h:1:2 [0] NCCL INFO ncclCommInitRankConfig comm 0x55d1 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init COMPLETE
`)
	if f.Version != "2.30.7+cuda13.0" || f.IBVerbsMissing || !f.DMABuf || f.NRanks != 16 || f.InitComplete != 1 || f.Channels != 16 {
		t.Errorf("facts %+v", f)
	}
	want := []IBDevice{
		{0, "mlx5_0", 1, "IB", ""}, {1, "mlx5_1", 1, "RoCE", ""}, {2, "mlx5_2", 1, "IB", ""}, {3, "mlx5_3_dma", 1, "IB", ""},
	}
	if !reflect.DeepEqual(f.IBDevices, want) {
		t.Errorf("devices %+v", f.IBDevices)
	}
	if f.NetConnections != 2 || f.GDRConnections != 1 || f.P2PConnections != 1 || !reflect.DeepEqual(f.NetChannels, []int{2, 3}) || !reflect.DeepEqual(f.GDRChannels, []int{2}) {
		t.Errorf("connections %d/%d p2p %d channels %v %v", f.NetConnections, f.GDRConnections, f.P2PConnections, f.NetChannels, f.GDRChannels)
	}
	if len(f.GDRDisabled) != 1 {
		t.Errorf("GDR disabled %q", f.GDRDisabled)
	}
	if g := parseLogString(t, "h:1:2 [0] NCCL INFO Count not open libibverbs.so.1\n"); !g.IBVerbsMissing {
		t.Error("2.30's last failed attempt not taken for a missing libibverbs")
	}
	// The SHARP plugin's link-layer suffix (real line, NVIDIA/nccl-tests#294).
	g := parseLogString(t, "h100-4:739787:739914 [1] NCCL INFO NET/IB : Using [0]mlx5_1:1/IB/SHARP [1]mlx5_2:1/IB/SHARP [RO]; OOB ens7:172.27.32.104<0>\n")
	if len(g.IBDevices) != 2 || g.IBDevices[0].Extra != "SHARP" || g.IBDevices[1].LinkLayer != "IB" {
		t.Errorf("SHARP devices %+v", g.IBDevices)
	}
	if h := parseLogString(t, "no NCCL here\n# Avg bus bandwidth : 1\n"); h.Lines != 0 {
		t.Errorf("non-NCCL text counted %d NCCL lines", h.Lines)
	}
}

// graph/rings.cc prints a ring listing into 128 bytes and ends a cut one
// with "...": a large job's listing still counts its channels.
func TestLogRingListingCut(t *testing.T) {
	f := parseLogString(t, `g:1:1 [0] NCCL INFO Channel 00/16 :  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 ...
g:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 64 nNodes 8 localRanks 8 localRank 0 MNNVL 0
`)
	if f.Channels != 16 || len(f.Rings) != 1 || !strings.HasSuffix(f.Rings[0], "35 ...") || f.NNodes != 8 || f.NRanks != 64 {
		t.Errorf("cut ring listing: channels %d rings %q nodes %d ranks %d", f.Channels, f.Rings, f.NNodes, f.NRanks)
	}
}
