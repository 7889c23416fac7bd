// Package engine is the science of aim, independent of any device: random-matrix denoising
// (rie), output channels (channel), state evolution (se), teachers and data (model), GAMP-RIE
// (amp), and, as it lands, gradient descent (gd).
//
// # Glossary
//
// One table for the symbols of the papers, as the code spells them. AIM is
// ../shared/docs/AIM.md (attention-indexed models), SMI is ../shared/docs/SMI.md.
//
//	symbol     code              meaning                                                     where
//	D          D                 token dimension (the paper's d)                             AIM 1
//	T          T                 tokens per sequence                                         AIM 1
//	N          N                 samples, N = floor(alpha D^2)                               AIM 1
//	alpha      alpha             sample complexity N/D^2                                     AIM 1
//	K          K, Directions()   T^2 + T - 2: twice the directions softmax observes          AIM 2.2
//	alpha-bar  alphaBar          alpha K, the softmax curves' common axis                    AIM 2.2
//	alpha-bar_r alphaR           N/(D R) = alpha/rho, the rho -> 0 rescaled axis             AIM 2.3
//	R, rho     R, rho            rank of W (D x R) and rho = R/D                             AIM 1
//	S          S                 W W^T / sqrt(R D): the target, spectrum MP(rho)             AIM 1
//	h          h                 (x_a^T S x_b - delta_ab Tr S)/sqrt(D): attention indices    AIM 1
//	u          u                 unit coordinates: u_ab = h_ab (a<b), u_aa = h_aa/sqrt(2)   AIM 1
//	M          Fields(T)         T(T+1)/2 fields per sample                                  AIM 1
//	beta       beta              softmax inverse temperature                                 AIM 1
//	Q0         Q0                1 + rho = ||S||_F^2 / D                                     AIM 1
//	q          Q                 overlap Tr(S S_hat)/D                                       AIM 2.1
//	q-hat      QHat              conjugate of q: 2 alpha E[sum g_out^2]                      AIM 2.1
//	m, mmse    MMSE              estimation error Q0 - q = ||S_hat - S||_F^2 / D             AIM 2.1
//	V          V                 Q0 - q: variance of u given omega                           AIM 2.1
//	omega      omega             the part of u that the estimate knows, N(0, q)              AIM 2.1
//	g_out      GOut              d/d omega log Z_out(y; omega, V) = E[u - omega | y]/V       AIM 2.1
//	Z_out      -                 E_xi P(y | u = omega + sqrt(V) xi)                          AIM 2.1
//	Delta      delta             1/q-hat: noise variance of the denoising problem            AIM 2.1
//	mu_Delta   Spectrum          MP(rho) free-convolved with a semicircle of variance Delta AIM 2.1
//	g(z)       Stieltjes         Stieltjes transform of mu_Delta                             AIM 2.1
//	f(lambda)  Denoise           RIE spectral map lambda - 2 Delta Re g(lambda - i0)         AIM 2.1
//	alpha_PR   AlphaPR           perfect-recovery threshold (softmax)                        AIM 2.2
//	alpha-bar_c AlphaBarC        rho -> 0 weak-recovery threshold in alpha-bar_r             AIM 2.3
//	e_gen      GenError          E||y - y_hat||_F^2 of the Bayes-optimal predictor           AIM 2.4
//	z          (device ops)      AMP coordinates z = sqrt(2) u = tau o h                     AIM 3
//	tau        tau               tau_aa = 1, tau_ab = sqrt(2): h to z                        AIM 3
//	S-hat      sHat              the AMP estimate of S                                       AIM 3
//	c-hat      cHat              the denoiser's error mmse_S(Delta; rho); V_z = 2 c-hat      AIM 3
//	Omega      omegaNew          undamped forward field, with the Onsager term -V g          AIM 3
//	A          A                 (2 alpha / N) sum g_out^2 = q-hat / 2                       AIM 3
//	B          back              back-projection sum_mu X_mu^T C_mu X_mu - Tr C_mu I, /sqrt(D) AIM 3
//	R          rMat              S-hat + B/(A D), the matrix the RIE denoises                AIM 3
//	theta      Damping           damping of omega and V                                      AIM 3
//	W          w                 the GD student's weights, R x D; S = W^T W / sqrt(R D)      AIM 4
//	y-hat      yhat              the student's outputs row-softmax(beta h)                   AIM 4
//	Gamma      gamma             dL/dh through the softmax Jacobian                          AIM 4
//	G_S        gS                dL/dS = (sum X^T Gamma X - Tr Gamma I)/sqrt(D)              AIM 4
//	S-bar      sBar              the average of the final S over restarts (averaged GD)      AIM 4
package engine
