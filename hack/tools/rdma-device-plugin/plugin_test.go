package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/rdmasuite/rdmasuite/hack/tools/rdma-device-plugin/rdmadev"
)

// rxeFixture is a root shaped like a guest node's: two Soft-RoCE rails,
// rxe0 on eth1 (port ACTIVE, uverbs0) and rxe1 on eth2 (port DOWN: a staged
// link-down, uverbs1), and rdma_cm.
func rxeFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{"dev/infiniband/rdma_cm": ""}
	links := map[string]string{}
	for i, state := range []string{"4: ACTIVE", "1: DOWN"} {
		dev, uverbs, netdev := fmt.Sprintf("rxe%d", i), fmt.Sprintf("uverbs%d", i), fmt.Sprintf("eth%d", i+1)
		d := "sys/devices/virtual/infiniband/" + dev
		files[d+"/ports/1/state"] = state + "\n"
		files[d+"/ports/1/link_layer"] = "Ethernet\n"
		files[d+"/ports/1/gid_attrs/ndevs/0"] = netdev + "\n"
		files[d+"/parent"] = netdev + "\n"
		files[d+"/node_type"] = "1: CA\n"
		files["sys/devices/virtual/infiniband_verbs/"+uverbs+"/ibdev"] = dev + "\n"
		files["dev/infiniband/"+uverbs] = ""
		links["sys/class/infiniband/"+dev] = "../../devices/virtual/infiniband/" + dev
		links["sys/class/infiniband_verbs/"+uverbs] = "../../devices/virtual/infiniband_verbs/" + uverbs
	}
	for p, s := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeKubelet serves the Registration service on dir/kubelet.sock.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	srv  *grpc.Server
	reqs chan *pluginapi.RegisterRequest
}

func startKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	sock := filepath.Join(dir, "kubelet.sock")
	_ = os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{srv: grpc.NewServer(), reqs: make(chan *pluginapi.RegisterRequest, 4)}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(l) }()
	return k
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.reqs <- r
	return &pluginapi.Empty{}, nil
}

func (k *fakeKubelet) waitRegister(t *testing.T) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case r := <-k.reqs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin did not register within 10 s")
		return nil
	}
}

func dialPlugin(t *testing.T, sock string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

func TestRegisterListAllocateReregister(t *testing.T) {
	root := rxeFixture(t)
	// Unix socket paths are limited to 108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "rdp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	k := startKubelet(t, dir)

	cfg := resourceConfig{ResourceName: "rdma_shared_device_a", RdmaHcaMax: 5,
		Selectors: rdmadev.Selector{Drivers: []string{"rdma_rxe"}}}
	p := newPlugin(cfg, root, dir, time.Hour)
	p.watchEvery = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	r := k.waitRegister(t)
	if r.ResourceName != "rdma/rdma_shared_device_a" || r.Version != pluginapi.Version || r.Endpoint != "rdma_rdma_shared_device_a.sock" {
		t.Fatalf("Register(%+v): unexpected request", r)
	}
	c := dialPlugin(t, filepath.Join(dir, r.Endpoint))
	ctxT, cancelT := context.WithTimeout(ctx, 10*time.Second)
	defer cancelT()
	lw, err := c.ListAndWatch(ctxT, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := lw.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Devices) != 5 {
		t.Fatalf("ListAndWatch: %d devices, want 5", len(resp.Devices))
	}
	for _, d := range resp.Devices {
		if d.Health != pluginapi.Healthy {
			t.Fatalf("device %s is %s", d.ID, d.Health)
		}
	}
	ar, err := c.Allocate(ctxT, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"shared-0"}}, {DevicesIds: []string{"shared-3"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ar.ContainerResponses) != 2 {
		t.Fatalf("Allocate: %d container responses, want 2", len(ar.ContainerResponses))
	}
	got := map[string]string{}
	for _, d := range ar.ContainerResponses[1].Devices {
		if d.HostPath != d.ContainerPath {
			t.Errorf("%s mapped to %s", d.HostPath, d.ContainerPath)
		}
		got[d.HostPath] = d.Permissions
	}
	// Both rails, the one whose port is DOWN too (a pod measures every rail
	// and sees the down one fail), and rdma_cm once.
	if len(got) != 3 || got["/dev/infiniband/uverbs0"] != "rw" || got["/dev/infiniband/uverbs1"] != "rw" ||
		got["/dev/infiniband/rdma_cm"] != "rw" {
		t.Fatalf("Allocate device specs = %v; want uverbs0, uverbs1 and rdma_cm, rw", got)
	}
	if len(ar.ContainerResponses[0].Mounts) != 0 || len(ar.ContainerResponses[0].Envs) != 0 {
		t.Fatalf("Allocate: unexpected mounts/envs %+v", ar.ContainerResponses[0])
	}

	// The devices disappear: ListAndWatch sends the devices Unhealthy and
	// Allocate refuses.
	for _, dev := range []string{"rxe0", "rxe1"} {
		if err := os.Remove(filepath.Join(root, "sys/class/infiniband", dev)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.refresh(); err != nil {
		t.Fatal(err)
	}
	resp, err = lw.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.Devices[0].Health != pluginapi.Unhealthy {
		t.Fatalf("after rxe0 and rxe1 vanished: %s, want Unhealthy", resp.Devices[0].Health)
	}
	if _, err := c.Allocate(ctxT, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{}}}); err == nil {
		t.Fatal("Allocate with no device selected must fail")
	}

	// Kubelet restart: it removes the plugin sockets and makes a new kubelet.sock.
	k.srv.Stop()
	_ = os.Remove(filepath.Join(dir, r.Endpoint))
	k2 := startKubelet(t, dir)
	defer k2.srv.Stop()
	r2 := k2.waitRegister(t)
	if r2.ResourceName != r.ResourceName {
		t.Fatalf("re-registered as %q", r2.ResourceName)
	}
	if _, err := os.Stat(filepath.Join(dir, r2.Endpoint)); err != nil {
		t.Fatalf("plugin socket after re-registration: %v", err)
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		c    resourceConfig
		name string
		ok   bool
	}{
		{resourceConfig{ResourceName: "rdma_shared_device_a", RdmaHcaMax: 63}, "rdma/rdma_shared_device_a", true},
		{resourceConfig{ResourceName: "hca", ResourcePrefix: "example.com", RdmaHcaMax: 1}, "example.com/hca", true},
		{resourceConfig{ResourceName: "rdma/x", RdmaHcaMax: 0}, "rdma/x", false},
		{resourceConfig{ResourceName: "a/b/c", RdmaHcaMax: 1}, "a/b/c", false},
	} {
		if got := tc.c.fullName(); got != tc.name {
			t.Errorf("fullName(%+v) = %q, want %q", tc.c, got, tc.name)
		}
		if err := tc.c.validate(); (err == nil) != tc.ok {
			t.Errorf("validate(%+v) = %v, want ok=%v", tc.c, err, tc.ok)
		}
	}
}
