package aimjob

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
)

// Tokens chooses how a simulation holds the tokens X (N x T x D): stored on the device, or
// streamed, regenerated chunk by chunk from the seed's Philox stream whenever they are needed
// (the same values either way: aim.GenerateStreamed). Auto stores them when the largest run fits
// in the memory allowed and streams otherwise.
type Tokens struct {
	Mode      string // auto, stored or streamed
	Chunk     int    // samples per chunk when streamed (0: the largest that fits, at most maxChunk)
	MaxMemory string // cap on a run's device memory ("" for the device's free memory), e.g. 4GiB
}

// maxChunk is the largest automatic chunk: big enough that the chunk's products run at the BLAS
// rate, small enough for cache-friendly streams.
const maxChunk = 4096

func (t *Tokens) ValidateTokens() error {
	switch t.Mode {
	case "auto", "stored", "streamed":
	default:
		return job.Inputf("--tokens %q: want auto, stored or streamed", t.Mode)
	}
	if t.Chunk < 0 {
		return job.Inputf("--chunk %d: need 0 (automatic) or more samples", t.Chunk)
	}
	if t.MaxMemory != "" {
		if _, err := ParseBytes(t.MaxMemory); err != nil {
			return job.Inputf("--max-memory %q: %v", t.MaxMemory, err)
		}
	}
	return nil
}

// ParseBytes reads a memory size: a number of bytes with an optional unit B, KiB, MiB, GiB,
// TiB (powers of 1024) or kB, MB, GB, TB (powers of 1000), e.g. 4GiB, 512MiB, 1.5GB, 100000.
func ParseBytes(s string) (uint64, error) {
	units := []struct {
		suffix string
		scale  float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, scale := strings.TrimSpace(s), 1.0
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, scale = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v > 0) || math.IsInf(v*scale, 0) || v*scale >= math.MaxUint64 {
		return 0, fmt.Errorf("want a positive size such as 4GiB, 512MiB or 1.5GB")
	}
	return uint64(v * scale), nil
}

// TokenPlan is the token mode chosen for a grid of runs.
type TokenPlan struct {
	Streamed bool
	Chunk    int    // samples per chunk when streamed
	Students int    // aim gd: the students trained at once (gd.Options.Batch)
	Note     string // what was chosen and why, for stderr and the manifest
}

// PlanTokens chooses stored or streamed tokens for the grid's largest run on dev (each member
// of a group holding its shard of the samples), within min(free memory, --max-memory), and
// refuses a grid that fits in neither mode, saying what each would need. stored and streamed
// give a run's peak memory on one device in each mode for n samples (chunk samples at once).
func (c *Sim) PlanTokens(dev *job.Device, stored func(p aim.Params, n int) uint64, streamed func(p aim.Params, n, chunk int) uint64) (TokenPlan, error) {
	name := dev.Name()
	limit, what := dev.FreeBytes(), "available on "+name
	if dev.Group.Len() > 1 {
		what = "available on each device of " + name
	}
	if c.MaxMemory != "" {
		m, _ := ParseBytes(c.MaxMemory) // validated
		if m < limit {
			limit, what = m, "allowed by --max-memory"
		}
	}
	var big aim.Params // the run that needs the most stored memory
	needStored := uint64(0)
	for _, r := range c.rhos {
		for _, a := range c.alphas {
			if p := c.params(r, a, 0); stored(p, dev.ShardSamples(p)) > needStored {
				big, needStored = p, stored(p, dev.ShardSamples(p))
			}
		}
	}
	at, n := job.Where(big.D, big.Alpha), dev.ShardSamples(big)
	if dev.Group.Len() > big.N() {
		return TokenPlan{}, job.Inputf("%s has N = %d samples, fewer than the %d devices of %s", at, big.N(), dev.Group.Len(), name)
	}
	chunk := c.Chunk
	if chunk == 0 { // the largest chunk that fits, halving from maxChunk
		chunk = min(maxChunk, n)
		for chunk > 1 && streamed(big, n, chunk) > limit {
			chunk /= 2
		}
	}
	if c.Mode == "stored" || (c.Mode == "auto" && needStored <= limit) {
		if needStored > limit {
			return TokenPlan{}, job.Inputf("%s needs %s of %s memory with stored tokens, and %s is %s (--tokens streamed needs %s in chunks of %d samples)",
				at, device.Bytes(needStored), name, device.Bytes(limit), what, device.Bytes(streamed(big, n, chunk)), chunk)
		}
		return TokenPlan{Note: "tokens stored (" + device.Bytes(needStored) + " for the largest run)"}, nil
	}
	if need := streamed(big, n, chunk); need > limit {
		return TokenPlan{}, job.Inputf("%s needs %s of %s memory with streamed tokens in chunks of %d samples (stored: %s), and %s is %s",
			at, device.Bytes(need), name, chunk, device.Bytes(needStored), device.Bytes(limit), what)
	}
	why := "--tokens streamed"
	if c.Mode == "auto" {
		why = "stored would need " + device.Bytes(needStored) + ", " + device.Bytes(limit) + " is " + what
	}
	return TokenPlan{Streamed: true, Chunk: chunk, Note: fmt.Sprintf("tokens streamed in chunks of %d samples, %s for the largest run (%s)",
		chunk, device.Bytes(streamed(big, n, chunk)), why)}, nil
}

// Generate draws one run's teacher and data in the plan's mode, sharded over the group.
func (pl TokenPlan) Generate(dev *job.Device, p aim.Params) ([]*aim.Data, error) {
	chunk := 0
	if pl.Streamed {
		chunk = pl.Chunk
	}
	return aim.GenerateGroup(dev.Group, p, chunk)
}

// StreamedPeak is a run's peak memory on streamed tokens on a device holding n samples: drawing
// the data (aim.Params.StreamedBytes), or holding S and y (D x D, n x T x T) beside the
// algorithm's buffers (algo).
func StreamedPeak(p aim.Params, n, chunk int, algo uint64) uint64 {
	D, N, T := uint64(p.D), uint64(n), uint64(p.T())
	return max(p.StreamedBytes(n, chunk), 8*(D*D+N*T*T)+algo)
}

// StoredPeak is a run's peak memory on stored tokens on a device holding n samples: drawing the
// data (aim.Params.Bytes), or holding them (DataBytes) beside the algorithm's buffers (algo).
func StoredPeak(p aim.Params, n int, algo uint64) uint64 { return max(p.Bytes(n), p.DataBytes(n)+algo) }
