package harness

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// PeakGFLOPS returns the double-precision peak of the given number of cores,
// counting two fused multiply-add units of lanes float64 lanes each (8
// where the first CPU's flags in /proc/cpuinfo list avx512f, which
// permlab's kernels use, else 4) at the clock /proc/cpuinfo reports for
// that CPU, and that clock in GHz; peak and ghz are 0 if the clock cannot
// be read. Some CPUs with AVX-512 have one 8-wide unit, not two, and then
// the peak is half this.
func PeakGFLOPS(cores int) (peak, ghz float64, lanes int) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0, 0, 4
	}
	return peakFromCPUInfo(string(b), cores)
}

// peakFromCPUInfo is PeakGFLOPS for the text of /proc/cpuinfo.
func peakFromCPUInfo(cpuinfo string, cores int) (peak, ghz float64, lanes int) {
	lanes = 4
	seen := 0 // "processor" lines: only the first CPU's are read
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "processor":
			seen++
		case "flags":
			if seen <= 1 && slices.Contains(strings.Fields(v), "avx512f") {
				lanes = 8
			}
		case "cpu MHz":
			if seen <= 1 && ghz == 0 {
				if mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					ghz = mhz / 1e3
				}
			}
		}
	}
	return float64(cores) * 4 * float64(lanes) * ghz, ghz, lanes
}
