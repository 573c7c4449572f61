package bwverbs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
)

// Post APIs (Config.PostAPI, rdmaprobe --post-api).
const (
	// PostAPIAuto posts the way perftest would on the device: ibv_wr_* on
	// the devices perftest lists, ibv_post_send elsewhere.
	PostAPIAuto = "auto"
	PostAPIWR   = "wr"  // the extended-QP API, ibv_wr_*
	PostAPIOld  = "old" // ibv_post_send (perftest's --use_old_post_send)
)

// ParsePostAPI checks a --post-api value ("" is auto).
func ParsePostAPI(s string) (string, error) {
	switch s {
	case "", PostAPIAuto:
		return PostAPIAuto, nil
	case PostAPIWR, PostAPIOld:
		return s, nil
	}
	return "", fmt.Errorf("post API %q: want auto (what perftest would use on the device), wr (ibv_wr_*) or old (ibv_post_send)", s)
}

// perftestWRDrivers are the kernel drivers of the devices perftest 6.x
// posts to through ibv_wr_* (ConnectX-4 and later, BlueField, their VFs,
// EFA, HNS, Yunsilicon): perftest_resources.c's check_use_old_post_send
// list at linux-rdma/perftest@00b55b6 sets use_old_post_send for every
// other device, Soft-RoCE (rxe) and siw included.
var perftestWRDrivers = map[string]bool{"mlx5_core": true, "efa": true, "hns3": true, "hns_roce_hw_v2": true, "xsc_pci": true}

// deviceDriver is the kernel driver behind /sys/class/infiniband/DEV/device
// ("" for a software device such as rxe or siw, which has none).
func deviceDriver(sysfsRoot, dev string) string {
	if sysfsRoot == "" {
		sysfsRoot = "/"
	}
	link, err := os.Readlink(filepath.Join(sysfsRoot, "sys/class/infiniband", dev, "device/driver"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(filepath.Base(link))
}

// usesWR says whether the device's QPs are posted to through ibv_wr_*:
// as asked, or under auto as perftest would, by the device's kernel
// driver. The reason is reported with the device.
func usesWR(api, driver string) (bool, string) {
	switch api {
	case PostAPIWR:
		return true, "ibv_wr_* (--post-api wr)"
	case PostAPIOld:
		return false, "ibv_post_send (--post-api old)"
	}
	if driver == "" {
		return false, "ibv_post_send (as perftest on a device with no kernel driver behind it, e.g. rxe or siw)"
	}
	if perftestWRDrivers[driver] {
		return true, "ibv_wr_* (as perftest on " + driver + " devices)"
	}
	return false, "ibv_post_send (as perftest on " + driver + " devices)"
}

// perftestLatencyInline is perftest's default inline size for a latency
// test of op on a device with this driver (ctx_set_max_inline,
// perftest_parameters.c at linux-rdma/perftest@00b55b6): 220 B for write
// and 236 B for send on RC (mlx5), 32 B on EFA and HNS, nothing for read,
// on devices perftest does not recognise (rxe, siw) or on GPU memory.
// The 2.5 µs latency bars were measured that way.
func perftestLatencyInline(driver string, op bw.Op, gpu bool) int {
	if gpu || op == bw.OpRead {
		return 0
	}
	switch driver {
	case "mlx5_core":
		if op == bw.OpSend {
			return 236
		}
		return 220
	case "efa", "hns3", "hns_roce_hw_v2":
		return 32
	}
	return 0
}
