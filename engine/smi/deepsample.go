package smi

import (
	"fmt"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/internal/par"
	"github.com/aimtheory/aim/kernels"
)

// DeepSampler estimates the posterior moments of the L = 3 deep attention channel (the same
// integrals as DeepPosterior, docs/SMI.md 2.2) by importance sampling (kernels.DeepSampler,
// which states the rule), without bias in Z_out and with an error that it measures, where the
// cubature's error is a bias of unknown sign. The state evolution and GAMP run it in batches
// through SampleBatch (on a device, or its CPU twin); this type is one integral at a time.
//
// Measured (README, "What is computed"): against the cubature at ten times its budget, every
// mean within 4.5 standard errors plus that cubature's own error, broad and sharp, diagonal
// and correlated V (TestSampleAgainstCubature); over SE samples at a sharp last layer the
// product of two independent halves' means has the cubature's E[g_out^2] within its paired
// noise (TestSampleHalvesUnbiased). About 600 ns per draw.
//
// One DeepSampler per goroutine: it holds work space.
type DeepSampler struct {
	k   *kernels.DeepSampler
	out [kernels.DeepOut]float64
}

// SampleMoments are DeepMoments with the standard errors of the importance-sampling estimate.
type SampleMoments struct {
	DeepMoments
	MeanErr []float64 // P M: the delta-method standard error of each entry of Mean
	ESS     float64   // effective sample size (sum w)^2 / sum w^2
}

// NewSampler returns the importance sampler of the channel's posterior; it needs L = 3 and
// M = 2.
func (d *Deep) NewSampler() (*DeepSampler, error) {
	if err := d.sampled(); err != nil {
		return nil, err
	}
	return &DeepSampler{k: kernels.NewDeepSampler(d.C, d.Beta)}, nil
}

// sampled reports why the sampler does not apply to the channel, or nil.
func (d *Deep) sampled() error {
	if d.L != 3 || d.M != 2 {
		return fmt.Errorf("deep channel sampler: L = %d, M = %d: implemented for L = 3, M = 2", d.L, d.M)
	}
	return nil
}

// NewSampleMoments returns moments sized for the sampler.
func (d *Deep) NewSampleMoments() *SampleMoments {
	return &SampleMoments{DeepMoments: *d.NewMoments(), MeanErr: make([]float64, d.P()*d.M)}
}

// MinSampleESS is the effective sample size below which an estimate is flagged inexact
// (DeepMoments.Exact false).
const MinSampleESS = 10

// SampleNormals is the number of standard normals one draw takes.
const SampleNormals = kernels.DeepNormals

// Moments estimates the posterior moments of Z - omega given u, omega (3 x 2) and V (3 x 3,
// symmetric positive definite) from n = len(normals)/SampleNormals draws; normals are i.i.d.
// N(0, 1) (the caller's stream fixes them).
func (q *DeepSampler) Moments(m *SampleMoments, u, omega, V, normals []float64) error {
	n := len(normals) / SampleNormals
	if n < 2 {
		return fmt.Errorf("deep channel sampler: %d draws, need >= 2", n)
	}
	q.k.Moments(q.out[:], u, omega, V, normals)
	return m.set(q.out[:], n, V)
}

// set takes one result of kernels.DeepSampler (kernels.DeepOut values) from n draws; V is for
// the error message.
func (m *SampleMoments) set(out []float64, n int, V []float64) error {
	switch int(out[kernels.DeepOutStatus]) {
	case kernels.DeepOK:
	case kernels.DeepNotPD:
		return fmt.Errorf("deep channel sampler: V = %v is not positive definite", V)
	case kernels.DeepNoPoint:
		return fmt.Errorf("deep channel sampler: no draw of %d reached the output (Z_out estimate 0)", n)
	default:
		return fmt.Errorf("deep channel sampler: status %v", out[kernels.DeepOutStatus])
	}
	copy(m.Mean, out[kernels.DeepOutMean:kernels.DeepOutMean+deepPM])
	copy(m.Second, out[kernels.DeepOutSecond:kernels.DeepOutSecond+deepPM*deepPM])
	copy(m.MeanErr, out[kernels.DeepOutErr:kernels.DeepOutErr+deepPM])
	m.LogZ = out[kernels.DeepOutLogZ]
	m.ESS = out[kernels.DeepOutESS]
	m.Evals = n
	m.Exact = m.ESS >= MinSampleESS
	return nil
}

// deepPM is P M at L = 3, M = 2.
const deepPM = 6

// SampleBatch is a batch of L = 3 channel integrals for the importance sampler, run together
// (Run) on a device's sampler (device.DeepSampler: the GPU kernel deep_sample, or the CPU
// backend's twin) or, without a device, on the CPU twin kernels.DeepSampleBatch in this
// process: the same rule and the same normals, so the same estimates to rounding. Task t is
// (slot s, u, omega, V) (Set); its draws read the normals offset + s stride + k of the seed's
// stream.
type SampleBatch struct {
	In, Out []float64 // kernels.DeepIn and kernels.DeepOut values per task
	n       int
	c, beta float64
}

// NewSampleBatch returns a batch of n tasks of the channel's sampler (L = 3, M = 2).
func (d *Deep) NewSampleBatch(n int) (*SampleBatch, error) {
	if err := d.sampled(); err != nil {
		return nil, err
	}
	return &SampleBatch{In: make([]float64, n*kernels.DeepIn), Out: make([]float64, n*kernels.DeepOut), n: n, c: d.C, beta: d.Beta}, nil
}

// Len is the number of tasks.
func (b *SampleBatch) Len() int { return b.n }

// Set sets task t: its slot s < 2^53, u (M = 2), omega (3 x 2) and V (3 x 3).
func (b *SampleBatch) Set(t int, slot uint64, u, omega, V []float64) {
	task := b.In[t*kernels.DeepIn : (t+1)*kernels.DeepIn]
	task[0] = float64(slot)
	copy(task[1:3], u)
	copy(task[3:9], omega)
	copy(task[9:18], V)
}

// sampleBlock is the number of tasks per device call of Run (4.5 MB of device memory).
const sampleBlock = 1 << 13

// Run runs every task with draws >= 2 draws, the draws of slot s from the normals
// offset + s stride + k of seed's stream (offset and stride even, stride >= 4 draws), on dev's
// sampler, in blocks of up to 8192 tasks, or with dev nil on the CPU twin over workers
// goroutines (0: GOMAXPROCS). A device without the sampler is an error.
func (b *SampleBatch) Run(dev device.Device, draws int, seed, offset, stride uint64, workers int) error {
	if dev == nil {
		return kernels.DeepSampleBatch(b.Out, b.In, b.n, draws, b.c, b.beta, seed, offset, stride, par.Workers(workers), device.FillNormals)
	}
	ds := dev.Capabilities().DeepSampler
	if ds == nil {
		return fmt.Errorf("deep channel sampler: device %s has no DeepSampler", dev.Info().Name)
	}
	nb := min(b.n, sampleBlock)
	bufs, err := device.AllocAll(dev, nb*kernels.DeepIn, nb*kernels.DeepOut)
	if err != nil {
		return fmt.Errorf("deep channel sampler: %w", err)
	}
	defer device.FreeAll(dev, bufs...)
	for lo := 0; lo < b.n; lo += sampleBlock {
		k := min(sampleBlock, b.n-lo)
		in, out := device.MustView(bufs[0], 0, k*kernels.DeepIn), device.MustView(bufs[1], 0, k*kernels.DeepOut)
		if err := dev.Upload(in, b.In[lo*kernels.DeepIn:(lo+k)*kernels.DeepIn]); err != nil {
			return err
		}
		if err := ds.DeepSample(out, in, k, draws, b.c, b.beta, seed, offset, stride); err != nil {
			return err
		}
		if err := dev.Download(b.Out[lo*kernels.DeepOut:(lo+k)*kernels.DeepOut], out); err != nil {
			return err
		}
	}
	return nil
}

// Moments sets m from task t's result of Run with draws draws (an error for a task without an
// estimate).
func (b *SampleBatch) Moments(m *SampleMoments, t, draws int) error {
	task := b.In[t*kernels.DeepIn : (t+1)*kernels.DeepIn]
	return m.set(b.Out[t*kernels.DeepOut:(t+1)*kernels.DeepOut], draws, task[9:18])
}
