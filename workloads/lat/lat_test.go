package lat

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// perftest's worked example (print_report_lat, default 1000 iterations):
// 999 gaps between posts, the 2 largest dropped, median = delta[498],
// p99 = delta[ceil(997*0.99)] = delta[988], p99.9 = delta[997] = max,
// which is the 2nd-largest raw sample.
func TestPerftestArithmetic(t *testing.T) {
	posts := make([]uint64, 1000)
	gaps := rand.New(rand.NewPCG(1, 2)).Perm(999)
	var at uint64
	for i := range posts {
		posts[i] = at
		if i < len(gaps) {
			at += uint64(gaps[i]+1) * 1000 // gaps 1..999 µs at 1000 MHz
		}
	}
	s, err := FromPosts(posts, 1000, false)
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Samples: 997, Min: 1, Max: 998, Typical: 499, P99: 989, P999: 998}
	if s.Samples != want.Samples || s.Min != want.Min || s.Max != want.Max || s.Typical != want.Typical || s.P99 != want.P99 || s.P999 != want.P999 {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	if math.Abs(s.Avg-499) > 1e-9 { // mean of 1..997
		t.Errorf("avg %g, want 499", s.Avg)
	}
	// write_lat and send_lat report half the round trip; read_lat does not.
	h, _ := FromPosts(posts, 1000, true)
	if h.Typical != 249.5 || h.Max != 499 || h.P99 != 494.5 {
		t.Errorf("halved: %+v", h)
	}
}

// An even number of kept samples takes the mean of the two middle ones.
func TestEvenMedian(t *testing.T) {
	// 7 posts → 6 gaps (1..6 µs), 2 largest dropped → 4 kept: 1 2 3 4.
	posts := []uint64{0, 1, 3, 6, 10, 15, 21}
	s, err := FromPosts(posts, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Samples != 4 || s.Typical != 2.5 || s.Min != 1 || s.Max != 5 || s.Avg != 2.5 {
		t.Fatalf("%+v", s)
	}
}

func TestTooFewOrBad(t *testing.T) {
	for name, c := range map[string]struct {
		posts []uint64
		mhz   float64
	}{
		"three posts": {[]uint64{0, 1, 2}, 1000},
		"no clock":    {[]uint64{0, 1, 2, 3, 4}, 0},
		"backwards":   {[]uint64{0, 5, 3, 9, 12}, 1000},
	} {
		if _, err := FromPosts(c.posts, c.mhz, false); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestFromDurationsMatchesFromPosts(t *testing.T) {
	posts := []time.Duration{0, 2 * time.Microsecond, 5 * time.Microsecond, 6 * time.Microsecond, 10 * time.Microsecond, 11 * time.Microsecond}
	s, err := FromDurations(posts, false)
	if err != nil {
		t.Fatal(err)
	}
	// gaps 2 3 1 4 1 → sorted 1 1 2 3 4, 2 largest dropped → 1 1 2.
	if s.Samples != 3 || s.Min != 1 || s.Typical != 1 || s.Max != 3 || math.Abs(s.Avg-4.0/3) > 1e-12 {
		t.Fatalf("%+v", s)
	}
}
