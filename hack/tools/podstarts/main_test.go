package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Lines as containerd 1.6's CRI plugin writes them (taken from a guest
// node's containerd.log of make test, ids shortened): a pod whose first
// sandbox was retried keeps the retry's clock, and a pod that never
// started is left out.
const criLog = `time="2026-11-27T14:55:17.000000000Z" level=info msg="RunPodSandbox for &PodSandboxMetadata{Name:bw-shared-dev-s-a-b-rdma-1,Uid:u1,Namespace:ns,Attempt:0,}"
time="2026-11-27T14:55:18.000000000Z" level=info msg="RunPodSandbox for &PodSandboxMetadata{Name:bw-hostdev-c-a-b-nvidia-2,Uid:u2,Namespace:ns,Attempt:0,}"
time="2026-11-27T14:55:20.000000000Z" level=error msg="RunPodSandbox for &PodSandboxMetadata{Name:bw-hostdev-c-a-b-nvidia-2,Uid:u2,Namespace:ns,Attempt:0,} failed, error" error="cni"
time="2026-11-27T14:55:21.000000000Z" level=info msg="RunPodSandbox for &PodSandboxMetadata{Name:bw-hostdev-c-a-b-nvidia-2,Uid:u2,Namespace:ns,Attempt:1,}"
time="2026-11-27T14:55:29.000000000Z" level=info msg="RunPodSandbox for &PodSandboxMetadata{Name:bw-shared-dev-s-a-b-rdma-1,Uid:u1,Namespace:ns,Attempt:0,} returns sandbox id \"aa01\""
time="2026-11-27T14:55:29.500000000Z" level=info msg="CreateContainer within sandbox \"aa01\" for container &ContainerMetadata{Name:probe,Attempt:0,}"
time="2026-11-27T14:55:30.000000000Z" level=info msg="CreateContainer within sandbox \"aa01\" for &ContainerMetadata{Name:probe,Attempt:0,} returns container id \"cc01\""
time="2026-11-27T14:55:30.100000000Z" level=info msg="StartContainer for \"cc01\""
time="2026-11-27T14:55:36.100000000Z" level=info msg="StartContainer for \"cc01\" returns successfully"
time="2026-11-27T14:55:37.000000000Z" level=info msg="RunPodSandbox for &PodSandboxMetadata{Name:bw-hostdev-c-a-b-nvidia-2,Uid:u2,Namespace:ns,Attempt:1,} returns sandbox id \"aa02\""
time="2026-11-27T14:55:38.000000000Z" level=info msg="RunPodSandbox for &PodSandboxMetadata{Name:never-started,Uid:u3,Namespace:ns,Attempt:0,}"
`

func TestParseContainerdTimesEachStep(t *testing.T) {
	f := filepath.Join(t.TempDir(), "containerd.log")
	if err := os.WriteFile(f, []byte(criLog), 0o644); err != nil {
		t.Fatal(err)
	}
	pods, err := parseContainerd(f)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*podStart{}
	for _, p := range pods {
		byName[p.pod] = p
	}
	s := byName["bw-shared-dev-s-a-b-rdma-1"]
	if s == nil || s.sbEnd.Sub(s.sbBegin) != 12*time.Second || s.ctrEnd.Sub(s.ctrBegin) != 500*time.Millisecond ||
		s.runEnd.Sub(s.runB) != 6*time.Second || kindOf(s.pod) != "shared-dev" {
		t.Fatalf("shared-dev pod: %+v", s)
	}
	h := byName["bw-hostdev-c-a-b-nvidia-2"]
	if h == nil || h.sbEnd.Sub(h.sbBegin) != 16*time.Second || !h.runEnd.IsZero() || kindOf(h.pod) != "hostdev" {
		t.Fatalf("the retried sandbox's clock starts at the retry: %+v", h)
	}
	if n := byName["never-started"]; n == nil || !n.sbEnd.IsZero() {
		t.Fatalf("never-started: %+v", n)
	}
	if err := fromContainerd([]string{f}); err != nil {
		t.Fatal(err)
	}
}
