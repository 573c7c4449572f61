package nccl

import (
	"strings"
	"testing"
)

var (
	rdma = Expect{RDMA: true}
	gdr  = Expect{GPUDirect: true}
	none = Expect{}
)

// Judge on every real log of testdata/, for each expectation.
func TestJudgeRealLogs(t *testing.T) {
	type want struct {
		status Status
		cause  Cause
		says   string // a phrase the diagnosis must contain
	}
	cases := []struct {
		file string
		by   map[Expect]want
	}{
		{"log_ib_gdrdma_sglang4289.txt", map[Expect]want{
			rdma: {Pass, CauseOK, "5 NET connections on 2 channels, 5 with GDRDMA"},
			gdr:  {Pass, CauseOK, "NCCL used IB"},
		}},
		{"log_ib_nogdr_aks30.txt", map[Expect]want{
			rdma: {Pass, CauseOK, "0 with GDRDMA"},
			gdr:  {Fail, CauseNoGPUDirect, "nvidia_peermem"},
		}},
		{"log_ib_initcomplete_1412.txt", map[Expect]want{
			rdma: {Pass, CauseOK, "4 NET connections"},
			gdr:  {Fail, CauseNoGPUDirect, "4 of 4 NET connections over IB without GDRDMA"},
		}},
		{"log_gdr_distance_nvpeermem56.txt", map[Expect]want{
			rdma: {Pass, CauseOK, "NCCL used IB"},
			gdr:  {Fail, CauseGDRTopology, "NCCL_NET_GDR_LEVEL"},
		}},
		{"log_socket_nodevice_941.txt", map[Expect]want{
			rdma: {Fail, CauseNoDevice, "no RDMA device in the pod"},
			gdr:  {Fail, CauseNoDevice, "request the RDMA resource / check the device plugin"},
			none: {Pass, CauseOK, "NCCL used Socket"},
		}},
		// NCCL 2.28.3 on the device tool's H200 (no RDMA device): its
		// internal IB transport "failed to initialize" (an INFO line) is
		// no external plugin's failure, and the plugin lookup's "Could
		// not find" means the internal transports are used.
		{"log_socket_1rank_h200_device.txt", map[Expect]want{
			rdma: {Fail, CauseNoDevice, "no RDMA device in the pod"},
			none: {Pass, CauseOK, "NCCL used Socket"},
		}},
		{"log_socket_noverbs_1410.txt", map[Expect]want{
			rdma: {Fail, CauseNoVerbs, "libibverbs missing in the image"},
			none: {Pass, CauseOK, "Socket"},
		}},
		{"log_socket_ibdisable_188.txt", map[Expect]want{
			rdma: {Fail, CauseIBDisabled, "NCCL_IB_DISABLE=1"},
		}},
		{"log_ofi_failed_715.txt", map[Expect]want{
			rdma: {Fail, CausePluginFailed, "aws-ofi-nccl initialization failed"},
		}},
		{"log_memlock_regmr_206.txt", map[Expect]want{
			rdma: {Fail, CauseMemlock, "memlock too low: set IPC_LOCK / raise RLIMIT_MEMLOCK"},
			none: {Fail, CauseMemlock, "ibv_reg_mr_iova2"},
		}},
		{"log_ib_opendevice_warn_imagereward65.txt", map[Expect]want{
			rdma: {Pass, CauseOK, "mlx5_1:1/RoCE mlx5_18:1/RoCE"},
			gdr:  {Inconclusive, CauseNoConnections, "no NET connection lines"},
		}},
		{"log_plugin_ibext_1538.txt", map[Expect]want{
			rdma: {Pass, CauseOK, "NCCL used IBext_v8"},
			gdr:  {Inconclusive, CauseNoConnections, "IBext_v8"},
		}},
		{"log_roce_rings_trees_133.txt", map[Expect]want{
			rdma: {Pass, CauseOK, "mlx5_6:1/RoCE"},
		}},
		{"log_single_node_1706.txt", map[Expect]want{
			rdma: {Inconclusive, CauseNoNetwork, "no connection crossed the network"},
			none: {Pass, CauseOK, "NCCL used no network"},
		}},
		// NCCL_DEBUG=WARN only: no network line, but libibverbs failed to load.
		{"broadcast_2ranks_82.txt", map[Expect]want{
			rdma: {Fail, CauseNoVerbs, "libibverbs"},
		}},
	}
	for _, tc := range cases {
		f := parseLogFile(t, tc.file)
		for exp, w := range tc.by {
			v := Judge(f, exp)
			if v.Status != w.status || v.Cause != w.cause || !strings.Contains(v.Diagnosis, w.says) {
				t.Errorf("%s %+v: %s/%s %q; want %s/%s containing %q", tc.file, exp, v.Status, v.Cause, v.Diagnosis, w.status, w.cause, w.says)
			}
			if v.Status == Fail && len(v.Evidence) == 0 {
				t.Errorf("%s %+v: failure without evidence", tc.file, exp)
			}
		}
	}
}

func TestJudgeEvidenceIsTheLogLine(t *testing.T) {
	v := Judge(parseLogFile(t, "log_socket_ibdisable_188.txt"), rdma)
	if len(v.Evidence) != 1 || v.Evidence[0] != "user:852750:852802 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1." {
		t.Errorf("evidence %q", v.Evidence)
	}
	v = Judge(parseLogFile(t, "log_socket_nodevice_941.txt"), rdma)
	if len(v.Evidence) != 2 || !strings.HasSuffix(v.Evidence[0], "NET/IB : No device found.") || !strings.HasSuffix(v.Evidence[1], "Using network Socket") {
		t.Errorf("evidence %q", v.Evidence)
	}
}

// Real lines of NVIDIA/nccl#834 (NCCL 2.10.3): NCCL_IB_DISABLE=0 is not a
// disabled IB, and the 2.7-2.11 "Channel 01 :" connection format.
func TestJudgeIBDisableZero(t *testing.T) {
	f := parseLogString(t, `SH-IDC1-10-142-5-42:40544:40544 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.
SH-IDC1-10-142-5-42:40544:40544 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.142.205.42<0>
SH-IDC1-10-142-5-42:40544:40544 [0] NCCL INFO Using network IB
NCCL version 2.10.3+cuda11.3
SH-IDC1-10-142-5-42:40544:41400 [0] NCCL INFO Channel 01 : 11[71000] -> 0[1f000] [receive] via NET/IB/0/GDRDMA
SH-IDC1-10-142-5-42:40545:41409 [1] NCCL INFO Channel 01 : 1[25000] -> 10[6b000] [send] via NET/IB/0/GDRDMA
`)
	if f.Env["NCCL_IB_DISABLE"] != "0" || f.Version != "2.10.3+cuda11.3" {
		t.Fatalf("facts %+v", f)
	}
	if v := Judge(f, gdr); v.Status != Pass {
		t.Errorf("verdict %+v", v)
	}
}

// Synthetic logs for the branches no public log above covers.
func TestJudgeSyntheticBranches(t *testing.T) {
	cases := []struct {
		name   string
		log    string
		exp    Expect
		status Status
		cause  Cause
		says   string
	}{
		{"one rank of two fell back", `a:1:1 [0] NCCL INFO Using network IB
b:2:2 [0] NCCL INFO NET/IB : No device found.
b:2:2 [0] NCCL INFO Using network Socket
`, rdma, Fail, CauseNoDevice, "1 of 2 ranks used sockets"},
		{"devices listed but none opens", `h:1:1 [0] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed
h:1:1 [0] NCCL INFO NET/IB : No device found.
h:1:1 [0] NCCL INFO Using network Socket
`, rdma, Fail, CauseDeviceOpen, "none could be opened"},
		{"sockets, no reason in the log", `h:1:1 [0] NCCL INFO Using network Socket
`, rdma, Fail, CauseSocket, "does not say why"},
		{"socket connections without a network line", `h:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0
`, rdma, Fail, CauseSocket, "sockets"},
		{"IB chosen, registration fails", `h:1:1 [0] NCCL INFO Using network IB
h:1:1 [0] NCCL WARN Call to ibv_reg_mr failed
`, rdma, Fail, CauseMemlock, "RLIMIT_MEMLOCK"},
		{"GPUDirect-TCPX is not RDMA", `h:1:1 [0] NCCL INFO Using network GPUDirectTCPX_v7
`, rdma, Fail, CauseNotRDMA, "GPUDirectTCPX_v7"},
		{"an unknown plugin", `h:1:1 [0] NCCL INFO Using network FooNet
`, rdma, Inconclusive, CauseUnknownNet, "FooNet"},
		{"AWS Libfabric is RDMA", `h:1:1 [0] NCCL INFO Using network AWS Libfabric
h:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/AWS Libfabric/1/GDRDMA
`, gdr, Pass, CauseOK, "1 with GDRDMA"},
		{"GDRDMA on some connections only", `h:1:1 [0] NCCL INFO Using network IB
h:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
h:1:1 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/IB/1
`, gdr, Fail, CauseNoGPUDirect, "1 of 2 NET connections"},
		{"GDR disabled per HCA (2.18+ line), DMA-BUF on the GPU", `h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'
h:1:1 [0] NCCL INFO DMA-BUF is available on GPU device 0
h:1:1 [0] NCCL INFO Using network IB
h:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0
`, gdr, Fail, CauseNoGPUDirect, "DMA-BUF is available"},
		{"init failed on a CUDA error", `h:1:1 [0] NCCL WARN Cuda failure 'initialization error'
`, none, Fail, CauseInitFailed, "did not complete init"},
		{"no NCCL lines", "plain text\n", rdma, Inconclusive, CauseNoLog, "NCCL_DEBUG=INFO"},
		{"nothing expected, sockets", `h:1:1 [0] NCCL INFO Using network Socket
h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE
`, none, Pass, CauseOK, "NCCL used Socket"},
		{"names nothing", `h:1:1 [0] NCCL INFO cudaDriverVersion 12040
`, rdma, Inconclusive, CauseNoConnections, "names no network"},

		// Lines as NCCL 2.28-2.30 print them (format strings of
		// NVIDIA/nccl v2.28.3-1 and v2.30.7-1, src/ paths named).
		// plugin/plugin_open.cc: the plugin file is there but will not
		// load (a missing dependency): not "Could not find".
		{"the net plugin does not load (2.28+)", `g:1:1 [0] NCCL INFO NET/Plugin: libnccl-net.so: libfabric.so.1: cannot open shared object file: No such file or directory
g:1:1 [0] NCCL INFO NET/IB : No device found.
g:1:1 [0] NCCL INFO Failed to initialize NET plugin IB
g:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
g:1:1 [0] NCCL INFO Using network Socket
`, rdma, Fail, CausePluginFailed, "libfabric.so.1"},
		// plugin/net.cc: a plugin without an API version NCCL supports.
		{"the net plugin is unsupported (2.28+)", `g:1:1 [0] NCCL INFO External network plugin /opt/amazon/ofi-nccl/lib/libnccl-net.so is unsupported
g:1:1 [0] NCCL INFO Using network Socket
`, rdma, Fail, CausePluginFailed, "is unsupported"},
		// init.cc: "Using network IB" is printed per communicator,
		// whatever its node count; "comm ... nNodes 1" says nothing
		// crossed the network.
		{"IB chosen, one node (2.28+)", `g:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>
g:1:1 [0] NCCL INFO Using network IB
g:1:1 [0] NCCL INFO comm 0x55d0c0a1b2c0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0
g:1:1 [0] NCCL INFO ncclCommInitRank comm 0x55d0c0a1b2c0 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1234 - Init COMPLETE
g:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
`, rdma, Inconclusive, CauseNoNetwork, "one node"},
		{"IB chosen, two nodes, connections over IB", `g:1:1 [0] NCCL INFO Using network IB
g:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0
g:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
`, gdr, Pass, CauseOK, "1 with GDRDMA"},
		// include/checks.h CUDACHECKIGNORE: an INFO "Cuda failure" that
		// NCCL clears and goes on from is no failed init.
		{"a Cuda failure NCCL ignores (INFO)", `g:1:1 [0] NCCL INFO Using network Socket
g:1:1 [0] NCCL INFO transport/p2p.cc:1005 (p2pFree) Cuda failure 1 'invalid argument'
`, none, Pass, CauseOK, "NCCL used Socket"},
		// 2.30 graph/paths.cc: the distance reason is TRACE only; the NIC
		// side says "GPU Direct RDMA Enabled for HCA": peermem is not
		// what is missing.
		{"GDR enabled on the HCA, connections without it (2.30)", `g:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>
g:1:1 [0] NCCL INFO Using network IB
g:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'
g:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0
g:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0
`, gdr, Fail, CauseGDRTopology, "NCCL_NET_GDR_LEVEL"},
		// 2.29's wording of the distance line.
		{"GDR off for distance (2.29)", `g:1:1 [0] NCCL INFO Using network IB
g:1:1 [0] NCCL INFO GPU Direct RDMA Disabled for GPU/0-1b000 (rank 0) - NET/0-0 (distance 5 > 3)
g:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0
`, gdr, Fail, CauseGDRTopology, "distance 5 > 3"},
	}
	for _, tc := range cases {
		v := Judge(parseLogString(t, tc.log), tc.exp)
		if v.Status != tc.status || v.Cause != tc.cause || !strings.Contains(v.Diagnosis, tc.says) {
			t.Errorf("%s: %s/%s %q; want %s/%s containing %q", tc.name, v.Status, v.Cause, v.Diagnosis, tc.status, tc.cause, tc.says)
		}
	}
}

func TestNetworkIsRDMA(t *testing.T) {
	for name, want := range map[string][2]bool{
		"IB": {true, true}, "IBext": {true, true}, "IBext_v8": {true, true}, "AWS Libfabric": {true, true},
		"Socket": {false, true}, "GPUDirectTCPX_v7": {false, true}, "FooNet": {false, false},
	} {
		if r, k := NetworkIsRDMA(name); r != want[0] || k != want[1] {
			t.Errorf("NetworkIsRDMA(%q) = %v, %v; want %v", name, r, k, want)
		}
	}
}
