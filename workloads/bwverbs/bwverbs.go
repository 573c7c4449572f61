// Package bwverbs backs the transport-agnostic bandwidth test (workloads/bw)
// with real verbs resources from workloads/verbs: it picks the device (by
// name, or by netdev through rdmamap), the port and the GID, and sizes PD,
// MR, CQ and QPs for the test parameters.
package bwverbs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

// Config selects the device side of a test.
type Config struct {
	Device   string // RDMA device name, e.g. mlx5_0; empty: Netdev or the first device
	Netdev   string // network interface whose RDMA device to use, e.g. net1 (SR-IOV VF)
	Port     int    // 1-based
	GIDIndex int    // -1: the port's RoCE v2 IPv4 GID (or 0 on InfiniBand)
	// GoLoop posts and polls from Go, one cgo call per verbs call (bw's
	// reference loop), instead of the C loop; for comparisons and tests.
	GoLoop bool
	// PostAPI is how the C loop posts (ParsePostAPI): auto (""), the way
	// perftest would on the device, wr or old.
	PostAPI string
	// Memory is where the registered buffer lives (ParseMemory): "host"
	// (or ""), "cuda"/"cuda:auto" (the GPU nearest each rail's NIC) or
	// "cuda:<ordinal>": GPUDirect RDMA, like perftest's --use_cuda.
	Memory string
	// GPU allocates GPU memory for Memory cuda; nil: no CUDA driver in
	// this binary (a cuda rail then fails as bw.ErrNoGPU).
	GPU GPUAllocator
	// SysfsRoot is where sysfs is read for the GPU–NIC topology ("" = /).
	SysfsRoot string
	// OnMemory, if set, receives each opened rail's memory (also when
	// GPU registration failed after a GPU was chosen); it may be called
	// from several goroutines at once.
	OnMemory func(bw.Rail, bw.Memory)
}

// ResolveDevice returns the RDMA device name cfg points at ("" = the
// first). Errors match bw.ErrNoDevice or bw.ErrNoNetdev.
//
// --netdev is resolved the way the rails are (Discover, then Select):
// among the devices this process can open first. In shared RDMA netns mode
// a hostdev pod sees every VF of the node in sysfs, and every hostdev pod
// names its own VF net1, so a scan of sysfs alone (rdmamap) can answer
// with another pod's VF.
func ResolveDevice(cfg Config) (string, error) {
	if cfg.Device != "" || cfg.Netdev == "" {
		return cfg.Device, nil
	}
	d, err := Discover(cfg)
	if err != nil {
		return "", err
	}
	rails, err := d.Select(cfg)
	if err != nil {
		return "", err
	}
	return rails[0].Device, nil
}

// tagVerbs makes verbs errors match the bw sentinels the probe classifies
// by (bw.Classify), keeping their messages.
func tagVerbs(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, verbs.ErrNoDevice), errors.Is(err, verbs.ErrNoSuchDevice):
		return bw.Tag(bw.ErrNoDevice, err)
	case errors.Is(err, verbs.ErrMemlock):
		return bw.Tag(bw.ErrMemlock, err)
	case errors.Is(err, verbs.ErrCompletion):
		return bw.Tag(bw.ErrTransport, err)
	}
	return err
}

// Factory returns a bw.Factory that opens real verbs resources on a rail
// (cfg's GID index and loop choice apply to every rail).
func Factory(cfg Config) bw.Factory {
	return func(r bw.Rail, p bw.Params) (bw.Resources, error) {
		c := cfg
		c.Device, c.Port, c.Netdev = r.Device, r.Port, ""
		res, err := open(c, p, func(m bw.Memory) {
			if cfg.OnMemory != nil {
				cfg.OnMemory(r, m)
			}
		})
		if err != nil {
			return nil, tagVerbs(err)
		}
		return res, nil
	}
}

type resources struct {
	ctx     *verbs.Context
	pd      *verbs.PD
	mr      *verbs.MR
	gpuBuf  GPUBuffer // the MR's memory when it is on a GPU; freed after the MR
	cq      *verbs.CQ
	qps     []*verbs.QP
	port    verbs.PortAttr
	gid     verbs.GID
	dev     bw.Device
	slot    int // bytes of the buffer each QP owns
	remote  []bw.QPInfo
	rdAtom  int
	timeout int // local ACK timeout exponent (bw.Params.QPTimeout)
	inline  int
	wcs     []verbs.Completion
	portNum int
	qpCaps  verbs.QPCaps // how every QP is created (open, RenewQPs)
	access  verbs.Access
	// inFlight is what the last loop left posted and uncompleted when it
	// stopped at its deadline (perftest -D); the QPs must be renewed
	// before they carry another size.
	inFlight int
	goLoop   bool
	// generalLoop: one-at-a-time loops through the many-QP C loop
	// (verbs.LoopSpec.General), for comparing the two loop shapes.
	generalLoop bool
	recvs       int // receives kept posted on each QP (send latency)
	// last is what competed with the measuring thread during the last C
	// loop (nil after the Go loop, or when the kernel could not tell).
	last *bw.Disturbance
}

// LastDisturbance is bw.Disturbed's.
func (r *resources) LastDisturbance() *bw.Disturbance { return r.last }

// disturbance is a C loop's thread usage as the result reports it.
func disturbance(u *verbs.ThreadUsage) *bw.Disturbance {
	if u == nil || u.Wall <= 0 {
		return nil
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return &bw.Disturbance{WallMs: ms(u.Wall), ThreadCPUShare: float64(u.ThreadCPU) / float64(u.Wall),
		Preemptions: u.Involuntary, Blocks: u.Voluntary, OtherThreadsCPUMs: ms(max(u.ProcessCPU-u.ThreadCPU, 0))}
}

// pingPongRecvs is how many receives the send ping-pong keeps posted: it
// needs one at a time (each message waits for the answer), the rest are
// slack so a repost never races the peer's next message.
const pingPongRecvs = 16

func open(cfg Config, p bw.Params, onMemory func(bw.Memory)) (res *resources, err error) {
	mspec, err := ParseMemory(cfg.Memory)
	if err != nil {
		return nil, err
	}
	if mspec.Kind == bw.MemoryCUDA && p.Latency && p.Op.PingPongs() {
		// Write: the CPU polls the receive buffer; send: the loop is
		// built on host buffers only.
		return nil, bw.Tag(bw.ErrUsage, fmt.Errorf("%s latency with --mem %s: the ping-pongs run on host memory (write's CPU polls the receive buffer); measure GPU buffers with bandwidth", p.Op, mspec))
	}
	api, err := ParsePostAPI(cfg.PostAPI)
	if err != nil {
		return nil, bw.Tag(bw.ErrUsage, err)
	}
	if mspec.Kind == bw.MemoryCUDA && p.Op == bw.OpWrite && p.MaxInline > 0 {
		return nil, bw.Tag(bw.ErrUsage, fmt.Errorf("inline %d with --mem %s: an inline post copies the payload with the CPU, which must not touch GPU memory; use inline 0", p.MaxInline, mspec))
	}
	name, err := ResolveDevice(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Port == 0 {
		cfg.Port = 1
	}
	r := &resources{portNum: cfg.Port, goLoop: cfg.GoLoop, timeout: bw.EffectiveQPTimeout(p.QPTimeout)}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if r.ctx, err = verbs.Open(name); err != nil {
		return nil, err
	}
	dattr, err := r.ctx.QueryDevice()
	if err != nil {
		return nil, err
	}
	if r.port, err = r.ctx.QueryPort(cfg.Port); err != nil {
		return nil, err
	}
	if !r.port.Active() {
		return nil, bw.Tag(bw.ErrLinkDown, fmt.Errorf("%s port %d is %s (physical state %s): the link is not up — check cable, switch port and the subnet manager (ibstat shows the same)",
			r.ctx.Name, cfg.Port, r.port.State, r.port.PhysState))
	}
	if r.gid, err = pickGID(r.ctx, cfg, r.port); err != nil {
		return nil, err
	}
	// Outstanding RDMA READs per QP: what the device allows, like perftest's
	// default for -o.
	r.rdAtom = min(dattr.MaxQPRdAtom, dattr.MaxQPInitRdAt, 255)
	if r.rdAtom < 1 {
		r.rdAtom = 1
	}
	r.slot = p.MaxSize()
	if r.pd, err = r.ctx.AllocPD(); err != nil {
		return nil, err
	}
	access := verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead
	if mspec.Kind == bw.MemoryCUDA {
		d := gpuDeps{alloc: cfg.GPU, reg: r.pd}
		if topo, terr := gputopo.New(cfg.SysfsRoot); terr != nil {
			d.topoErr = terr
		} else {
			d.topo = topo
		}
		var mem bw.Memory
		r.mr, r.gpuBuf, mem, err = gpuMemory(d, mspec, r.ctx.Name, r.slot*p.QPs, access)
		if mem.Kind != "" {
			onMemory(mem)
		}
		if err != nil {
			return nil, err
		}
	} else {
		slots := p.QPs
		if p.Latency {
			// The write ping-pong's receive area (what the peer writes) and
			// send area; whatever op these resources open with, a client
			// measuring write,read may reuse them.
			slots = max(2, p.QPs)
		}
		if r.mr, err = r.pd.RegMR(r.slot*slots, access); err != nil {
			return nil, err
		}
		if p.Latency {
			// The peer's first ping may land before our loop starts: the
			// receive area must read zero from the moment we connect.
			if err = r.mr.Zero(); err != nil {
				return nil, err
			}
		}
		onMemory(bw.Memory{Kind: bw.MemoryHost})
	}
	if p.Op == bw.OpSend {
		r.recvs = pingPongRecvs
	}
	cqDepth := min(p.TxDepth*p.QPs+p.QPs+r.recvs*p.QPs, dattr.MaxCQE)
	if r.cq, err = r.ctx.CreateCQ(cqDepth); err != nil {
		return nil, err
	}
	driver := deviceDriver(cfg.SysfsRoot, r.ctx.Name)
	switch {
	case p.MaxInline < 0:
		// --latency without --inline: what perftest's latency test inlines
		// on this device.
		r.inline = perftestLatencyInline(driver, p.Op, mspec.Kind == bw.MemoryCUDA)
	case p.Op == bw.OpWrite || p.Op == bw.OpSend:
		r.inline = p.MaxInline
	}
	wr, postAPI := usesWR(api, driver)
	r.qpCaps = verbs.QPCaps{SendDepth: p.TxDepth, RecvDepth: max(r.recvs, 1), MaxInline: r.inline, Plain: !wr}
	r.access = access
	if err := r.createQPs(p.QPs); err != nil {
		return nil, err
	}
	r.wcs = make([]verbs.Completion, 16)
	r.dev = bw.Device{Name: r.ctx.Name, Port: cfg.Port, GIDIndex: r.gid.Index, GID: r.gid.Addr,
		LinkLayer: r.port.LinkLayer, RateGbps: r.port.RateGbps, MTU: r.port.ActiveMTU,
		Netdev: netdevOf(r.ctx.Name, cfg.Port, r.gid.Index), PostAPI: postAPI, InlineBytes: r.inline, ClockMHz: counterMHz()}
	if wr && len(r.qps) > 0 && !r.qps[0].Extended() {
		r.dev.PostAPI = "ibv_post_send (the provider has no extended QPs for ibv_wr_*)"
	}
	return r, nil
}

// pickGID chooses the source GID: on InfiniBand index 0; on RoCE the given
// index, or the first RoCE v2 GID holding an IPv4 address (what perftest's
// -x needs to be told by hand, and the usual source of "works with -x 3,
// fails with -x 0" confusion).
func pickGID(ctx *verbs.Context, cfg Config, port verbs.PortAttr) (verbs.GID, error) {
	gids, err := ctx.GIDs()
	if err != nil {
		return verbs.GID{}, err
	}
	var onPort []verbs.GID
	for _, g := range gids {
		if g.Port == cfg.Port {
			onPort = append(onPort, g)
		}
	}
	if cfg.GIDIndex >= 0 {
		for _, g := range onPort {
			if g.Index == cfg.GIDIndex {
				return g, nil
			}
		}
		return verbs.GID{}, fmt.Errorf("%s port %d has no valid GID at index %d (valid: %s)", ctx.Name, cfg.Port, cfg.GIDIndex, listGIDs(onPort))
	}
	if port.LinkLayer == "InfiniBand" {
		for _, g := range onPort {
			if g.Index == 0 {
				return g, nil
			}
		}
	}
	for _, g := range onPort {
		if g.Type == "RoCE v2" && g.IPv4() {
			return g, nil
		}
	}
	for _, g := range onPort {
		if g.Type == "RoCE v2" {
			return g, nil
		}
	}
	return verbs.GID{}, fmt.Errorf("%s port %d has no RoCE v2 GID (valid: %s): the netdev needs an IP address, or pass --gid-index", ctx.Name, cfg.Port, listGIDs(onPort))
}

func listGIDs(gs []verbs.GID) string {
	if len(gs) == 0 {
		return "none"
	}
	var parts []string
	for _, g := range gs {
		parts = append(parts, fmt.Sprintf("%d=%s(%s)", g.Index, g.Addr, g.Type))
	}
	return strings.Join(parts, ", ")
}

// netdevOf reads the netdev a GID entry is bound to (RoCE); empty on IB.
func netdevOf(dev string, port, gidIndex int) string {
	b, err := os.ReadFile(filepath.Join("/sys/class/infiniband", dev, "ports", fmt.Sprint(port), "gid_attrs/ndevs", fmt.Sprint(gidIndex)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// createQPs creates n RC QPs on the CQ, each in INIT with a random PSN.
func (r *resources) createQPs(n int) error {
	for i := 0; i < n; i++ {
		qp, err := r.pd.CreateRCQP(r.cq, r.qpCaps, rand.Uint32())
		if err != nil {
			return err
		}
		r.qps = append(r.qps, qp)
		if err := qp.ToInit(r.portNum, r.access); err != nil {
			return err
		}
	}
	return nil
}

// LeftInFlight is bw.QPRenewer's: what the last loop left in flight.
func (r *resources) LeftInFlight() int { return r.inFlight }

// RenewQPs is bw.QPRenewer's: it destroys every QP with the work it still
// holds, empties the CQ of what they completed before (so no stale
// completion reaches the next loop), and creates as many new ones in INIT
// (new QP numbers and PSNs: a packet of the old ones still on the wire
// addresses no QP). Connect then joins them to the peer's new QPs.
func (r *resources) RenewQPs() ([]bw.QPInfo, error) {
	n := len(r.qps)
	for _, qp := range r.qps {
		if err := qp.Close(); err != nil {
			return nil, err
		}
	}
	r.qps, r.remote = nil, nil
	for {
		k, err := r.cq.Poll(r.wcs)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			break
		}
	}
	r.inFlight = 0
	if err := r.createQPs(n); err != nil {
		return nil, err
	}
	return r.Local(), nil
}

func (r *resources) Local() []bw.QPInfo {
	out := make([]bw.QPInfo, len(r.qps))
	for i, qp := range r.qps {
		out[i] = bw.QPInfo{QPN: qp.QPN(), PSN: qp.PSN, LID: r.port.LID, GID: r.gid.Addr,
			Addr: r.mr.Addr() + uint64(i*r.slot), RKey: r.mr.RKey(), MTU: r.port.ActiveMTU,
			IsIB: r.port.LinkLayer == "InfiniBand"}
	}
	return out
}

func (r *resources) Connect(remote []bw.QPInfo) error {
	if len(remote) != len(r.qps) {
		return fmt.Errorf("peer has %d QPs, we have %d", len(remote), len(r.qps))
	}
	for i, qp := range r.qps {
		rem := remote[i]
		gid, err := verbs.ParseGID(rem.GID)
		if err != nil && !rem.IsIB {
			return fmt.Errorf("peer QP %d: %w", rem.QPN, err)
		}
		v := verbs.Remote{QPN: rem.QPN, PSN: rem.PSN, LID: rem.LID, GID: gid, Addr: rem.Addr, RKey: rem.RKey, IsIB: rem.IsIB, MTU: rem.MTU}
		if err := qp.ToRTR(v, r.portNum, r.gid.Index, r.port, r.rdAtom); err != nil {
			return err
		}
		if err := qp.ToRTS(r.rdAtom, r.timeout); err != nil {
			return err
		}
		// The send ping-pong's receives, before the peer can send: our
		// Connect precedes the first message of either side (the server
		// connects before it reads "start", the client before it sends it).
		for k := 0; k < r.recvs; k++ {
			if err := qp.PostRecv(r.mr, 0, r.slot, verbs.PingPongRecvID); err != nil {
				return err
			}
		}
	}
	r.remote = remote
	return nil
}

func (r *resources) Post(qp int, op bw.Op, size int, id uint64, signaled bool) error {
	rem := r.remote[qp]
	return r.qps[qp].Post(verbsOp(op), r.mr, qp*r.slot, size, rem.Addr, rem.RKey, id, signaled, r.inlined(op, size))
}

func verbsOp(op bw.Op) verbs.Op {
	if op == bw.OpRead {
		return verbs.OpRead
	}
	return verbs.OpWrite
}

// inlined says whether a post of size bytes carries its payload inline
// (writes and sends up to the QP's inline limit).
func (r *resources) inlined(op bw.Op, size int) bool {
	return (op == bw.OpWrite || op == bw.OpSend) && size <= r.inline
}

func (r *resources) Poll(wcs []bw.Completion) (int, error) {
	n, err := r.cq.Poll(r.wcs[:min(len(wcs), len(r.wcs))])
	if err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		wcs[i] = bw.Completion{WrID: r.wcs[i].WrID}
		if r.wcs[i].Status != 0 {
			wcs[i].Status = verbs.StatusString(r.wcs[i].Status)
		}
	}
	return n, nil
}

// PingPong is ib_write_lat's or ib_send_lat's loop for one size
// (verbs.PingPong): the peer writes (or its sends land) into our first
// slot (what Local advertises), we write or send from the second. A peer
// silent for 10 s stops it.
func (r *resources) PingPong(p bw.Params, size int, client bool) ([]time.Duration, error) {
	scale := calibrate()
	if scale <= 0 {
		return nil, fmt.Errorf("%s latency needs the CPU's cycle counter, which could not be calibrated here", p.Op)
	}
	if len(r.qps) != 1 || len(r.remote) != 1 {
		return nil, fmt.Errorf("%s latency runs on one connected QP, have %d", p.Op, len(r.qps))
	}
	op := verbs.OpWrite
	if p.Op == bw.OpSend {
		op = verbs.OpSend
	}
	spec := verbs.PingPongSpec{QP: r.qps[0], CQ: r.cq, MR: r.mr, Op: op, Target: verbs.LoopTarget{Addr: r.remote[0].Addr, RKey: r.remote[0].RKey},
		RecvOff: 0, RecvLen: r.slot, SendOff: r.slot, Size: size, Inline: r.inlined(p.Op, size), Client: client, Iters: p.Iters,
		Timeout: uint64(float64(10*time.Second) / scale)}
	var usage verbs.ThreadUsage
	spec.Usage = &usage
	posts, err := verbs.PingPong(spec)
	r.last = disturbance(&usage)
	if err != nil {
		return nil, tagTransport(withAckTimeout(err, r.timeout))
	}
	if len(posts) == 0 {
		return nil, nil
	}
	return sinceCycle(posts, posts[0], scale), nil
}

// tagTransport marks what the verbs loops report of the QP itself (a
// failed post, poll or completion, a silent peer) as a transport failure:
// the QP cannot carry the run.
func tagTransport(err error) error {
	var ve *verbs.Error
	if errors.Is(err, verbs.ErrCompletion) || errors.As(err, &ve) || errors.Is(err, verbs.ErrPeerSilent) {
		return bw.Tag(bw.ErrTransport, err)
	}
	return err
}

// withAckTimeout adds the QPs' ACK timeout and retry count to a failed
// completion: they decide when a requester resends and when it gives up,
// and a responder on a loaded host (or Soft-RoCE) can refuse a resend of
// work it still has queued, so the evidence needs them.
func withAckTimeout(err error, exp int) error {
	if !errors.Is(err, verbs.ErrCompletion) {
		return err
	}
	return fmt.Errorf("%w (QP ACK timeout %s = 4.096 µs × 2^%d, %d retries; --qp-timeout sets the exponent)",
		err, bw.QPTimeoutDuration(exp).Round(time.Millisecond), exp, verbs.RetryCount)
}

// sinceCycle converts cycle stamps to durations since origin.
func sinceCycle(stamps []uint64, origin uint64, scale float64) []time.Duration {
	out := make([]time.Duration, len(stamps))
	for i, c := range stamps {
		out[i] = time.Duration(float64(c-origin) * scale)
	}
	return out
}

// Loop runs one size in C (verbs.RunLoop) when the cycle counter is
// calibrated; otherwise it falls back to the Go loop through Post and Poll.
func (r *resources) Loop(p bw.Params, size int, record bool) (posted, completed []time.Duration, done int, err error) {
	scale := calibrate()
	r.inFlight = 0
	if scale <= 0 || r.goLoop {
		r.last = nil
		return bw.RunLoop(r, p, size, Clock(), record)
	}
	// A one-way duration run stops at its deadline like perftest -D; a
	// bidirectional one drains (the peer's loop still sends to our QPs).
	spec := verbs.LoopSpec{QPs: r.qps, CQ: r.cq, MR: r.mr, Op: verbsOp(p.Op), Slot: r.slot, Size: size,
		Inline: r.inlined(p.Op, size), Iters: p.Iters, TxDepth: p.TxDepth, CQMod: p.CQMod, Record: record,
		NoDrain: !p.Bidirectional, General: r.generalLoop}
	for _, rem := range r.remote {
		spec.Targets = append(spec.Targets, verbs.LoopTarget{Addr: rem.Addr, RKey: rem.RKey})
	}
	if p.Duration > 0 {
		spec.Deadline = uint64(float64(p.Duration.Nanoseconds())/scale) + 1
	}
	res, err := verbs.RunLoop(spec)
	r.last = disturbance(res.Usage)
	r.inFlight = res.LeftInFlight
	if err != nil {
		return nil, nil, res.Done, tagTransport(withAckTimeout(err, r.timeout))
	}
	if !record {
		return nil, nil, res.Done, nil
	}
	if p.Duration > 0 {
		return []time.Duration{0}, sinceCycle([]uint64{res.LastDone}, res.FirstPost, scale), res.Done, nil
	}
	return sinceCycle(res.Posted, res.FirstPost, scale), sinceCycle(res.Completed, res.FirstPost, scale), res.Done, nil
}

func (r *resources) Describe() bw.Device { return r.dev }

// Close frees children before parents; every step tolerates a partial open.
func (r *resources) Close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, qp := range r.qps {
		keep(qp.Close())
	}
	keep(r.cq.Close())
	keep(r.mr.Close())
	if r.gpuBuf != nil { // after its MR: the HCA must be done with it
		keep(r.gpuBuf.Close())
		r.gpuBuf = nil
	}
	keep(r.pd.Close())
	keep(r.ctx.Close())
	return first
}
