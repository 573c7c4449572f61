package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rdmasuite/rdmasuite/internal/latest"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/reports"
)

// A runner killed with SIGKILL (an OOM kill, its pod evicted, its node
// lost, a CI job's hard timeout) runs no cleanup and writes no results: a
// script reading results.json would find the previous run's verdict, or
// nothing. So while the run goes, its results file on disk (and the
// --results-configmap, less often) holds what was recorded so far with
// one more error row that says the run had not finished; the run writes
// over it when it ends. A file that still holds that row is a run that
// was killed, with what it had measured.

// checkpointEvery is how often the file is rewritten while the run
// changes (a write costs the results' size in JSON: about 10 MB
// for 1 024 nodes of 8 rails).
const checkpointEvery = 20 * time.Second

// checkpoints writes the run's results file until stopped.
type checkpoints struct {
	s     *Session
	mu    sync.Mutex // held by a write; Stop takes it so none follows
	ended bool
	stop  chan struct{}
	nodes []reports.Node
	said  bool // a failed write was said once
	gen   int  // the runner's Generation at the last write (-1: none written yet)
	// cmAt is when the --results-configmap was last written: at the
	// first checkpoint (so the latest run reads as this unfinished one,
	// never the one before) and then at most every checkpointCMEvery.
	cmAt   time.Time
	cmSaid bool
}

// checkpointCMEvery spaces the ConfigMap's rewrites (up to 1 MiB each
// through the API server) wider than the file's.
const checkpointCMEvery = 2 * time.Minute

// startCheckpoints writes the first file now (a run killed before its
// first check still leaves one) and then every checkpointEvery when a
// check was recorded or a feature began or ended since.
func (s *Session) startCheckpoints() *checkpoints {
	c := &checkpoints{s: s, stop: make(chan struct{}), gen: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	c.nodes = s.Run.NodeFacts(ctx)
	cancel()
	c.write()
	go func() {
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				if s.Run.Generation() != c.gen {
					c.write()
				}
			}
		}
	}()
	return c
}

// Stop ends the checkpoints; a write in progress finishes first, and none
// starts after (the final results must not be written over).
func (c *checkpoints) Stop() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		c.ended = true
		close(c.stop)
	}
}

func (c *checkpoints) write() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	s := c.s
	c.gen = s.Run.Generation()
	res := s.Run.Snapshot(s.started, s.host, s.version, c.nodes)
	res.Checks = append(res.Checks, Unfinished(s.Run.RunID, time.Now(), s.Run.Running()))
	path, err := runner.WriteResults(*s.flags.ReportDir, res)
	if err != nil && !c.said {
		c.said = true
		fmt.Fprintf(s.out.stderr, "rdmasuite: warning: the results file of the run in progress could not be written (%v): a runner killed now leaves no results\n", err)
	}
	name := *s.flags.ResultsCM
	if name == "" || time.Since(c.cmAt) < checkpointCMEvery {
		return
	}
	c.cmAt = time.Now()
	if err != nil {
		path = ""
	}
	cm, err := latest.Build(s.Run.Namespace(), name, res, res.ExitCode(), path)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
		err = latest.Write(ctx, s.Kube, cm)
		cancel()
	}
	if err != nil && !c.cmSaid {
		c.cmSaid = true
		fmt.Fprintf(s.out.stderr, "rdmasuite: warning: --results-configmap %s of the run in progress could not be written (%v): if the runner is killed, it keeps the previous run\n", name, err)
	}
}

// Unfinished is the error row of a results file written while the run
// was still going: what ran at that moment and what the row means if the
// file is read later.
func Unfinished(runID string, at time.Time, running []string) reports.Check {
	what := "between features"
	if len(running) > 0 {
		what = "running: " + strings.Join(running, ", ")
	}
	return reports.Check{ID: "run/incomplete", Title: "the run finished every feature it was asked for", Status: reports.Error,
		Reason: fmt.Sprintf("the run had not finished when this file was written (%s, %s); a run that ends writes over it, so this row means "+
			"the runner was killed (SIGKILL, out of memory, its pod evicted or its node lost) after what is recorded here: nothing else was measured. "+
			"Its pods and namespace are found by their run label: rdmasuite cleanup --run %s",
			at.UTC().Format(time.RFC3339), what, runID)}
}
