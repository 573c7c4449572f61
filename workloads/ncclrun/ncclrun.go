// Package ncclrun is one rank's part of a multi-node NCCL probe, from pod
// start to the printed result, without MPI, ssh or a launcher pod:
//
//  1. look at the pod: CUDA driver, GPUs, NCCL library (Facts);
//  2. join rank 0 (workloads/ncclboot Rendezvous/Join), which decides once
//     it has every rank's facts: the NCCL unique id, or an abort naming the
//     ranks that cannot take part and why;
//  3. run the measurement (a Starter, backed by NCCL in the real probe);
//  4. report to rank 0, which prints every rank's facts and the combined
//     result.
//
// Loading NCCL and measuring are behind interfaces, so the whole flow —
// ranks, rendezvous, aborts, gathering — is tested on loopback without a
// GPU.
package ncclrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/ncclboot"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// ProbeName is the probeout name of the result.
const ProbeName = "nccl"

// GPU is one GPU a rank sees.
type GPU struct {
	Ordinal  int    `json:"ordinal"`
	Name     string `json:"name"`
	PCIBusID string `json:"pciBusId"`
}

// Facts is what one rank found in its pod before the run.
type Facts struct {
	Rank int    `json:"rank"`
	Pod  string `json:"pod,omitempty"`
	Node string `json:"node,omitempty"`
	// CUDADriver ("12.4") and NCCL ("2.21.5") versions; empty when not
	// loaded.
	CUDADriver string `json:"cudaDriver,omitempty"`
	NCCL       string `json:"nccl,omitempty"`
	GPUs       []GPU  `json:"gpus,omitempty"`
	// NotReady says why this rank cannot take part ("no CUDA driver:
	// libcuda.so.1 ..."); NotReadyKind classifies it (no-gpu, internal).
	NotReady     string        `json:"notReady,omitempty"`
	NotReadyKind probeout.Kind `json:"notReadyKind,omitempty"`
}

// where names a rank for a human: "rank 1 (pod p-1 on node n2)".
func (f Facts) where() string {
	var at []string
	if f.Pod != "" {
		at = append(at, "pod "+f.Pod)
	}
	if f.Node != "" {
		at = append(at, "on node "+f.Node)
	}
	if len(at) == 0 {
		return "rank " + strconv.Itoa(f.Rank)
	}
	return fmt.Sprintf("rank %d (%s)", f.Rank, strings.Join(at, " "))
}

// Starter runs the measurement of one rank once the world has an id.
type Starter interface {
	// NewID creates the NCCL unique id (called on rank 0 only).
	NewID() ([]byte, error)
	// Run initialises this rank's communicator with id and measures; the
	// result is this rank's JSON (ncclbench's RankResult in the probe).
	Run(ctx context.Context, id []byte, world, rank int) (json.RawMessage, error)
}

// Combiner merges every rank's result into the run's (rank 0 only).
type Combiner func(ranks []json.RawMessage) (json.RawMessage, error)

// Config is one rank's run.
type Config struct {
	Self    ncclboot.Self
	Token   string
	Timeout time.Duration // rendezvous and gather, each (default 5m)
	// Listen opens rank 0's listener; nil listens on Self.Port on every
	// address.
	Listen func(port int) (net.Listener, error)
	Logf   func(format string, args ...any)
}

// RankReport is what each rank reports to rank 0 after the measurement.
type RankReport struct {
	Rank   int             `json:"rank"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Output is the probe's result. Rank 0's holds every rank; the others
// hold their own facts and errors (the runner reads rank 0 first).
type Output struct {
	World int     `json:"world"`
	Rank  int     `json:"rank"`
	Ranks []Facts `json:"ranks"`
	// Joined counts the ranks whose facts reached rank 0 (rank 0 included).
	Joined int `json:"joined"`
	// Abort is rank 0's reason for calling the run off, "" when it ran.
	Abort string `json:"abort,omitempty"`
	// Reports are the ranks' measurement reports, by rank (rank 0 only).
	Reports []RankReport `json:"reports,omitempty"`
	// Result is the combined measurement (rank 0 only).
	Result json.RawMessage `json:"result,omitempty"`
	// Errors are failures after the rendezvous, by rank.
	Errors map[int]string `json:"errors,omitempty"`
}

// Decide is rank 0's decision given every rank's facts: the reasons the
// run cannot go on ("" when it can), and whether they are all a missing
// GPU stack (a not-run rather than a failure).
func Decide(facts []Facts) (abort string, noGPU bool) {
	var why []string
	noGPU = true
	for _, f := range facts {
		if f.NotReady != "" {
			why = append(why, f.where()+": "+f.NotReady)
			noGPU = noGPU && f.NotReadyKind == probeout.KindNoGPU
		}
	}
	if len(why) > 0 {
		return strings.Join(why, "; "), noGPU
	}
	versions := map[string][]int{}
	for _, f := range facts {
		versions[f.NCCL] = append(versions[f.NCCL], f.Rank)
	}
	if len(versions) > 1 {
		var vs []string
		for v, rs := range versions {
			vs = append(vs, fmt.Sprintf("%s on ranks %v", v, rs))
		}
		sort.Strings(vs)
		return "the ranks load different NCCL versions (" + strings.Join(vs, ", ") + "): NCCL needs one version on every rank; use one image for all ranks", false
	}
	return "", false
}

// Run is one rank's whole probe. facts come from the caller's look at the
// pod; starter is nil when facts.NotReady is set. The returned Output is
// what the probe prints; the error (a *probeout.Error) is the envelope's.
func Run(ctx context.Context, cfg Config, facts Facts, starter Starter, combine Combiner) (Output, *probeout.Error) {
	self := cfg.Self
	facts.Rank = self.Rank
	out := Output{World: self.World, Rank: self.Rank, Ranks: []Facts{facts}, Joined: 1}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	opts := ncclboot.Options{Token: cfg.Token, Timeout: cfg.Timeout, World: self.World, Logf: cfg.Logf}
	blob, err := json.Marshal(facts)
	if err != nil {
		return out, probeout.Errorf(probeout.KindInternal, "encode facts: %v", err)
	}

	var ln net.Listener
	var id []byte
	if self.Rank == 0 {
		listen := cfg.Listen
		if listen == nil {
			listen = func(port int) (net.Listener, error) { return net.Listen("tcp", ":"+strconv.Itoa(port)) }
		}
		if ln, err = listen(self.Port); err != nil {
			return out, probeout.Errorf(probeout.KindInternal, "rank 0 cannot listen on port %d: %v", self.Port, err)
		}
		defer ln.Close()
		all, dec, err := ncclboot.Rendezvous(ctx, ln, blob, self.World, opts, func(raw []json.RawMessage) ncclboot.Decision {
			fs := decodeFacts(raw)
			if why, _ := Decide(fs); why != "" {
				return ncclboot.Decision{Abort: why}
			}
			nid, err := starter.NewID()
			if err != nil {
				return ncclboot.Decision{Abort: fmt.Sprintf("rank 0 could not create the NCCL unique id: %v", err)}
			}
			return ncclboot.Decision{ID: nid}
		})
		out.Ranks = decodeFacts(all)
		out.Joined = 0
		for _, f := range all {
			if f != nil {
				out.Joined++
			}
		}
		if err != nil {
			out.Abort = dec.Abort
			return out, probeout.Errorf(probeout.KindTimeout, "%v", err)
		}
		if dec.Abort != "" {
			out.Abort = dec.Abort
			if _, noGPU := Decide(out.Ranks); noGPU {
				return out, probeout.Errorf(probeout.KindNoGPU, "%s", dec.Abort)
			}
			return out, probeout.Errorf(probeout.KindInternal, "%s", dec.Abort)
		}
		id = dec.ID
	} else {
		id, err = ncclboot.Join(ctx, self.Rank0Addr, self.Rank, cfg.Token, blob, opts)
		var ab *ncclboot.AbortError
		switch {
		case errors.As(err, &ab):
			out.Abort = ab.Reason
			kind := probeout.KindPeer // another rank's problem; rank 0's output has all
			if facts.NotReady != "" {
				kind = facts.NotReadyKind
			}
			return out, probeout.Errorf(kind, "%s", ab.Reason)
		case err != nil:
			return out, probeout.Errorf(probeout.KindTimeout, "%v", err)
		}
	}

	res, runErr := starter.Run(ctx, id, self.World, self.Rank)
	rep := RankReport{Rank: self.Rank, Result: res}
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	repBlob, _ := json.Marshal(rep)
	if self.Rank != 0 {
		if err := ncclboot.Report(ctx, self.Rank0Addr, self.Rank, cfg.Token, repBlob, opts); err != nil {
			cfg.Logf("rank %d: report to rank 0: %v", self.Rank, err)
		}
		if runErr != nil {
			out.Errors = map[int]string{self.Rank: runErr.Error()}
			return out, probeout.Errorf(probeout.KindInternal, "%v", runErr)
		}
		out.Result = res
		return out, nil
	}

	blobs, gerr := ncclboot.Gather(ctx, ln, repBlob, self.World, opts)
	out.Reports = make([]RankReport, 0, len(blobs))
	results := make([]json.RawMessage, len(blobs))
	for r, b := range blobs {
		var rr RankReport
		if b == nil || json.Unmarshal(b, &rr) != nil {
			rr = RankReport{Rank: r, Error: "no report from this rank"}
		}
		if rr.Error != "" {
			if out.Errors == nil {
				out.Errors = map[int]string{}
			}
			out.Errors[r] = rr.Error
		}
		results[r] = rr.Result
		out.Reports = append(out.Reports, rr)
	}
	if gerr != nil {
		return out, probeout.Errorf(probeout.KindTimeout, "%v", gerr)
	}
	if len(out.Errors) > 0 {
		return out, probeout.Errorf(probeout.KindInternal, "%s", errorList(out.Errors))
	}
	combined, err := combine(results)
	if err != nil {
		return out, probeout.Errorf(probeout.KindInternal, "combine the ranks' results: %v", err)
	}
	out.Result = combined
	return out, nil
}

func decodeFacts(raw []json.RawMessage) []Facts {
	out := make([]Facts, 0, len(raw))
	for r, b := range raw {
		if b == nil {
			continue
		}
		var f Facts
		if json.Unmarshal(b, &f) != nil {
			f = Facts{NotReady: "its facts were not readable JSON", NotReadyKind: probeout.KindInternal}
		}
		f.Rank = r
		out = append(out, f)
	}
	return out
}

func errorList(m map[int]string) string {
	ranks := make([]int, 0, len(m))
	for r := range m {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	var parts []string
	for _, r := range ranks {
		parts = append(parts, fmt.Sprintf("rank %d: %s", r, m[r]))
	}
	return strings.Join(parts, "; ")
}
