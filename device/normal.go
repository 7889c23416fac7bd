package device

// NormalAt returns G(seed, i), the i-th standard normal of the counter-based stream of seed.
// Placeholder signature: the Philox4x32-10 + Box-Muller implementation replaces this file.
func NormalAt(seed, i uint64) float64 { panic("device.NormalAt: not implemented yet") }

// FillNormals sets dst[k] = G(seed, offset + k).
func FillNormals(dst []float64, seed, offset uint64) { panic("device.FillNormals: not implemented yet") }
