package main

import (
	"testing"
	"time"
)

func TestHoldEndsAfterMaxAndRefusesBadFlags(t *testing.T) {
	start := time.Now()
	if code := run([]string{"hold", "--max", "50ms"}); code != 0 {
		t.Fatalf("hold --max 50ms: exit %d, want 0", code)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("hold ended after %s, before its --max", d)
	}
	for _, args := range [][]string{{"hold", "--max", "0s"}, {"hold", "extra"}, {"hold", "--max", "soon"}} {
		if code := run(args); code == 0 {
			t.Errorf("%q: exit 0, want a usage failure", args)
		}
	}
}
