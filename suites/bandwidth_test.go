package suites

import (
	"testing"

	"github.com/rdmasuite/rdmasuite/internal/runner"
)

func TestBandwidth(t *testing.T) {
	testenv.Test(t, pairedFeatures(runner.PairedBandwidth)...)
}
