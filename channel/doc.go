// Package channel is the output channels' specification and per-sample math, the Go twins of
// the CUDA kernels of kernels/.
//
// Spec says which channel a run computes (kind, T, beta, the published hardmax formula, the
// lattice rule of the estimates at T > 2, the label noise); Spec.Validate holds its rules and
// New builds its scalar channel (Scalar). The device front (package device) validates a Spec
// once per operation and refuses the channels a device does not declare (Support), the CPU
// backend (package cpu) runs New's channel sample by sample, and the theory (engine/aim)
// builds its state-evolution integrals on the same constructors.
//
// Twins. Each CUDA source kernels/X.cu has its CPU reference here under the same name, as in
// llm.c: kernels/channel.cu is channel.go (softmax, hardmax at T = 2) with bvn.go (the
// bivariate normal of the hardmax g_out) and hardmaxt.go with polytope.go (hardmax at T > 2,
// hardmaxt_gout); kernels/deep.cu is deep.go, the importance sampler of the sequence
// multi-index model's deep attention channel (docs/theory/smi.md 2.2), which lives here rather than
// beside engine/smi because the CPU backend, the CUDA backend's layout (DeepIn, DeepOut) and
// the theory all use it, and this package imports nothing of theirs. The noisy softmax
// (noisy.go, noisyt.go) has no kernel: the CPU computes it alone. The emulator tests of
// kernels/emu run each kernel against its twin here (and the other kernels against package
// cpu), and a test there fails when a .cu has no twin.
//
// Coordinates. For T tokens there are M = T(T+1)/2 independent fields per sample, in the unit
// coordinates u of docs/theory/aim.md section 1 (channel.go). This package imports neither device,
// cpu nor engine.
package channel
