// Command podstarts reports what pod starts cost in a make test run: the
// suite's own "pod start" phase (create → container seen started, as the
// runner measured it) summed over results files, and, from the guest
// nodes' containerd logs, where a start's time goes inside the node
// (RunPodSandbox: the pause container and the CNI chain; CreateContainer;
// StartContainer; and what the kubelet spends between them).
//
//	podstarts results R.json...      one line: N starts, average, max
//	podstarts containerd LOG...      the per-step breakdown of every pod
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: podstarts results R.json... | podstarts containerd LOG...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "results":
		err = fromResults(os.Args[2:])
	case "containerd":
		err = fromContainerd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q: results or containerd", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "podstarts:", err)
		os.Exit(1)
	}
}

// fromResults sums the "pod start" phase of the results files.
func fromResults(files []string) error {
	var total reports.Phase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r reports.Run
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %v", f, err)
		}
		p := r.Phases["pod start"]
		total.Count += p.Count
		total.TotalSec += p.TotalSec
		total.MaxSec = max(total.MaxSec, p.MaxSec)
	}
	if total.Count == 0 {
		return fmt.Errorf("no pod start recorded in %s", strings.Join(files, ", "))
	}
	fmt.Printf("pod starts: %d, average %.1f s, max %.1f s, total %.0f s\n", total.Count, total.TotalSec/float64(total.Count), total.MaxSec, total.TotalSec)
	return nil
}

// containerd 1.6's CRI lines (level=info): the start and return of each
// call, with the pod's name in the sandbox metadata.
var (
	lineTime = regexp.MustCompile(`^time="([^"]+)"`)
	sbBegin  = regexp.MustCompile(`msg="RunPodSandbox for &PodSandboxMetadata\{Name:([^,]+),.*Namespace:([^,]+),`)
	sbEnd    = regexp.MustCompile(`msg="RunPodSandbox for &PodSandboxMetadata\{Name:([^,]+),.*Namespace:([^,]+),.*returns sandbox id \\"([0-9a-f]+)\\"`)
	ctrBegin = regexp.MustCompile(`msg="CreateContainer within sandbox \\"([0-9a-f]+)\\" for container`)
	ctrEnd   = regexp.MustCompile(`msg="CreateContainer within sandbox \\"([0-9a-f]+)\\" for &ContainerMetadata.*returns container id \\"([0-9a-f]+)\\"`)
	runBegin = regexp.MustCompile(`msg="StartContainer for \\"([0-9a-f]+)\\""`)
	runEnd   = regexp.MustCompile(`msg="StartContainer for \\"([0-9a-f]+)\\" returns successfully"`)
)

// podStart is one pod's CRI timeline on its node.
type podStart struct {
	pod                            string
	sbBegin, sbEnd                 time.Time
	ctrBegin, ctrEnd, runB, runEnd time.Time
	sandbox                        string
	container                      string
}

func fromContainerd(files []string) error {
	var pods []*podStart
	for _, f := range files {
		ps, err := parseContainerd(f)
		if err != nil {
			return err
		}
		pods = append(pods, ps...)
	}
	var done []*podStart
	for _, p := range pods {
		if !p.runEnd.IsZero() && !p.sbBegin.IsZero() {
			done = append(done, p)
		}
	}
	if len(done) == 0 {
		return fmt.Errorf("no complete pod start (RunPodSandbox … StartContainer returns) in %s", strings.Join(files, ", "))
	}
	type step struct {
		name string
		d    func(p *podStart) time.Duration
	}
	steps := []step{
		{"sandbox (pause + CNI chain)", func(p *podStart) time.Duration { return p.sbEnd.Sub(p.sbBegin) }},
		{"kubelet: sandbox → create", func(p *podStart) time.Duration { return p.ctrBegin.Sub(p.sbEnd) }},
		{"CreateContainer (snapshot, runc create)", func(p *podStart) time.Duration { return p.ctrEnd.Sub(p.ctrBegin) }},
		{"kubelet: create → start", func(p *podStart) time.Duration { return p.runB.Sub(p.ctrEnd) }},
		{"StartContainer (runc start)", func(p *podStart) time.Duration { return p.runEnd.Sub(p.runB) }},
		{"in the node: sandbox begin → started", func(p *podStart) time.Duration { return p.runEnd.Sub(p.sbBegin) }},
	}
	// By pod kind (kindOf).
	kinds := map[string][]*podStart{"all": done}
	for _, p := range done {
		kinds[kindOf(p.pod)] = append(kinds[kindOf(p.pod)], p)
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Printf("%-40s", "pod start inside the guest node, average s")
	for _, k := range names {
		fmt.Printf(" %14s", fmt.Sprintf("%s (%d)", k, len(kinds[k])))
	}
	fmt.Println()
	for _, s := range steps {
		fmt.Printf("%-40s", s.name)
		for _, k := range names {
			var sum time.Duration
			for _, p := range kinds[k] {
				sum += s.d(p)
			}
			fmt.Printf(" %14.2f", sum.Seconds()/float64(len(kinds[k])))
		}
		fmt.Println()
	}
	return nil
}

// kindOf groups pods by what decides their CNI chain: hostdev pods add
// host-device, Whereabouts and the rxe step to Multus and the bridge.
func kindOf(pod string) string {
	switch {
	case strings.Contains(pod, "-hostdev-"):
		return "hostdev"
	case strings.Contains(pod, "-shared-dev-"):
		return "shared-dev"
	}
	return "other"
}

func parseContainerd(file string) ([]*podStart, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pods []*podStart
	open := map[string]*podStart{}  // pod name → its start before the sandbox returned
	bySB := map[string]*podStart{}  // sandbox id
	byCtr := map[string]*podStart{} // container id
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := lineTime.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			continue
		}
		switch {
		case sbEnd.MatchString(line):
			x := sbEnd.FindStringSubmatch(line)
			if p := open[x[2]+"/"+x[1]]; p != nil {
				p.sbEnd, p.sandbox = t, x[3]
				bySB[x[3]] = p
				delete(open, x[2]+"/"+x[1])
			}
		case strings.Contains(line, "failed"):
			// A failed call: the kubelet retries it, and the retry's
			// begin line starts the pod's clock again.
		case sbBegin.MatchString(line):
			x := sbBegin.FindStringSubmatch(line)
			p := &podStart{pod: x[1], sbBegin: t}
			open[x[2]+"/"+x[1]] = p // a retried sandbox starts the pod's clock again
			pods = append(pods, p)
		case ctrEnd.MatchString(line):
			x := ctrEnd.FindStringSubmatch(line)
			if p := bySB[x[1]]; p != nil {
				p.ctrEnd, p.container = t, x[2]
				byCtr[x[2]] = p
			}
		case ctrBegin.MatchString(line):
			if p := bySB[ctrBegin.FindStringSubmatch(line)[1]]; p != nil && p.ctrBegin.IsZero() {
				p.ctrBegin = t
			}
		case runEnd.MatchString(line):
			if p := byCtr[runEnd.FindStringSubmatch(line)[1]]; p != nil {
				p.runEnd = t
			}
		case runBegin.MatchString(line):
			if p := byCtr[runBegin.FindStringSubmatch(line)[1]]; p != nil {
				p.runB = t
			}
		}
	}
	return pods, sc.Err()
}
