package podrun

import (
	"strings"
	"sync"
	"testing"
)

// Two streams written at once in odd chunks (as the executor's copy
// goroutines do) come out as whole lines: every line of each stream
// intact, each stream's lines in their order, a last line without a
// newline kept.
func TestLineMergerKeepsLinesWhole(t *testing.T) {
	m := &lineMerger{}
	out, errs := m.stream(), m.stream()
	var want []string
	write := func(s *lineStream, prefix string, wg *sync.WaitGroup) {
		defer wg.Done()
		var text strings.Builder
		for i := range 200 {
			text.WriteString(prefix + strings.Repeat("x", i%37) + "\n")
		}
		b := []byte(text.String())
		for len(b) > 0 {
			n := min(len(b), 7)
			if _, err := s.Write(b[:n]); err != nil {
				t.Error(err)
			}
			b = b[n:]
		}
	}
	for i := range 200 {
		want = append(want, "out"+strings.Repeat("x", i%37), "err"+strings.Repeat("x", i%37))
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go write(out, "out", &wg)
	go write(errs, "err", &wg)
	wg.Wait()
	if _, err := out.Write([]byte(`{"schema":2}`)); err != nil {
		t.Fatal(err)
	}
	out.flush()
	errs.flush()
	lines := strings.Split(strings.TrimSuffix(m.String(), "\n"), "\n")
	if len(lines) != 401 || lines[400] != `{"schema":2}` {
		t.Fatalf("%d lines, last %q; want 401, the unterminated envelope last", len(lines), lines[len(lines)-1])
	}
	var gotOut, gotErr []string
	for _, l := range lines[:400] {
		switch {
		case strings.HasPrefix(l, "out") && strings.Trim(l[3:], "x") == "":
			gotOut = append(gotOut, l)
		case strings.HasPrefix(l, "err") && strings.Trim(l[3:], "x") == "":
			gotErr = append(gotErr, l)
		default:
			t.Fatalf("a line cut or mixed: %q", l)
		}
	}
	for i := range 200 {
		if gotOut[i] != want[2*i] || gotErr[i] != want[2*i+1] {
			t.Fatalf("line %d out of order: %q %q", i, gotOut[i], gotErr[i])
		}
	}
}
