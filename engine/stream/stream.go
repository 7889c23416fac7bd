// Package stream is the one registry of the ranges that the engine draws from a seed's Gaussian
// stream (device.NormalAt, the counter-based Philox specification shared by Go and CUDA).
//
// One seed fixes one experiment on every device: the teacher, the data, the test sets and the
// algorithms' random starts each read their own disjoint range of the stream of that seed, at
// the offsets below, so that adding a draw to one of them can never move another. A new draw
// gets a new name here, with the size that bounds its range; nothing else in the engine writes a
// stream offset as a number.
//
// The layout of one seed's stream, in normals:
//
//	[0, 2^52)                      Teacher: the teacher's weights (AIM W, D x R; SMI W*, P x D)
//	[2^52, 2^52 + 2^51)            Data: the training tokens (AIM X, N x T x D; SMI X, N x M x D)
//	[2^52 + 2^51, 2^52 + 2^51 + 2^50)  SMISGDTest: the SMI SGD student's test tokens
//	[2^52 + 2^51 + 2^50, 2^53)     SMIAMPTest: the SMI GAMP's test tokens
//	[2^53, 2^53 + k 2^40 ...)      Init, Restart(k): an algorithm's random start (AIM GAMP-RIE's
//	                               W0, GD restart k's W, SMI GAMP's and SGD's starts)
//	[2^60, 2^60 + 2^20)            SMISEShift: the Cranley-Patterson shift of the SMI SE's
//	                               quasi-Monte Carlo points
//	[2^60 + 2^40, 2^61)            SMISEDraws: the SMI SE's importance-sampling draws of the
//	                               channel integrals (SMISEDraw: 2^24 normals per sample half)
//	[2^61, 2^62)                   SMINoise: the SMI data's pre-activation noise (N x P x M)
//	[2^62, 2^62 + 2^61)            AIMNoise: the AIM data's label noise (N x T x T), so that the
//	                               noiseless data of a seed are the same with and without it
//	[2^62 + 2^61, 2^63)            SMIAMPDraws: the SMI GAMP's importance-sampling draws of the
//	                               channel integrals (SMIAMPDraw: 2^20 normals per sample and
//	                               iteration, each half of them for one of two independent halves)
//
// The SMI state evolution's plain Monte Carlo draws (SMISESample) start at 0 of the SE's own
// seed, which is not the teacher's: the SE has no teacher.
package stream

// Offsets inside one seed's stream.
const (
	Teacher     uint64 = 0                    // teacher weights
	Data        uint64 = 1 << 52              // training tokens
	SMISGDTest  uint64 = Data + 1<<51         // SMI SGD's test tokens
	SMIAMPTest  uint64 = Data + 1<<51 + 1<<50 // SMI GAMP's test tokens
	Init        uint64 = 1 << 53              // an algorithm's random start
	SMISEShift  uint64 = 1 << 60              // SMI SE: the quasi-Monte Carlo shift
	SMISEDraws  uint64 = 1<<60 + 1<<40        // SMI SE: the channel integrals' importance sampling
	SMINoise    uint64 = 1 << 61              // SMI data: the noise on the pre-activations
	AIMNoise    uint64 = 1 << 62              // AIM data: the label noise on the outputs y
	SMIAMPDraws uint64 = 1<<62 + 1<<61        // SMI GAMP: the channel integrals' importance sampling
	restart     uint64 = 1 << 40              // the stride between GD restarts' starts
)

// Restart returns the offset of restart k's random start, Init + k 2^40 (k >= 0): each restart
// of averaged gradient descent draws its initial weights (at most 2^40 normals) there.
func Restart(k int) uint64 { return Init + uint64(k)*restart }

// SMISESample returns the offset of the SMI SE's plain Monte Carlo sample s, which takes n
// normals: s n.
func SMISESample(s, n int) uint64 { return uint64(s) * uint64(n) }

// SMISEDrawNormals is the number of normals each half of one SE sample's importance sampling
// may take from SMISEDraws (channel.DeepSampler: 4 per draw).
const SMISEDrawNormals = 1 << 24

// SMISEDraw returns the offset of half h (0 or 1) of the importance-sampling draws of the SMI
// SE's sample s: SMISEDraws + (2 s + h) 2^24. Samples below 2^34 fit below SMINoise.
func SMISEDraw(s, h int) uint64 {
	return SMISEDraws + (2*uint64(s)+uint64(h))*SMISEDrawNormals
}

// SMIAMPDrawNormals is the number of normals one sample's importance sampling may take from
// SMIAMPDraws in one GAMP iteration: the first half for the first of its two independent
// estimates, the second half for the other.
const SMIAMPDrawNormals = 1 << 20

// SMIAMPDraw returns the offset of the importance-sampling draws of sample mu (of n) at GAMP
// iteration it >= 1: SMIAMPDraws + ((it - 1) n + mu) 2^20. Iterations times samples below
// 2^41 fit below 2^63.
func SMIAMPDraw(it, n, mu int) uint64 {
	return SMIAMPDraws + (uint64(it-1)*uint64(n)+uint64(mu))*SMIAMPDrawNormals
}
