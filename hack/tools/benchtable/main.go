// Command benchtable reads the RESULT lines of hack/guest-bench.sh and prints
// perftest vs rdmaprobe per op/size/QPs with medians and the ratio. It exits
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
	missing := 0
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 8 || f[0] != "RESULT" {
			continue
		}
		b, _ := strconv.Atoi(f[3])
		q, _ := strconv.Atoi(f[4])
		m, _ := strconv.Atoi(f[5])
		v, err := strconv.ParseFloat(f[7], 64)
		if err != nil || v <= 0 {
			missing++
			continue
		}
		k := key{f[2], b, q, m}
		if runs[k] == nil {
			runs[k] = map[string][]float64{}
		}
		runs[k][f[1]] = append(runs[k][f[1]], v)
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
	table.Header("op", "bytes", "qps", "cq-mod", "runs", "perftest MB/s (median)", "rdmaprobe MB/s (median)", "ratio ours/perftest")
	for _, k := range keys {
		pt, _ := stats.Median(runs[k]["perftest"])
		rp, _ := stats.Median(runs[k]["rdmaprobe"])
		ratio := "n/a"
		if pt > 0 && rp > 0 {
			ratio = fmt.Sprintf("%.3f", rp/pt)
		}
		_ = table.Append(k.op, strconv.Itoa(k.bytes), strconv.Itoa(k.qps), strconv.Itoa(k.cqMod),
			fmt.Sprintf("%d/%d", len(runs[k]["perftest"]), len(runs[k]["rdmaprobe"])),
			fmt.Sprintf("%.2f", pt), fmt.Sprintf("%.2f", rp), ratio)
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
