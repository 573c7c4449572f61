package bw

import (
	"fmt"
	"io"
)

// WriteTable prints results in perftest's layout, so operators can hold the
// two side by side. gbits selects Gb/s (perftest --report_gbits) over MB/s.
func WriteTable(w io.Writer, rep Report, gbits bool) {
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
