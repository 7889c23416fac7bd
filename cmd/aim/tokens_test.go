package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokensStreamedEqualsStored: `aim amp` and `aim gd` write the same rows with streamed
// tokens as with stored ones, and on a device group (cpu:3 stored, cpu:2 streamed) as on one
// device (every column but the wall time and the device, to 1e-10 relative: the chunked and
// sharded sums move the rounding by about 1e-14), auto streams when --max-memory is below the
// stored need and says so, and the manifest records the mode used.
func TestTokensStreamedEqualsStored(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		cmd   []string
		below string // a --max-memory below the stored need and above the streamed one
	}{
		{[]string{"amp", "--D", "24", "--alpha", "0.1,0.2", "--seeds", "2", "--max-iter", "8"}, "100KiB"},               // 134 KiB stored
		{[]string{"gd", "--D", "16", "--alpha", "0.3", "--seeds", "1", "--max-iter", "30", "--restarts", "2"}, "50KiB"}, // 60 KiB stored
	} {
		cmd := tc.cmd
		csvOf := func(tag string, extra ...string) [][]string {
			out := filepath.Join(dir, cmd[0]+"-"+tag+".csv")
			args := withFlags(append([]string{cmd[0], "--quiet", "--device", "cpu", "--out", out, "--plot", ""}, cmd[1:]...), extra...)
			code, _, stderr := runAim(args...)
			if code != 0 {
				t.Fatalf("aim %s: status %d: %s", strings.Join(args, " "), code, stderr)
			}
			if tag == "auto" && !strings.Contains(stderr, "tokens streamed in chunks of") {
				t.Errorf("aim %s: auto did not say it streams: %s", cmd[0], stderr)
			}
			return readCSV(t, out)
		}
		stored := csvOf("stored", "--tokens", "stored")
		streamed := csvOf("streamed", "--tokens", "streamed", "--chunk", "13")
		auto := csvOf("auto", "--max-memory", tc.below)
		group := csvOf("group", "--device", "cpu:3", "--tokens", "stored")
		groupStreamed := csvOf("group-streamed", "--device", "cpu:2", "--tokens", "streamed", "--chunk", "7")
		col := csvColumns(stored[0])
		for i := 1; i < len(group); i++ {
			if group[i][col["device"]] != "cpu x3" || groupStreamed[i][col["device"]] != "cpu x2" {
				t.Errorf("%s row %d: device %q and %q, want cpu x3 and cpu x2", cmd[0], i, group[i][col["device"]], groupStreamed[i][col["device"]])
			}
		}
		for _, other := range [][][]string{streamed, auto, group, groupStreamed} {
			if len(other) != len(stored) {
				t.Fatalf("%s: %d rows streamed, %d stored", cmd[0], len(other), len(stored))
			}
			for i := 1; i < len(stored); i++ {
				for name, j := range col {
					if name == "seconds" || name == "device" || stored[i][j] == other[i][j] {
						continue
					}
					a, b := parseCell(t, stored[i][j]), parseCell(t, other[i][j])
					if d := a - b; d > 1e-10*a || -d > 1e-10*a {
						t.Errorf("%s row %d %s: stored %s, streamed %s", cmd[0], i, name, stored[i][j], other[i][j])
					}
				}
			}
		}
		var man map[string]any
		raw, err := os.ReadFile(filepath.Join(dir, cmd[0]+"-streamed.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &man); err != nil {
			t.Fatal(err)
		}
		params, _ := man["parameters"].(map[string]any)
		if params == nil {
			params = man
		}
		if params["tokens_used"] != "streamed" || params["chunk"] != 13.0 {
			t.Errorf("%s manifest: tokens_used %v, chunk %v", cmd[0], params["tokens_used"], params["chunk"])
		}
	}
}

// TestTokensBadInput: a malformed or too small --max-memory, an unknown --tokens and a bad
// device list (a GPU twice, cpu mixed with cuda, more devices than samples) exit 2, say why
// (with what each mode would need) and write nothing.
func TestTokensBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.csv")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tokens", "sometimes"}, []string{"--tokens \"sometimes\""}},
		{[]string{"--max-memory", "lots"}, []string{"--max-memory \"lots\"", "4GiB"}},
		{[]string{"--max-memory", "-3MiB"}, []string{"--max-memory"}},
		{[]string{"--max-memory", "2KiB"}, []string{"with streamed tokens in chunks of 1 samples", "stored:", "allowed by --max-memory"}},
		{[]string{"--tokens", "stored", "--max-memory", "100KiB"}, []string{"with stored tokens", "--tokens streamed needs"}},
		{[]string{"--chunk", "-1"}, []string{"--chunk -1"}},
		{[]string{"--device", "cuda:0,1,0"}, []string{"GPU 0 is listed twice"}},
		{[]string{"--device", "cpu,cuda:0"}, []string{"cannot mix cpu and cuda"}},
		{[]string{"--device", "cuda:0,cpu"}, []string{"cannot mix cpu and cuda"}},
		{[]string{"--device", "cpu:0"}, []string{"K >= 1"}},
		{[]string{"--device", "cpu:200", "--D", "20", "--alpha", "0.4"}, []string{"N = 160 samples, fewer than the 200 devices"}},
	} {
		args := withFlags([]string{"amp", "--quiet", "--device", "cpu", "--D", "24", "--alpha", "0.2", "--out", out, "--plot", filepath.Join(dir, "x.svg")}, tc.args...)
		code, _, stderr := runAim(args...)
		if code != 2 {
			t.Errorf("%v: status %d, want 2 (%s)", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: message %q lacks %q", tc.args, stderr, w)
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v: wrote %d files", tc.args, len(entries))
		}
	}
}
