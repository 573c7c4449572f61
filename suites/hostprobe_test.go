package suites

import (
	"context"
	"testing"

	"github.com/rdmasuite/rdmasuite/suites/doctor"
)

// probeHosts is replaced by the node-probe implementation; without it the
// doctor works from the API alone.
func probeHosts(ctx context.Context, t *testing.T, s doctor.State) map[string]doctor.HostFacts {
	return nil
}
