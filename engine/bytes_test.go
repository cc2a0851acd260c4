package engine

import "testing"

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"},
		{1, "1 byte"},
		{12, "12 bytes"},
		{1023, "1023 bytes"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{300 << 10, "300 KiB"},
		{1<<20 - 512<<10, "512 KiB"},
		{1<<20 - 513, "1023.5 KiB"},
		{1<<20 - 512, "1.0 MiB"}, // would round to 1024.0 KiB
		{1 << 20, "1 MiB"},
		{3 << 19, "1.5 MiB"},
		{8 << 20, "8 MiB"},
		{64<<20 + 1, "64.0 MiB"},
		{100_000_000, "95.4 MiB"},
		{1<<30 - 1<<19, "1.0 GiB"},
		{1 << 30, "1 GiB"},
		{3 << 29, "1.5 GiB"},
		{4 << 40, "4096 GiB"},
	}
	for _, tt := range tests {
		if got := FormatBytes(tt.n); got != tt.want {
			t.Errorf("FormatBytes(%d) = %q; want %q", tt.n, got, tt.want)
		}
	}
}
