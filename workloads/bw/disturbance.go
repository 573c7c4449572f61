package bw

// Disturbance is what competed with the measuring thread while one size
// was measured, from the kernel's counters for that thread and its
// process (the verbs endpoint's C loops; absent for the Go loop and for
// endpoints that cannot tell). A polling loop on a core of its own reads a
// CPU share near 1 and no preemption; a busy node shows here, beside the
// figure it bent.
type Disturbance struct {
	WallMs         float64 `json:"wallMs"`         // the timed loop's wall time
	ThreadCPUShare float64 `json:"threadCpuShare"` // the measuring thread's CPU time / WallMs
	Preemptions    int64   `json:"preemptions"`    // involuntary context switches of the measuring thread
	Blocks         int64   `json:"blocks"`         // voluntary ones: it slept (a polling loop does not)
	// OtherThreadsCPUMs is the CPU time the process's other threads (the
	// Go runtime's, a server's connections) used meanwhile.
	OtherThreadsCPUMs float64 `json:"otherThreadsCpuMs"`
}

// Disturbed is an endpoint that tells the Disturbance of its last Loop or
// PingPong (nil when it could not be read).
type Disturbed interface {
	LastDisturbance() *Disturbance
}

// lastDisturbance is ep's, when it tells one.
func lastDisturbance(ep Endpoint) *Disturbance {
	if d, ok := ep.(Disturbed); ok {
		return d.LastDisturbance()
	}
	return nil
}
