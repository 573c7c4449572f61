// Package ncclboot is the out-of-band TCP channel that wires multi-node
// NCCL ranks together without MPI or ssh.
//
// Ranks run as pods of a Kubernetes Indexed Job (completion index = rank)
// behind a headless Service, so rank k is reachable as <job>-<k>.<service>.
// Rank 0 creates NCCL's unique id and serves it to every other rank (Serve /
// Fetch); after the measurement each rank reports a JSON blob back to rank 0
// (Gather / Report). The id is opaque bytes here: the package does not depend
// on NCCL and is testable on loopback.
package ncclboot

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Environment variables read by FromEnv. Callers that take these values
// from flags can pass a getenv that overlays the flags on os.Getenv.
const (
	EnvIndex     = "JOB_COMPLETION_INDEX" // set by Kubernetes for Indexed Jobs
	EnvJob       = "NCCLBOOT_JOB"         // Job name; falls back to HOSTNAME minus "-<index>"
	EnvService   = "NCCLBOOT_SERVICE"     // headless Service name (pod subdomain)
	EnvNamespace = "NCCLBOOT_NAMESPACE"   // optional; qualifies the rank-0 DNS name
	EnvPort      = "NCCLBOOT_PORT"        // optional; DefaultPort when empty
	EnvHostname  = "HOSTNAME"
	// EnvRank0Addr (host:port) replaces the DNS name of rank 0 for ranks
	// run outside Kubernetes: hack/gpu-device-check.sh's two ranks on one
	// machine meet on 127.0.0.1.
	EnvRank0Addr = "NCCLBOOT_RANK0_ADDR"
)

// DefaultPort is the rank-0 bootstrap port when EnvPort is unset.
const DefaultPort = 29400

// Self describes this pod's place in the NCCL world.
type Self struct {
	Rank      int
	World     int
	Job       string
	Service   string
	Namespace string
	Port      int
	// Rank0Addr is host:port of rank 0's bootstrap listener,
	// <job>-0.<service>[.<namespace>.svc]:<port>.
	Rank0Addr string
}

// FromEnv builds Self from the environment of an Indexed Job pod. world is
// the world size (a flag value); it must be >= 1.
func FromEnv(getenv func(string) string, world int) (Self, error) {
	var s Self
	if world < 1 {
		return s, fmt.Errorf("ncclboot: world size %d is invalid: pass the number of ranks (the Job's completions/parallelism), at least 1", world)
	}
	s.World = world
	idx := strings.TrimSpace(getenv(EnvIndex))
	if idx == "" {
		return s, fmt.Errorf("ncclboot: %s is not set: run as an Indexed Job (spec.completionMode: Indexed) so each pod gets its rank", EnvIndex)
	}
	r, err := strconv.Atoi(idx)
	if err != nil {
		return s, fmt.Errorf("ncclboot: %s=%q is not an integer: run as an Indexed Job (spec.completionMode: Indexed)", EnvIndex, idx)
	}
	if r < 0 || r >= world {
		return s, fmt.Errorf("ncclboot: %s=%d is out of range for world size %d: set completions and parallelism to the world size", EnvIndex, r, world)
	}
	s.Rank = r

	s.Job = strings.TrimSpace(getenv(EnvJob))
	if s.Job == "" {
		// Indexed Job pods with a subdomain get hostname <job>-<index>.
		h := strings.TrimSpace(getenv(EnvHostname))
		suffix := "-" + idx
		if strings.HasSuffix(h, suffix) && len(h) > len(suffix) {
			s.Job = strings.TrimSuffix(h, suffix)
		}
	}
	if s.Job == "" {
		return s, fmt.Errorf("ncclboot: %s is not set and %s does not look like <job>-%s: set %s to the Job name (e.g. from the job-name label via the downward API)", EnvJob, EnvHostname, idx, EnvJob)
	}
	s.Service = strings.TrimSpace(getenv(EnvService))
	if s.Service == "" {
		return s, fmt.Errorf("ncclboot: %s is not set: set it to the headless Service name and set the pod template's spec.subdomain to the same name", EnvService)
	}
	s.Namespace = strings.TrimSpace(getenv(EnvNamespace))
	s.Port = DefaultPort
	if p := strings.TrimSpace(getenv(EnvPort)); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return s, fmt.Errorf("ncclboot: %s=%q is not a TCP port (1-65535)", EnvPort, p)
		}
		s.Port = n
	}
	host := s.Job + "-0." + s.Service
	if s.Namespace != "" {
		host += "." + s.Namespace + ".svc"
	}
	s.Rank0Addr = net.JoinHostPort(host, strconv.Itoa(s.Port))
	if a := strings.TrimSpace(getenv(EnvRank0Addr)); a != "" {
		h, p, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(p); err != nil || h == "" || perr != nil || n < 1 || n > 65535 {
			return s, fmt.Errorf("ncclboot: %s=%q is not host:port (e.g. 127.0.0.1:%d)", EnvRank0Addr, a, DefaultPort)
		}
		s.Rank0Addr = a
	}
	return s, nil
}
