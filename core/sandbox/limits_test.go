package sandbox

import (
	"runtime"
	"testing"
)

func TestAmountOf(t *testing.T) {
	const total = 24 << 30
	for _, tc := range []struct {
		a    Amount
		def  int
		want int64
	}{
		{Amount{}, 50, 12 << 30},
		{Amount{Percent: 25}, 50, 6 << 30},
		{Amount{Bytes: 512 << 20, Percent: 25}, 50, 512 << 20},
		{Amount{Percent: 33}, 50, (total * 33 / 100) &^ 4095},
	} {
		if got := tc.a.Of(total, tc.def); got != tc.want || got%4096 != 0 && tc.a.Bytes == 0 {
			t.Errorf("%+v.Of(%d, %d) = %d, want %d", tc.a, int64(total), tc.def, got, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		8 << 30: "8GiB", 512 << 20: "512MiB", 3 << 10: "3KiB", 1 << 40: "1TiB",
		12652367872: "11.8GiB", 1572864 + 1: "1.5MiB", 1000: "1000B",
	} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	got := Limits{CPUWeight: 7}.WithDefaults()
	if d := (Limits{}).WithDefaults().CPUWeight; d != min(10000, 100*runtime.NumCPU()) {
		t.Errorf("default cpu weight %d", d)
	}
	want := Limits{Processes: DefaultProcesses, Memory: Amount{Percent: DefaultMemoryPercent}, CPUWeight: 7, Tmp: Amount{Percent: DefaultTmpPercent}}
	if got != want {
		t.Errorf("WithDefaults = %+v, want %+v", got, want)
	}
}
