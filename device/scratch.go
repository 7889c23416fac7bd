package device

// Work names the largest operations a run calls on a device, for Device.Scratch: the sizes
// that decide the work space a backend keeps between calls. A zero field is an operation the
// run does not call.
type Work struct {
	// Eigh is the order D of EighSym, Compose that of SpectralCompose.
	Eigh, Compose int
	// QuadForm is {n, t, d} of QuadFormSum (Caps.QuadFormSummer): n samples of t x d tokens.
	QuadForm [3]int
	// Samples is the n of the per-sample reductions (ChannelGOut, SoftmaxLossGrad, SumDiag),
	// and Reduce the longest buffer of Dot and SqDist.
	Samples, Reduce int
	// Precision and Products: GemmPrecision at Precision on products of the shapes {m, n, k}
	// (nothing at FP64).
	Precision Precision
	Products  [][3]int
}

// nonNegative returns w with every negative size set to 0 (an operation not called).
func (w Work) nonNegative() Work {
	clamp := func(v *int) { *v = max(*v, 0) }
	clamp(&w.Eigh)
	clamp(&w.Compose)
	clamp(&w.Samples)
	clamp(&w.Reduce)
	for i := range w.QuadForm {
		clamp(&w.QuadForm[i])
	}
	w.Products = append([][3]int(nil), w.Products...)
	for i := range w.Products {
		for j := range w.Products[i] {
			clamp(&w.Products[i][j])
		}
	}
	return w
}
