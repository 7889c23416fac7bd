// Package rie implements the prior (denoising) side of the AIM state evolution: the spectrum
// mu_Delta = MP(rho) ⊞ SC(Delta), its Stieltjes transform, the rotationally invariant estimator
// (RIE) spectral map used by GAMP-RIE, and the matrix-denoising MMSE (docs/theory/aim.md section 2.1,
// section 3 and section 7), and the same for a teacher of any spectrum (Discrete).
//
// Model. S = W W^T / sqrt(R D) with W in R^{D x R} iid N(0,1), R = rho D, so E S = sqrt(rho) I and
// (1/D) Tr S^2 -> 1 + rho; S has the Marchenko-Pastur law MP(rho) (free cumulants k1 = sqrt(rho),
// k_{n+1} = rho^{(1-n)/2}, in particular variance 1). One observes Y = S + sqrt(Delta) Z with Z a
// GOE matrix (off-diagonal variance 1/D, diagonal 2/D). As D -> inf the spectrum of Y tends to
// mu_Delta = MP(rho) ⊞ SC(Delta), whose free cumulants are those of MP(rho) with k2 = 1 + Delta.
//
// Stieltjes transform. g(z) = ∫ mu(t)/(z - t) dt. On the real axis we use z = x - i0, so that on
// the support Im g > 0 and mu(x) = Im g(x - i0)/pi, while Re g(x) is the Hilbert part
// (principal value ∫ mu(t)/(x - t) dt). g solves the cubic
//
//	Delta g^3 - (z + sqrt(rho) Delta) g^2 + (sqrt(rho) z + 1 - rho) g - sqrt(rho) = 0,
//
// which is equivalent to the explicit functional inverse (R-transform plus 1/g)
//
//	z(g) = Delta g + 1/g - rho/(g - sqrt(rho)).
//
// Support. The edges are z(g_c) at the real critical points z'(g_c) = 0, i.e. the real roots of
// the quartic Delta g^2 (g - sqrt(rho))^2 - (g - sqrt(rho))^2 + rho g^2 = 0 (this is the
// discriminant condition of the cubic; docs/theory/aim.md writes the same edges as roots of a quartic in
// the edge variable). There is one root in (-inf, 0) (left edge), one in (0, sqrt(rho)) (right
// edge), and, exactly when rho < 1 and Delta < Delta_c(rho) = (rho^{-1/3} - 1)^3, two more in
// (sqrt(rho), inf): then the support has two bulks, a bump of mass 1 - rho near 0 and the main
// bulk. The roots are bracketed analytically and refined by safeguarded Newton, so the edges are
// accurate to rounding even in the stiff corner (small Delta, small rho).
//
// Physical branch off the support. Outside the support g(x) is real and is the unique real root
// of the cubic with z'(g) < 0 lying in the interval of g swept by that gap: (g_left, 0) left of
// the support, (0, g_right) right of it and (g_3, g_4) in the gap between two bulks. It
// continues g ~ 1/x at infinity and is continuous across every edge.
//
// MMSE. For the rotationally invariant prior MP(rho) with known mean,
//
//	mmse(Delta; rho) = Delta - (4 pi^2/3) Delta^2 ∫ mu_Delta(x)^3 dx,
//
// (docs/theory/aim.md 2.1, the authors' F_RIE); it tends to (2 rho - rho^2) Delta (rho < 1) or Delta
// (rho >= 1) as Delta -> 0 and to 1 - 1/Delta + O(1/Delta^2) as Delta -> inf. ∫ mu^3 is
// computed per bulk with adaptive Gauss-Kronrod (G10-K21) in the variable
// x = a + (b - a)(1 - cos θ)/2, which removes the square-root edge singularities.
//
// RIE. For an observed symmetric matrix Y = O diag(λ) O^T the Bayes-optimal rotationally
// invariant estimator is O diag(f(λ_i)) O^T with f(λ) = λ - 2 Delta Re g_Delta(λ - i0)
// (Denoise); f is defined and continuous for every real λ, including finite-D eigenvalues outside
// the asymptotic support.
//
// Other teachers. Discrete is nu ⊞ SC(Delta) for any teacher spectrum nu given by its
// eigenvalues (a power law w_k ~ k^-gamma, a bulk with outliers), through Pastur's subordination
// equation, with the same methods: edges, density, Hilbert part, RIE map, mmse, integrals.
//
// A Spectrum is immutable after New and safe for concurrent use. Apart from Edges (which returns a
// copy) no method allocates, and the function MMSE does not allocate either.
package rie
