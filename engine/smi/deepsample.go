package smi

import (
	"fmt"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/internal/par"
)

// DeepSampler estimates the posterior moments of the deep attention channel at L = 3 or 4
// (M = 2; the same integrals as DeepPosterior, docs/theory/smi.md 2.2) by importance sampling
// (channel.DeepSampler, which states the rule), without bias in Z_out and with an error that
// it measures, where the cubature's error is a bias of unknown sign. At L = 4 (6 dimensions)
// there is no cubature. The state evolution and GAMP run it in batches through SampleBatch (on
// a device, or its CPU twin); this type is one integral at a time.
//
// Measured (docs/validation/smi-channel.md): against the cubature at ten times its budget, every
// mean within 4.5 standard errors plus that cubature's own error, broad and sharp, diagonal
// and correlated V (TestSampleAgainstCubature, L = 2 and 3); at L = 4 against the prior alone
// at 2^20 draws (TestSampleL4); over SE samples at a sharp last layer the product of two
// independent halves' means has the cubature's E[g_out^2] within its paired noise
// (TestSampleHalvesUnbiased). About 600 ns per draw at L = 3.
//
// One DeepSampler per goroutine: it holds work space.
type DeepSampler struct {
	k   *channel.DeepSampler
	L   int
	out []float64
}

// SampleMoments are DeepMoments with the standard errors of the importance-sampling estimate.
type SampleMoments struct {
	DeepMoments
	MeanErr []float64 // P M: the delta-method standard error of each entry of Mean
	ESS     float64   // effective sample size (sum w)^2 / sum w^2
}

// NewSampler returns the importance sampler of the channel's posterior; it needs M = 2 and
// 2 <= L <= MaxSampledLayers.
func (d *Deep) NewSampler() (*DeepSampler, error) {
	if err := d.CheckPosterior(true); err != nil {
		return nil, err
	}
	return &DeepSampler{k: channel.NewDeepSampler(d.L, d.C, d.Beta), L: d.L, out: make([]float64, channel.DeepOut(d.L))}, nil
}

// NewSampleMoments returns moments sized for the sampler.
func (d *Deep) NewSampleMoments() *SampleMoments {
	return &SampleMoments{DeepMoments: *d.NewMoments(), MeanErr: make([]float64, d.P()*d.M)}
}

// MinSampleESS is the effective sample size below which an estimate is flagged inexact
// (DeepMoments.Exact false).
const MinSampleESS = 10

// SampleNormals returns the number of standard normals one draw takes at L layers.
func SampleNormals(L int) int { return channel.DeepNormals(L) }

// Moments estimates the posterior moments of Z - omega given u, omega (L x 2) and V (L x L,
// symmetric positive definite) from n = len(normals)/SampleNormals(L) draws; normals are
// i.i.d. N(0, 1) (the caller's stream fixes them).
func (q *DeepSampler) Moments(m *SampleMoments, u, omega, V, normals []float64) error {
	n := len(normals) / SampleNormals(q.L)
	if n < 2 {
		return fmt.Errorf("deep channel sampler: %d draws, need >= 2", n)
	}
	q.k.Moments(q.out, u, omega, V, normals)
	return m.set(q.out, q.L, n, V)
}

// set takes one result of channel.DeepSampler at L layers (channel.DeepOut(L) values) from n
// draws; V is for the error message.
func (m *SampleMoments) set(out []float64, L, n int, V []float64) error {
	switch st := out[channel.DeepOutStatus(L)]; st {
	case channel.DeepOK:
	case channel.DeepNotPD:
		return fmt.Errorf("deep channel sampler: V = %v is not positive definite", V)
	case channel.DeepNoPoint:
		return fmt.Errorf("deep channel sampler: no draw of %d reached the output (Z_out estimate 0)", n)
	default:
		return fmt.Errorf("deep channel sampler: status %v", st)
	}
	pm := 2 * L
	copy(m.Mean, out[:pm])
	copy(m.Second, out[channel.DeepOutSecond(L):channel.DeepOutSecond(L)+pm*pm])
	copy(m.MeanErr, out[channel.DeepOutErr(L):channel.DeepOutErr(L)+pm])
	m.LogZ = out[channel.DeepOutLogZ(L)]
	m.ESS = out[channel.DeepOutESS(L)]
	m.Evals = n
	m.Exact = m.ESS >= MinSampleESS
	return nil
}

// SampleBatch is a batch of channel integrals for the importance sampler (L = 2 to
// MaxSampledLayers), run together (Run) on a device's sampler (device.DeepSampler: the GPU
// kernel deep_sample, or the CPU backend's twin) or, without a device, on the CPU twin
// channel.DeepSampleBatch in this process: the same rule and the same normals, so the same
// estimates to rounding. Task t is (slot s, u, omega, V) (Set); its draws read the normals
// offset + s stride + k of the seed's stream.
type SampleBatch struct {
	In, Out []float64 // channel.DeepIn(L) and channel.DeepOut(L) values per task
	n, L    int
	c, beta float64
}

// NewSampleBatch returns a batch of n tasks of the channel's sampler (M = 2,
// 2 <= L <= MaxSampledLayers).
func (d *Deep) NewSampleBatch(n int) (*SampleBatch, error) {
	if err := d.CheckPosterior(true); err != nil {
		return nil, err
	}
	return &SampleBatch{In: make([]float64, n*channel.DeepIn(d.L)), Out: make([]float64, n*channel.DeepOut(d.L)), n: n, L: d.L,
		c: d.C, beta: d.Beta}, nil
}

// Len is the number of tasks.
func (b *SampleBatch) Len() int { return b.n }

// Set sets task t: its slot s < 2^53, u (M = 2), omega (L x 2) and V (L x L).
func (b *SampleBatch) Set(t int, slot uint64, u, omega, V []float64) {
	nin, L := channel.DeepIn(b.L), b.L
	task := b.In[t*nin : (t+1)*nin]
	task[0] = float64(slot)
	copy(task[1:3], u)
	copy(task[3:3+2*L], omega)
	copy(task[3+2*L:], V)
}

// sampleBlock is the number of tasks per device call of Run (at most 6 MB of device memory).
const sampleBlock = 1 << 13

// Run runs every task with draws >= 2 draws, the draws of slot s from the normals
// offset + s stride + k of seed's stream (offset and stride even, stride >= SampleNormals(L)
// draws), on dev's sampler, in blocks of up to 8192 tasks, or with dev nil on the CPU twin over
// workers goroutines (0: GOMAXPROCS). A device without the sampler is an error.
func (b *SampleBatch) Run(dev device.Device, draws int, seed, offset, stride uint64, workers int) error {
	if dev == nil {
		return channel.DeepSampleBatch(b.Out, b.In, b.n, b.L, draws, b.c, b.beta, seed, offset, stride, par.Workers(workers), device.FillNormals)
	}
	ds := dev.Capabilities().DeepSampler
	if ds == nil {
		return fmt.Errorf("deep channel sampler: device %s has no DeepSampler", dev.Info().Name)
	}
	nin, nout := channel.DeepIn(b.L), channel.DeepOut(b.L)
	nb := min(b.n, sampleBlock)
	bufs, err := device.AllocAll(dev, nb*nin, nb*nout)
	if err != nil {
		return fmt.Errorf("deep channel sampler: %w", err)
	}
	defer device.FreeAll(dev, bufs...)
	for lo := 0; lo < b.n; lo += sampleBlock {
		k := min(sampleBlock, b.n-lo)
		in, out := device.MustView(bufs[0], 0, k*nin), device.MustView(bufs[1], 0, k*nout)
		if err := dev.Upload(in, b.In[lo*nin:(lo+k)*nin]); err != nil {
			return err
		}
		if err := ds.DeepSample(out, in, k, b.L, draws, b.c, b.beta, seed, offset, stride); err != nil {
			return err
		}
		if err := dev.Download(b.Out[lo*nout:(lo+k)*nout], out); err != nil {
			return err
		}
	}
	return nil
}

// Moments sets m from task t's result of Run with draws draws (an error for a task without an
// estimate).
func (b *SampleBatch) Moments(m *SampleMoments, t, draws int) error {
	nin, nout := channel.DeepIn(b.L), channel.DeepOut(b.L)
	return m.set(b.Out[t*nout:(t+1)*nout], b.L, draws, b.In[t*nin+3+2*b.L:(t+1)*nin])
}
