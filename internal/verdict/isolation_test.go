package verdict

import (
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

func view(mode string, devs ...bw.VisibleDevice) *bw.PodView {
	return &bw.PodView{NetnsMode: mode, Devices: append([]bw.VisibleDevice{}, devs...)}
}

func dev(name, netdev string, openable bool) bw.VisibleDevice {
	d := bw.VisibleDevice{Name: name, Netdev: netdev, Openable: openable}
	if !openable {
		d.OpenError = "ibv_open_device(" + name + "): No such file or directory"
	}
	return d
}

var (
	ownDev  = dev("rxehd0", "net1", true)
	foreign = []bw.VisibleDevice{dev("rxe0", "eth1", false), dev("rxe1", "eth2", false)}
)

// The brief's four cases first: a broken or missing observation is never
// a pass.
func TestIsolationNoProbeOutputIsNotRun(t *testing.T) {
	for name, sights := range map[string][]Sight{
		"no readable output":                 nil,
		"an older probe printed no pod view": {{Pod: "bw-c", View: nil}},
		"the device list was unreadable": {{Pod: "bw-c", View: &bw.PodView{NetnsMode: bw.NetnsExclusive,
			Devices: []bw.VisibleDevice{}, DevicesError: "/sys/class/infiniband: permission denied"}}},
	} {
		c := Isolation("hostdev", "node-1", "net1", sights)
		if c.Status != reports.NotRun || c.Reason == "" || c.ID != "bandwidth/isolation" || c.Nodes[0] != "node-1" {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

func TestIsolationForeignDevicesFail(t *testing.T) {
	sights := []Sight{
		{Pod: "bw-c", View: view(bw.NetnsShared, append(append([]bw.VisibleDevice{}, foreign...), ownDev)...)},
		{Pod: "bw-s", View: view(bw.NetnsShared, append(append([]bw.VisibleDevice{}, foreign...), ownDev)...)},
	}
	c := Isolation("hostdev", "node-1", "net1", sights)
	want := "hostdev pods on node-1 see rxe0, rxe1 besides their own rxehd0 (on net1): the node's RDMA subsystem is in shared netns mode"
	if c.Status != reports.Fail || c.Diagnosis != want || c.Fix != FixIsolation {
		t.Fatalf("%+v", c)
	}
	if !strings.Contains(strings.Join(c.Evidence, "\n"), "pod bw-c: RDMA netns mode shared; devices visible in the pod: rxe0 (eth1, not openable), rxe1 (eth2, not openable), rxehd0 (net1)") {
		t.Fatalf("evidence %q", c.Evidence)
	}
	// One clean pod does not make up for another that sees foreign devices,
	// nor does an unknown one.
	sights[0].View = view(bw.NetnsShared, ownDev)
	sights = append(sights, Sight{Pod: "bw-old"})
	if c := Isolation("hostdev", "node-1", "net1", sights); c.Status != reports.Fail {
		t.Fatalf("one pod sees foreign devices: %+v", c)
	}
	// An unreadable mode is said, not guessed.
	c = Isolation("hostdev", "node-1", "net1", []Sight{{Pod: "bw-c", View: &bw.PodView{NetnsModeError: "RDMA netlink: protocol not supported",
		Devices: []bw.VisibleDevice{foreign[0], ownDev}}}})
	if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "see rxe0 besides their own rxehd0") || !strings.Contains(c.Diagnosis, "could not be read (RDMA netlink: protocol not supported)") {
		t.Fatalf("unknown mode: %+v", c)
	}
}

func TestIsolationExactlyOwnDevicePasses(t *testing.T) {
	c := Isolation("hostdev", "node-1", "net1", []Sight{
		{Pod: "bw-c", View: view(bw.NetnsExclusive, ownDev)},
		{Pod: "bw-s", View: view(bw.NetnsExclusive, dev("rxehd1", "net1", true))}, // another VF, its own
	})
	if c.Status != reports.Pass || c.Diagnosis != "" || c.Reason != "" {
		t.Fatalf("%+v", c)
	}
	if c.Evidence[0] != "pod bw-c: RDMA netns mode exclusive; devices visible in the pod: rxehd0 (net1)" {
		t.Fatalf("evidence %q", c.Evidence)
	}
}

func TestIsolationOwnDeviceMissingFails(t *testing.T) {
	for name, v := range map[string]*bw.PodView{
		"nothing visible":            view(bw.NetnsExclusive),
		"only a device on eth0":      view(bw.NetnsExclusive, dev("mlx5_0", "eth0", true)),
		"shared mode, none on net1":  view(bw.NetnsShared, foreign...),
		"own device without netdev":  view(bw.NetnsExclusive, dev("rxehd0", "", true)),
		"own device on another name": view(bw.NetnsExclusive, dev("rxehd0", "net2", true)),
	} {
		c := Isolation("hostdev", "node-1", "net1", []Sight{{Pod: "bw-c", View: v}})
		if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "hostdev pod bw-c on node-1 sees no RDMA device behind net1") || !strings.Contains(c.Fix, FixNoNetdev) {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

// A pod seeing two devices on its netdev still sees more than its own.
func TestIsolationTwoDevicesOnTheNetdevFail(t *testing.T) {
	c := Isolation("hostdev", "node-1", "net1", []Sight{{Pod: "bw-c", View: view(bw.NetnsExclusive, ownDev, dev("rxehd9", "net1", false))}})
	if c.Status != reports.Fail {
		t.Fatalf("%+v", c)
	}
}

// shared-dev: a pod with no device in exclusive mode is told why.
func TestSharedDevNoDeviceInExclusiveMode(t *testing.T) {
	cli := envelope(t, bw.ProbeOutput{Role: "client", PodView: view(bw.NetnsExclusive)}, probeout.Errorf(probeout.KindNoDevice, "no RDMA device visible"))
	srv := envelope(t, bw.ProbeOutput{Role: "server", PodView: view(bw.NetnsExclusive)}, probeout.Errorf(probeout.KindPeer, "peer failed: no-device"))
	res := Bandwidth(bwInput(t, []string{"write"}, []int{k64}, cli, srv))
	c := res.Checks[0]
	if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "exclusive netns mode") || !strings.Contains(c.Diagnosis, "needs shared mode") || c.Fix != FixSharedDevExclusive {
		t.Fatalf("%+v", c)
	}
	if res.ClientSight == nil || res.ClientSight.View == nil || res.ClientSight.View.NetnsMode != bw.NetnsExclusive || res.ServerSight == nil {
		t.Fatalf("sights %+v %+v", res.ClientSight, res.ServerSight)
	}
	// The same failure in shared mode keeps the device-plugin diagnosis.
	cli = envelope(t, bw.ProbeOutput{Role: "client", PodView: view(bw.NetnsShared)}, probeout.Errorf(probeout.KindNoDevice, "no RDMA device visible"))
	if c := Bandwidth(bwInput(t, []string{"write"}, []int{k64}, cli, srv)).Checks[0]; !strings.Contains(c.Diagnosis, "device plugin / MOFED not ready") || c.Fix != FixNoDevice {
		t.Fatalf("shared mode: %+v", c)
	}
	// Unreadable output: no sight.
	if res := Bandwidth(bwInput(t, []string{"write"}, []int{k64}, "garbage", srv)); res.ClientSight != nil || res.ServerSight == nil {
		t.Fatalf("garbage client: %+v", res.ClientSight)
	}
}
