package aimjob

import "testing"

// TestParseBytes checks sizes in binary and decimal units against their values, and refusals.
func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{
		"4GiB": 4 << 30, "512MiB": 512 << 20, "1.5GB": 1_500_000_000, "100000": 100000,
		"64 KiB": 64 << 10, "2kB": 2000, "3B": 3, "1TiB": 1 << 40,
	} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "-3MiB", "0", "4XB", "NaNGiB", "1e30TiB"} {
		if got, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", bad, got)
		}
	}
}
