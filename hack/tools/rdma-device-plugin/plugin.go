package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/rdmasuite/rdmasuite/hack/tools/rdma-device-plugin/rdmadev"
)

// resourceConfig is one advertised resource: like an entry of the Mellanox
// shared device plugin's configList.
type resourceConfig struct {
	// ResourceName is "prefix/name" or just "name" (then ResourcePrefix, or
	// "rdma", is put in front).
	ResourceName   string           `json:"resourceName"`
	ResourcePrefix string           `json:"resourcePrefix,omitempty"`
	RdmaHcaMax     int              `json:"rdmaHcaMax"` // how many pods may share the selected devices
	Selectors      rdmadev.Selector `json:"selectors"`
	// RequireActivePort marks the resource unhealthy (allocatable 0) while no
	// selected device has an ACTIVE port.
	RequireActivePort bool `json:"requireActivePort,omitempty"`
	// HostdevReservations makes this a hostdev resource instead, the way the
	// SR-IOV network device plugin advertises VFs: one device per NIC
	// reserved in this directory (package hostdevres), its ID the NIC's PCI
	// address (which Multus hands to the CNI as deviceID); a pod gets that
	// NIC's reserved uverbs node and rdma_cm, and PCIDEVICE_<RESOURCE>.
	HostdevReservations string `json:"hostdevReservations,omitempty"`
}

func (c resourceConfig) hostdev() bool { return c.HostdevReservations != "" }

func (c resourceConfig) fullName() string {
	if strings.Contains(c.ResourceName, "/") {
		return c.ResourceName
	}
	p := c.ResourcePrefix
	if p == "" {
		p = "rdma"
	}
	return p + "/" + c.ResourceName
}

func (c resourceConfig) validate() error {
	n := c.fullName()
	parts := strings.Split(n, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" || strings.ContainsAny(n, " \t") {
		return fmt.Errorf("resource name %q must be PREFIX/NAME", n)
	}
	if c.hostdev() {
		if c.RdmaHcaMax != 0 || !reflect.DeepEqual(c.Selectors, rdmadev.Selector{}) {
			return fmt.Errorf("resource %s: a hostdev resource (hostdevReservations) has one device per reserved NIC: drop rdmaHcaMax and selectors", n)
		}
		return nil
	}
	if c.RdmaHcaMax < 1 || c.RdmaHcaMax > 10000 {
		return fmt.Errorf("resource %s: rdmaHcaMax %d must be 1..10000", n, c.RdmaHcaMax)
	}
	return nil
}

// plugin serves one resource on its own socket in the kubelet's
// device-plugins directory.
type plugin struct {
	pluginapi.UnimplementedDevicePluginServer

	cfg        resourceConfig
	scanner    rdmadev.Scanner
	pluginDir  string        // kubelet's device-plugins directory
	rescan     time.Duration // how often the selection is re-read
	watchEvery time.Duration // how often the sockets are checked

	mu      sync.Mutex
	devices []rdmadev.Device // current selection
	healthy bool
	why     string
	nics    []hostdevNIC  // hostdev resources: the reserved NICs
	changed chan struct{} // closed and replaced when the advertised state changes
}

func newPlugin(cfg resourceConfig, root, pluginDir string, rescan time.Duration) *plugin {
	return &plugin{cfg: cfg, scanner: rdmadev.Scanner{Root: root}, pluginDir: pluginDir,
		rescan: rescan, watchEvery: time.Second, changed: make(chan struct{})}
}

func (p *plugin) name() string { return p.cfg.fullName() }

// endpoint is the socket's file name, unique per resource.
func (p *plugin) endpoint() string {
	return strings.NewReplacer("/", "_", ".", "_").Replace(p.name()) + ".sock"
}

func (p *plugin) kubeletSocket() string { return filepath.Join(p.pluginDir, "kubelet.sock") }

// refresh re-reads the selection and reports whether the advertised state changed.
func (p *plugin) refresh() (bool, error) {
	if p.cfg.hostdev() {
		return p.refreshHostdev()
	}
	all, err := p.scanner.Scan()
	if err != nil {
		return false, err
	}
	sel := rdmadev.Select(all, p.cfg.Selectors)
	ok, why := rdmadev.Healthy(sel, p.cfg.RequireActivePort)
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := ok != p.healthy || why != p.why || !reflect.DeepEqual(sel, p.devices)
	p.devices, p.healthy, p.why = sel, ok, why
	if changed {
		p.wakeWatchers()
	}
	return changed, nil
}

// wakeWatchers tells every ListAndWatch stream that the advertised state
// changed (closes the current channel, hands out a fresh one). p.mu held.
func (p *plugin) wakeWatchers() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *plugin) state() ([]rdmadev.Device, bool, string, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.devices, p.healthy, p.why, p.changed
}

func (p *plugin) describe() string {
	if p.cfg.hostdev() {
		return p.describeHostdev()
	}
	devs, ok, why, _ := p.state()
	s := fmt.Sprintf("%s: %d shared, devices %v", p.name(), p.cfg.RdmaHcaMax, names(devs))
	if !ok {
		s += " UNHEALTHY: " + why
	}
	return s
}

func names(devs []rdmadev.Device) []string {
	out := make([]string, 0, len(devs))
	for _, d := range devs {
		out = append(out, fmt.Sprintf("%s(%s,%s,%s)", d.Name, d.Driver, strings.Join(d.LinkTypes, "+"), strings.Join(d.Netdevs, "+")))
	}
	return out
}

func (p *plugin) pluginDevices(healthy bool) []*pluginapi.Device {
	if p.cfg.hostdev() {
		return p.hostdevDevices()
	}
	h := pluginapi.Healthy
	if !healthy {
		h = pluginapi.Unhealthy
	}
	out := make([]*pluginapi.Device, p.cfg.RdmaHcaMax)
	for i := range out {
		out[i] = &pluginapi.Device{ID: fmt.Sprintf("shared-%d", i), Health: h}
	}
	return out
}

// --- the DevicePlugin service -------------------------------------------------

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *plugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	for {
		_, ok, why, changed := p.state()
		if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: p.pluginDevices(ok)}); err != nil {
			return err
		}
		if !ok && !p.cfg.hostdev() {
			log.Printf("%s: advertising %d devices Unhealthy: %s", p.name(), p.cfg.RdmaHcaMax, why)
		}
		select {
		case <-changed:
		case <-s.Context().Done():
			return nil
		}
	}
}

func (p *plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

// Allocate gives every container the selected devices' nodes. All shared
// "devices" map to the same HCAs, so the IDs asked for do not matter.
func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	if _, err := p.refresh(); err != nil {
		return nil, fmt.Errorf("%s: reading RDMA devices: %w", p.name(), err)
	}
	if p.cfg.hostdev() {
		return p.allocateHostdev(req)
	}
	devs, ok, why, _ := p.state()
	if !ok {
		return nil, fmt.Errorf("%s: cannot allocate: %s", p.name(), why)
	}
	specs := rdmadev.Specs(devs, p.scanner.HasRdmaCM())
	resp := &pluginapi.AllocateResponse{}
	for range req.ContainerRequests {
		car := &pluginapi.ContainerAllocateResponse{}
		for _, s := range specs {
			car.Devices = append(car.Devices, &pluginapi.DeviceSpec{
				HostPath: s.HostPath, ContainerPath: s.ContainerPath, Permissions: s.Permissions})
		}
		resp.ContainerResponses = append(resp.ContainerResponses, car)
	}
	log.Printf("%s: allocated %d container(s): %d device nodes each", p.name(), len(req.ContainerRequests), len(specs))
	return resp, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// --- serving and registration -------------------------------------------------

// run serves and registers until ctx ends, starting over whenever the
// kubelet restarts (it recreates kubelet.sock and removes plugin sockets).
func (p *plugin) run(ctx context.Context) error {
	if _, err := p.refresh(); err != nil {
		return err
	}
	log.Print(p.describe())
	go p.rescanLoop(ctx)
	for ctx.Err() == nil {
		err := p.serveOnce(ctx)
		if ctx.Err() != nil {
			break
		}
		log.Printf("%s: %v; registering again", p.name(), err)
		select {
		case <-ctx.Done():
		case <-time.After(p.watchEvery):
		}
	}
	return nil
}

func (p *plugin) rescanLoop(ctx context.Context) {
	t := time.NewTicker(p.rescan)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			changed, err := p.refresh()
			if err != nil {
				log.Printf("%s: rescan: %v", p.name(), err)
			} else if changed {
				log.Printf("selection changed: %s", p.describe())
			}
		}
	}
}

// serveOnce serves on a fresh socket, registers, and returns when either
// socket changes (kubelet restart) or ctx ends.
func (p *plugin) serveOnce(ctx context.Context) error {
	// Wait for a kubelet to register with.
	kubeletIno, err := p.waitKubelet(ctx)
	if err != nil {
		return err
	}
	sock := filepath.Join(p.pluginDir, p.endpoint())
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listen %s: %w", sock, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	defer func() {
		srv.Stop()
		_ = os.Remove(sock)
	}()
	sockIno, err := inode(sock)
	if err != nil {
		return err
	}
	if err := p.register(ctx); err != nil {
		return err
	}
	log.Printf("%s: registered with %s as %s", p.name(), p.kubeletSocket(), p.endpoint())
	t := time.NewTicker(p.watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-done:
			return fmt.Errorf("gRPC server stopped: %v", err)
		case <-t.C:
			if ino, err := inode(p.kubeletSocket()); err != nil || ino != kubeletIno {
				return errors.New("kubelet socket recreated (kubelet restarted)")
			}
			if ino, err := inode(sock); err != nil || ino != sockIno {
				return errors.New("plugin socket removed (kubelet restarted)")
			}
		}
	}
}

func (p *plugin) waitKubelet(ctx context.Context) (uint64, error) {
	logged := false
	for {
		if ino, err := inode(p.kubeletSocket()); err == nil {
			return ino, nil
		}
		if !logged {
			log.Printf("%s: waiting for %s", p.name(), p.kubeletSocket())
			logged = true
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(p.watchEvery):
		}
	}
}

func (p *plugin) register(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+p.kubeletSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to kubelet: %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     p.endpoint(),
		ResourceName: p.name(),
		Options:      &pluginapi.DevicePluginOptions{},
	}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("register with kubelet at %s: %w", p.kubeletSocket(), err)
	}
	return nil
}

func inode(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no inode", path)
	}
	return st.Ino, nil
}
