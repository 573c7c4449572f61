// Command benchtable reads the RESULT and RETRIES lines of
// hack/guest-bench.sh and prints perftest vs rdmaprobe per op/size/QPs with
// medians, the ratio, and the median count of rxe retransmission events per
// run for each tool (rxe under TCG times out spuriously; a run that did pays
// up to 67 ms a time, which is most of the run-to-run spread). It exits
// non-zero when a run produced no number.
package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/montanaflynn/stats"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

type key struct {
	op                string
	bytes, qps, cqMod int
}

func main() {
	runs := map[key]map[string][]float64{}
	retries := map[key]map[string][]float64{}
	missing := 0
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 8 || (f[0] != "RESULT" && f[0] != "RETRIES") {
			continue
		}
		b, _ := strconv.Atoi(f[3])
		q, _ := strconv.Atoi(f[4])
		m, _ := strconv.Atoi(f[5])
		v, err := strconv.ParseFloat(f[7], 64)
		k := key{f[2], b, q, m}
		switch {
		case f[0] == "RETRIES":
			if err == nil {
				add(retries, k, f[1], v)
			}
		case err != nil || v <= 0:
			missing++
		default:
			add(runs, k, f[1], v)
		}
	}
	keys := make([]key, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].op != keys[j].op {
			return keys[i].op > keys[j].op
		}
		if keys[i].bytes != keys[j].bytes {
			return keys[i].bytes < keys[j].bytes
		}
		if keys[i].qps != keys[j].qps {
			return keys[i].qps < keys[j].qps
		}
		return keys[i].cqMod < keys[j].cqMod
	})
	// Header auto-format would turn "Gb/s" into "GB / S".
	table := tablewriter.NewTable(os.Stdout, tablewriter.WithConfig(
		tablewriter.NewConfigBuilder().WithHeaderAutoFormat(tw.Off).Build()))
	table.Header("op", "bytes", "qps", "cq-mod", "runs", "perftest MB/s (median)", "rdmaprobe MB/s (median)", "ratio ours/perftest", "rxe retries perftest/ours (median)")
	for _, k := range keys {
		pt, _ := stats.Median(runs[k]["perftest"])
		rp, _ := stats.Median(runs[k]["rdmaprobe"])
		ratio := "n/a"
		if pt > 0 && rp > 0 {
			ratio = fmt.Sprintf("%.3f", rp/pt)
		}
		_ = table.Append(k.op, strconv.Itoa(k.bytes), strconv.Itoa(k.qps), strconv.Itoa(k.cqMod),
			fmt.Sprintf("%d/%d", len(runs[k]["perftest"]), len(runs[k]["rdmaprobe"])),
			fmt.Sprintf("%.2f", pt), fmt.Sprintf("%.2f", rp), ratio, retriesText(retries[k]))
	}
	if err := table.Render(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if missing > 0 || len(keys) == 0 {
		fmt.Fprintf(os.Stderr, "benchtable: %d runs produced no bandwidth figure\n", missing)
		os.Exit(1)
	}
}

// add appends v to the samples of tool at k.
func add(m map[key]map[string][]float64, k key, tool string, v float64) {
	if m[k] == nil {
		m[k] = map[string][]float64{}
	}
	m[k][tool] = append(m[k][tool], v)
}

func retriesText(m map[string][]float64) string {
	if len(m["perftest"]) == 0 || len(m["rdmaprobe"]) == 0 {
		return "n/a"
	}
	pt, _ := stats.Median(m["perftest"])
	rp, _ := stats.Median(m["rdmaprobe"])
	return fmt.Sprintf("%.0f / %.0f", pt, rp)
}
