package harness

import (
	"os"
	"strconv"
	"strings"
)

// PeakGFLOPS returns the double-precision peak of the given number of cores,
// counting two 4-wide fused multiply-add units (16 flops per cycle) at the
// clock /proc/cpuinfo reports for its first CPU, and that clock in GHz; both
// are 0 if the clock cannot be read.
func PeakGFLOPS(cores int) (peak, ghz float64) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0, 0
	}
	return peakFromCPUInfo(string(b), cores)
}

// peakFromCPUInfo is PeakGFLOPS for the text of /proc/cpuinfo.
func peakFromCPUInfo(cpuinfo string, cores int) (peak, ghz float64) {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				ghz = mhz / 1e3
				return float64(cores) * 16 * ghz, ghz
			}
		}
	}
	return 0, 0
}
