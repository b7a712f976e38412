package harness

import "testing"

func TestPeakFromCPUInfo(t *testing.T) {
	info := "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\ncpu MHz\t\t: 2300.000\ncache size\t: 16 MB\n" +
		"processor\t: 1\ncpu MHz\t\t: 2100.000\n"
	// The first CPU's clock: 2 cores × 16 flops/cycle × 2.3 GHz.
	peak, ghz := peakFromCPUInfo(info, 2)
	if peak != 2*16*2.3 || ghz != 2.3 {
		t.Errorf("peak %v GFLOP/s at %v GHz, want 73.6 at 2.3", peak, ghz)
	}
	for _, bad := range []string{"", "model name\t: x\n", "cpu MHz\t: fast\n"} {
		if peak, ghz := peakFromCPUInfo(bad, 1); peak != 0 || ghz != 0 {
			t.Errorf("%q: peak %v at %v GHz, want 0 and 0", bad, peak, ghz)
		}
	}
}
