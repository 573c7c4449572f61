package bw

import (
	"fmt"
	"io"
)

// WriteTable prints results in perftest's layout, so operators can hold the
// two side by side. gbits selects Gb/s (perftest --report_gbits) over MB/s.
func WriteTable(w io.Writer, rep Report, gbits bool) {
	if rep.Params.Latency {
		writeLatencyTable(w, rep)
		return
	}
	unit := "MB/sec"
	if gbits {
		unit = "Gb/sec"
	}
	fmt.Fprintf(w, " RDMA_%s BW (rdmaprobe)  device %s port %d  link %s  rate %.0f Gb/s  mtu %d  qps %d  tx depth %d\n",
		upper(string(rep.Params.Op)), rep.Device.Name, rep.Device.Port, rep.Device.LinkLayer, rep.Device.RateGbps,
		rep.Device.MTU, rep.Params.QPs, rep.Params.TxDepth)
	fmt.Fprintf(w, " %-10s %-14s BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n", "#bytes", "#iterations", unit, unit)
	for _, r := range rep.Results {
		f := r.Total
		peak, avg := f.PeakMBps, f.AvgMBps
		if gbits {
			peak, avg = f.PeakGbps, f.AvgGbps
		}
		fmt.Fprintf(w, " %-10d %-14d %-18.2f %-20.2f %.6f\n", f.Bytes, f.Iterations, peak, avg, f.MsgRateMpps)
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

// writeLatencyTable is ib_write_lat / ib_read_lat's table.
func writeLatencyTable(w io.Writer, rep Report) {
	fmt.Fprintf(w, " RDMA_%s latency (rdmaprobe)  device %s port %d  link %s  mtu %d\n",
		upper(string(rep.Params.Op)), rep.Device.Name, rep.Device.Port, rep.Device.LinkLayer, rep.Device.MTU)
	fmt.Fprintf(w, " %-8s %-12s %-12s %-12s %-14s %-12s %-14s %-20s %s\n", "#bytes", "#iterations", "t_min[usec]", "t_max[usec]",
		"t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]")
	for _, r := range rep.Results {
		l := r.Total.Latency
		if l == nil {
			fmt.Fprintf(w, " %-8d %-12d (no latency measured)\n", r.Total.Bytes, r.Total.Iterations)
			continue
		}
		fmt.Fprintf(w, " %-8d %-12d %-12.2f %-12.2f %-14.2f %-12.2f %-14.2f %-20.2f %.2f\n", r.Total.Bytes, r.Total.Iterations,
			l.Min, l.Max, l.Typical, l.Avg, l.Stdev, l.P99, l.P999)
	}
}
