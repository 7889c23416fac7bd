// This file draws the teachers and data sets of the AIM on a device, reproducibly from a seed
// (docs/theory/aim.md section 1).

package aim

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/rie"
	"github.com/aimtheory/aim/engine/stream"
)

// Params are the sizes and parameters of one AIM teacher and its data set.
type Params struct {
	D       int          // token dimension
	Alpha   float64      // N = floor(alpha D^2)
	Rho     float64      // R = floor(rho D)
	Channel channel.Spec // output channel, with T and beta
	Seed    uint64       // fixes W and X
	Teacher Teacher      // the law of S; the zero value is the paper's, MP(rho)
}

// Teacher is the law of the target S. The zero value is the paper's: S = W W^T / sqrt(R D) with
// W Gaussian (D x R), spectrum MP(rho). PowerLaw draws S = O diag(w) O^T with O Haar (the
// eigenvectors of a GOE draw from the seed's teacher stream) and w_k = c k^-Gamma for
// k = 1..R, 0 beyond, c such that (1/D) sum w_k^2 = 1: a target whose spectrum decays as a power
// law (the scaling-law targets of docs/theory/aim.md 4.1).
type Teacher struct {
	PowerLaw bool
	Gamma    float64 // the exponent gamma >= 0 of PowerLaw
}

// String returns "mp" or "powerlaw:GAMMA", the command line's --teacher.
func (t Teacher) String() string {
	if !t.PowerLaw {
		return "mp"
	}
	return fmt.Sprintf("powerlaw:%g", t.Gamma)
}

// Validate checks the power law's exponent.
func (t Teacher) Validate() error {
	if t.PowerLaw && (!(t.Gamma >= 0) || math.IsInf(t.Gamma, 0)) {
		return fmt.Errorf("teacher power law: gamma = %g, need a finite gamma >= 0", t.Gamma)
	}
	return nil
}

// Eigenvalues returns the D eigenvalues of a PowerLaw teacher of rank R, descending (the
// first R positive, the rest 0).
func (t Teacher) Eigenvalues(D, R int) rie.Eigenvalues {
	w := make(rie.Eigenvalues, D)
	norm := 0.0
	for k := 0; k < R; k++ {
		w[k] = math.Pow(float64(k+1), -t.Gamma)
		norm += w[k] * w[k]
	}
	for k := 0; k < R; k++ {
		w[k] *= math.Sqrt(float64(D) / norm)
	}
	return w
}

// Prior returns the teacher's law as the state evolutions' prior sides see it: MP(rho), or the
// power law's D eigenvalues (the theory at this D: a power law has no D-independent limit).
func (p Params) Prior() rie.Prior {
	if !p.Teacher.PowerLaw {
		return rie.MP{Rho: p.Rho}
	}
	return p.Teacher.Eigenvalues(p.D, p.R())
}

// N returns the number of samples floor(alpha D^2).
func (p Params) N() int { return int(math.Floor(p.Alpha * float64(p.D) * float64(p.D))) }

// R returns the rank floor(rho D) of W.
func (p Params) R() int { return int(math.Floor(p.Rho * float64(p.D))) }

// T returns the number of tokens.
func (p Params) T() int { return p.Channel.T }

// Validate checks the parameters before anything is allocated; the channel by its own rules
// (channel.Spec.Validate).
func (p Params) Validate() error {
	switch {
	case p.D < 2:
		return fmt.Errorf("D = %d: need D >= 2", p.D)
	case p.Channel.Validate() != nil:
		return p.Channel.Validate()
	case p.Teacher.Validate() != nil:
		return p.Teacher.Validate()
	case !(p.Alpha > 0) || math.IsInf(p.Alpha, 0):
		return fmt.Errorf("alpha = %g: need alpha > 0", p.Alpha)
	case !(p.Rho > 0) || math.IsInf(p.Rho, 0):
		return fmt.Errorf("rho = %g: need rho > 0", p.Rho)
	case p.N() < 1:
		return fmt.Errorf("alpha = %g at D = %d gives N = floor(alpha D^2) = 0 samples", p.Alpha, p.D)
	case p.R() < 1:
		return fmt.Errorf("rho = %g at D = %d gives R = floor(rho D) = 0", p.Rho, p.D)
	}
	return nil
}

// Bytes returns the device memory of the teacher and n samples of the data set (all N on one
// device, a shard in a group) while they are drawn: S, W and X S (D x D, D x R, n x T x D),
// X (n x T x D), and the indices and outputs (n x T x T each); a power-law teacher adds three
// D x D matrices and two D-vectors.
func (p Params) Bytes(n int) uint64 {
	D, N, T, R := uint64(p.D), uint64(n), uint64(p.T()), uint64(p.R())
	b := 8 * (D*D + D*R + 2*N*T*D + 2*N*T*T)
	if p.Teacher.PowerLaw {
		b += 8 * (3*D*D + 2*D) // the GOE draw, its symmetrisation and eigendecomposition
	}
	return b
}

// DataBytes returns the device memory of n samples of the data set once drawn: S, X and y.
func (p Params) DataBytes(n int) uint64 {
	D, N, T := uint64(p.D), uint64(n), uint64(p.T())
	return 8 * (D*D + N*T*D + N*T*T)
}

// Data is a teacher S and the samples [Lo, Hi) of its data set on a device: all N samples
// (Generate), or one member's shard of a device group (GenerateGroup). Sample mu of the shard
// is sample Lo + mu of the data set.
type Data struct {
	P   Params
	S   device.Buffer // D x D, S = W W^T / sqrt(R D)
	X   device.Buffer // n x T x D tokens (n = Hi - Lo), iid N(0, 1); nil when streamed
	Y   device.Buffer // n x T x T outputs y = g(h)
	TrS float64       // Tr S
	// Lo and Hi bound the samples held: 0 and N on one device.
	Lo, Hi int
	// Chunk is the number of samples per chunk of tokens when they are streamed (X nil): the
	// tokens of samples [lo, hi) are the normals stream.Data + lo T D ... of the seed's stream,
	// regenerated whenever they are needed (EachChunk). 0 when X is stored.
	Chunk int
}

// Samples returns the number of samples held, Hi - Lo.
func (d *Data) Samples() int { return d.Hi - d.Lo }

// Generate draws W (D x R) and X (N x T x D) from the seed's Gaussian stream and computes
// S = W W^T / sqrt(R D), the trace-centred indices h_mu = (X_mu S X_mu^T - Tr S I)/sqrt(D)
// (Gemm then TokenDots) and the outputs y_mu = g(h_mu), plus sqrt(Delta) xi_mu when the channel
// has label noise Delta (xi_mu from stream.AIMNoise). Memory stays O(N T D + D^2): no
// N x D x D tensor is formed.
func Generate(dev device.Device, p Params) (*Data, error) { return generate(dev, p, 0, p.N(), 0) }

// GenerateStreamed draws the same teacher and outputs as Generate with the same seed, but does
// not keep X: the tokens are drawn chunk by chunk samples at a time (chunk >= 1) to compute y,
// and regenerated by EachChunk whenever an algorithm needs them. Memory is
// O(chunk T D + N T^2 + D^2) (StreamedBytes).
func GenerateStreamed(dev device.Device, p Params, chunk int) (*Data, error) {
	if chunk < 1 {
		return nil, fmt.Errorf("streamed tokens: chunk of %d samples, need at least 1", chunk)
	}
	return generate(dev, p, 0, p.N(), chunk)
}

// GenerateGroup draws the same teacher and data set as Generate (chunk 0) or GenerateStreamed
// (chunk >= 1) with the same seed, sharded over the members of a device group: member j draws
// the teacher and the samples [lo_j, hi_j) of g.Shard (its tokens from their place in the
// stream), so parts[j] holds exactly the values of those samples on one device. The members
// draw concurrently when the group is Concurrent.
func GenerateGroup(g *device.Group, p Params, chunk int) ([]*Data, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if chunk < 0 {
		return nil, fmt.Errorf("streamed tokens: chunk of %d samples, need at least 1", chunk)
	}
	if g.Len() > p.N() {
		return nil, fmt.Errorf("a group of %d devices for N = %d samples: need at least one sample per device", g.Len(), p.N())
	}
	parts := make([]*Data, g.Len())
	err := g.Each(func(j int, dev device.Device) error {
		lo, hi := g.Shard(j, p.N())
		d, err := generate(dev, p, lo, hi, chunk)
		parts[j] = d
		return err
	})
	if err != nil {
		FreeGroup(g, parts)
		return nil, err
	}
	return parts, nil
}

// FreeGroup releases the buffers of GenerateGroup's parts (nil parts are skipped).
func FreeGroup(g *device.Group, parts []*Data) {
	for j, d := range parts {
		if d != nil {
			d.Free(g.Members[j])
		}
	}
}

// StreamedBytes returns the device memory of GenerateStreamed for n samples (all N on one
// device, a shard in a group) while it draws: S, W (D x D, D x R), the outputs (n x T x T), the
// buffer of the chunks' tokens (ChunkTokens) and, per chunk, their product with S and its
// indices (chunk T D + chunk T T).
func (p Params) StreamedBytes(n, chunk int) uint64 {
	D, N, T, R, C := uint64(p.D), uint64(n), uint64(p.T()), uint64(p.R()), uint64(min(chunk, n))
	return 8 * (D*D + D*R + N*T*T + uint64(ChunkTokens(p, n, chunk)) + C*T*D + C*T*T)
}

// generate draws the teacher and the samples [lo, hi), stored (chunk 0) or streamed.
func generate(dev device.Device, p Params, lo, hi, chunk int) (*Data, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	D, N, T, R := p.D, hi-lo, p.T(), p.R()
	chunk = min(chunk, N)
	c := chunk
	if c == 0 {
		c = N
	}
	sizes := []int{D * D, N * T * T, D * R, c * T * D, c * T * T}
	if chunk == 0 {
		sizes = append(sizes, N*T*D)
	}
	b, err := device.AllocAll(dev, sizes...)
	if err != nil {
		return nil, fmt.Errorf("teacher and data (D = %d, N = %d, T = %d): %w", D, N, T, err)
	}
	d := &Data{P: p, S: b[0], Y: b[1], Lo: lo, Hi: hi, Chunk: chunk}
	w, xs, h := b[2], b[3], b[4]
	if chunk == 0 {
		d.X = b[5]
	}
	defer device.FreeAll(dev, w, xs, h)
	fail := func(err error) (*Data, error) {
		d.Free(dev)
		return nil, fmt.Errorf("teacher and data: %w", err)
	}
	if p.Teacher.PowerLaw {
		if err := powerLawTeacher(dev, p, d.S); err != nil {
			return fail(err)
		}
	} else {
		if err := dev.GaussianFill(w, p.Seed, stream.Teacher, 1); err != nil {
			return fail(err)
		}
		if err := dev.Gemm(false, true, D, D, R, 1/math.Sqrt(float64(R)*float64(D)), w, w, 0, d.S); err != nil {
			return fail(err)
		}
	}
	tr, err := dev.SumDiag(d.S, 1, D)
	if err != nil {
		return fail(err)
	}
	d.TrS = tr
	var xc device.Buffer // the streamed chunks' tokens
	if chunk > 0 {
		if xc, err = dev.Alloc(ChunkTokens(p, N, chunk)); err != nil {
			return fail(err)
		}
		defer dev.Free(xc)
	} else if err := dev.GaussianFill(d.X, p.Seed, stream.Data+uint64(lo)*uint64(T*D), 1); err != nil {
		return fail(err)
	}
	err = d.EachChunk(dev, xc, func(lo, n int, x device.Buffer) error {
		y := device.MustView(d.Y, lo*T*T, n*T*T)
		return device.Seq(
			func() error { return Indices(dev, h, xs, x, d.S, tr, n, T, D) },
			func() error { return dev.ChannelOutput(p.Channel, y, h, n) },
			func() error { return addNoise(dev, p, y, h, d.Lo+lo, n) },
		)
	})
	if err != nil {
		return fail(err)
	}
	return d, nil
}

// powerLawTeacher writes S = O diag(w) O^T (Teacher.PowerLaw) into s: G Gaussian (D x D) from
// the seed's teacher stream, the GOE matrix G + G^T (as I G^T + G), its eigenvectors O, and w
// the power law's eigenvalues.
func powerLawTeacher(dev device.Device, p Params, s device.Buffer) error {
	D := p.D
	b, err := device.AllocAll(dev, D*D, D*D, D*D, D, D)
	if err != nil {
		return err
	}
	defer device.FreeAll(dev, b...)
	g, z, vecs, vals, w := b[0], b[1], b[2], b[3], b[4]
	return device.Seq(
		func() error { return dev.GaussianFill(g, p.Seed, stream.Teacher, 1) },
		func() error { return dev.Upload(vecs, make([]float64, D*D)) },
		func() error { return dev.AddDiag(vecs, 1, D, 1) }, // the identity, for the transpose
		func() error { return dev.Copy(z, g) },
		func() error { return dev.Gemm(false, true, D, D, D, 1, vecs, g, 1, z) },
		func() error { return dev.EighSym(vals, vecs, z, D) },
		func() error { return dev.Upload(w, p.Teacher.Eigenvalues(D, p.R())) },
		func() error { return dev.SpectralCompose(s, vecs, w, D) },
	)
}

// addNoise adds the label noise sqrt(Delta) xi (Delta = p.Channel.Noise; nothing when 0) to the
// outputs y of the samples [lo, lo + n) of the data set, xi drawn at stream.AIMNoise + lo T T
// of the seed's stream (so the noise of a sample does not depend on the chunks or the shards,
// and the noiseless draws of the seed are unchanged), with scratch (at least n T T) for xi.
func addNoise(dev device.Device, p Params, y, scratch device.Buffer, lo, n int) error {
	if p.Channel.Noise == 0 {
		return nil
	}
	tt := p.T() * p.T()
	xi, err := device.View(scratch, 0, n*tt)
	if err != nil {
		return err
	}
	return device.Seq(
		func() error {
			return dev.GaussianFill(xi, p.Seed, stream.AIMNoise+uint64(lo)*uint64(tt), math.Sqrt(p.Channel.Noise))
		},
		func() error { return dev.Axpby(y, 1, xi, 1) },
	)
}

// EachChunk calls f(lo, n, x) for the chunks of the held samples [lo, lo + n) in order (lo
// counts from the first held sample, Lo), with x their tokens (n x T x D): a view of X when it
// is stored (one chunk of all held samples), or the chunk regenerated from the seed's stream
// into xc (ChunkTokens values) when it is streamed. The tokens are the same values either way.
// On a device with a Prefetcher, xc holds two chunks and the next chunk is drawn into one while
// f uses the other: f must use the tokens only through x, and only until it returns.
func (d *Data) EachChunk(dev device.Device, xc device.Buffer, f func(lo, n int, x device.Buffer) error) (err error) {
	p := d.P
	N, T, D := d.Samples(), p.T(), p.D
	if d.Chunk == 0 {
		return f(0, N, d.X)
	}
	size := d.Chunk * T * D // the values of a full chunk
	// tokens returns the view of xc that holds the chunk at lo (in half half of xc).
	tokens := func(lo, half int) (device.Buffer, error) {
		return device.View(xc, half*size, min(d.Chunk, N-lo)*T*D)
	}
	offset := func(lo int) uint64 { return stream.Data + uint64(d.Lo+lo)*uint64(T*D) }
	pf := dev.Capabilities().Prefetcher
	if pf == nil || d.Chunk >= N || xc.Len() < 2*size {
		for lo := 0; lo < N; lo += d.Chunk {
			x, err := tokens(lo, 0)
			if err != nil {
				return err
			}
			if err := dev.GaussianFill(x, p.Seed, offset(lo), 1); err != nil {
				return err
			}
			if err := f(lo, min(d.Chunk, N-lo), x); err != nil {
				return err
			}
		}
		return nil
	}
	var wait func() error // the fill in flight
	start := func(lo, half int) error {
		x, err := tokens(lo, half)
		if err != nil {
			return err
		}
		wait, err = pf.GaussianFillAsync(x, p.Seed, offset(lo), 1)
		return err
	}
	defer func() { // a fill still in flight after an error
		if wait != nil {
			if werr := wait(); err == nil {
				err = werr
			}
		}
	}()
	if err := start(0, 0); err != nil {
		return err
	}
	for i, lo := 0, 0; lo < N; i, lo = i+1, lo+d.Chunk {
		w := wait
		wait = nil
		if err := w(); err != nil {
			return err
		}
		if next := lo + d.Chunk; next < N {
			if err := start(next, (i+1)%2); err != nil {
				return err
			}
		}
		x, err := tokens(lo, i%2)
		if err != nil {
			return err
		}
		if err := f(lo, min(d.Chunk, N-lo), x); err != nil {
			return err
		}
	}
	return nil
}

// ChunkTokens is the length of the buffer of EachChunk for n held samples in chunks of chunk
// (0: stored, no buffer): chunk T D for one chunk, twice that for more, so that a device with
// a Prefetcher draws the next chunk while the current one is used.
func ChunkTokens(p Params, n, chunk int) int {
	if chunk <= 0 {
		return 0
	}
	c := min(chunk, n) * p.T() * p.D
	if chunk < n {
		return 2 * c
	}
	return c
}

// ChunkTokens is the length of the buffer EachChunk needs for d (ChunkTokens of its samples
// and chunk).
func (d *Data) ChunkTokens() int { return ChunkTokens(d.P, d.Samples(), d.Chunk) }

// EachChunkSum is EachChunk for a pass that also sums a D x D matrix over the chunks: f(lo, n,
// x, out) writes the chunk's part into out, which is sum itself for the first chunk and part
// (a D x D scratch, nil when the tokens are stored: one chunk) for the others, each then added
// into sum (Axpby(sum, 1, part, 1)), in chunk order.
func (d *Data) EachChunkSum(dev device.Device, xc, sum, part device.Buffer, f func(lo, n int, x, out device.Buffer) error) error {
	return d.EachChunk(dev, xc, func(lo, n int, x device.Buffer) error {
		if lo == 0 {
			return f(lo, n, x, sum)
		}
		return device.Seq(
			func() error { return f(lo, n, x, part) },
			func() error { return dev.Axpby(sum, 1, part, 1) },
		)
	})
}

// Indices computes h_mu = (X_mu A X_mu^T - trA I)/sqrt(D) for the N samples of X (N x T x D)
// and a D x D matrix A with trace trA, using xa (N x T x D) as scratch: Gemm for X A, then
// TokenDots.
func Indices(dev device.Device, h, xa, x, a device.Buffer, trA float64, n, t, d int) error {
	return IndicesAt(dev, device.FP64, h, xa, x, a, trA, n, t, d)
}

// IndicesAt is Indices with the product X A computed at precision p (device.GemmAt); TokenDots,
// the trace and the scaling stay in float64. At device.FP64 it is Indices.
func IndicesAt(dev device.Device, p device.Precision, h, xa, x, a device.Buffer, trA float64, n, t, d int) error {
	if err := device.GemmAt(dev, p, false, false, n*t, d, d, 1, x, a, 0, xa); err != nil {
		return err
	}
	if err := dev.TokenDots(h, xa, x, n, t, d); err != nil {
		return err
	}
	if err := dev.AddDiag(h, n, t, -trA); err != nil {
		return err
	}
	return dev.Scal(h, 1/math.Sqrt(float64(d)))
}

// BackProject sets out = alpha sum_mu X_mu^T C_mu X_mu (D x D, symmetric) for n symmetric
// T x T matrices C_mu and the tokens x (n x T x D), with scratch of n T D values: at FP64
// through the device's QuadFormSummer where it has one (half the multiply-adds of a
// product), else TokenMix (scratch = C X, float64) then the product out = alpha X^T scratch at
// precision p (device.GemmAt). It is GAMP-RIE's back-projection and gradient descent's G_S.
func BackProject(dev device.Device, p device.Precision, out, c, x, scratch device.Buffer, n, t, d int, alpha float64) error {
	if q := dev.Capabilities().QuadFormSummer; q != nil && p == device.FP64 {
		return q.QuadFormSum(out, c, x, scratch, n, t, d, alpha)
	}
	if err := dev.TokenMix(scratch, c, x, n, t, d); err != nil {
		return err
	}
	return device.GemmAt(dev, p, true, false, d, d, n*t, alpha, x, scratch, 0, out)
}

// Work returns what the data and the steps GAMP-RIE and gradient descent share run on a
// device, for its Scratch (device.Device.Scratch), at precision p on a device that holds n
// samples and computes its products rows samples at a time (n on stored tokens, a chunk on
// streamed ones): the reductions over the n samples and over the D x D and n x T x T arrays,
// BackProject and IndicesAt on rows samples (QuadFormSum at FP64 where dev has it, products
// at precision p otherwise), and a power-law teacher's EighSym and SpectralCompose at order D.
// amp.Scratch and gd.Scratch add their own operations.
func Work(dev device.Device, p device.Precision, params Params, n, rows int) device.Work {
	D, T := params.D, params.T()
	w := device.Work{Samples: n, Reduce: max(D*D, n*T*T), Precision: p}
	if params.Teacher.PowerLaw {
		w.Eigh, w.Compose = D, D
	}
	if p != device.FP64 {
		w.Products = [][3]int{{rows * T, D, D}, {D, D, rows * T}}
	} else if dev.Capabilities().QuadFormSummer != nil {
		w.QuadForm = [3]int{rows, T, D}
	}
	return w
}

// Free releases the data's buffers.
func (d *Data) Free(dev device.Device) {
	device.FreeAll(dev, d.S, d.X, d.Y)
	d.S, d.X, d.Y = nil, nil, nil
}
