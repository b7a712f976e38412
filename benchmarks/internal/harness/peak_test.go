package harness

import "testing"

func TestPeakFromCPUInfo(t *testing.T) {
	info := "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\ncpu MHz\t\t: 2300.000\ncache size\t: 16 MB\n" +
		"processor\t: 1\ncpu MHz\t\t: 2100.000\n"
	// The first CPU's clock: 2 cores × 16 flops/cycle × 2.3 GHz.
	peak, ghz, lanes := peakFromCPUInfo(info, 2)
	if peak != 2*16*2.3 || ghz != 2.3 || lanes != 4 {
		t.Errorf("peak %v GFLOP/s at %v GHz with %d lanes, want 73.6 at 2.3 with 4", peak, ghz, lanes)
	}
	// AVX-512 in the first CPU's flags: 8-wide units, 32 flops per cycle.
	info512 := "processor\t: 0\ncpu MHz\t\t: 2000.000\nflags\t\t: fpu avx2 fma avx512f avx512dq\n"
	if peak, ghz, lanes := peakFromCPUInfo(info512, 1); peak != 32*2.0 || ghz != 2.0 || lanes != 8 {
		t.Errorf("AVX-512: peak %v GFLOP/s at %v GHz with %d lanes, want 64 at 2 with 8", peak, ghz, lanes)
	}
	for _, bad := range []string{"", "model name\t: x\n", "cpu MHz\t: fast\n"} {
		if peak, ghz, _ := peakFromCPUInfo(bad, 1); peak != 0 || ghz != 0 {
			t.Errorf("%q: peak %v at %v GHz, want 0 and 0", bad, peak, ghz)
		}
	}
}
