// Package engine is the science of aim, independent of any device: random-matrix denoising
// (rie), output channels (channel), state evolution (se), teachers and data (model), GAMP-RIE
// (amp), and gradient descent (gd), for both the attention-indexed model (AIM) and the sequence
// multi-index model of deep tied attention (SMI).
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
//
// The sequence multi-index model and deep tied attention (SMI):
//
//	symbol     code              meaning                                                     where
//	D          D                 token dimension                                             SMI 1.1
//	M          M                 tokens per sequence (the authors' code calls it L)          SMI 1.1
//	L          L                 attention layers, each of rank 1                            SMI 1.2
//	P          P()               rows of W*: the sum of the layer ranks (= L)                SMI 1.1
//	N, alpha   N(), Alpha        samples N = floor(alpha D): alpha = N/D here                SMI 1.1
//	W*         W                 teacher weights, P x D, iid N(0, 1)                         SMI 1.1
//	Z, z_l     Z, z              raw projections W* x^T / sqrt(D), P x M; z_l is row l       SMI 1.1
//	c          C                 skip (residual) strength                                    SMI 1.2
//	A(v)       Attention         softmax_row(beta v v^T) + c I_M                             SMI 1.2
//	v_l, B_l   Forward           v_l = B_{l-1} z_l, B_l = A(v_l) B_{l-1}: layer l's input    SMI 1.2
//	u          U, u              v_L, the last pre-activation; y = softmax_row(beta u u^T)   SMI 1.3
//	Q          Q                 P x P overlap E[W-hat W*^T]/D (diagonal by sign symmetry)   SMI 2.1
//	Q-hat      QHat              alpha E[g_out g_out^T]                                      SMI 2.2
//	V          V                 I - Q + epsilon I: the variance of each token's column of Z SMI 2.2
//	omega      omega             Q^{1/2} xi: what the estimate knows of Z                    SMI 2.2
//	g_out      Mean / V          V^{-1}(E[Z | y, omega, V] - omega), per token               SMI 2.1
//	epsilon    Epsilon           1e-3 regularisation of V (the authors' code)                SMI 2.2
//	F_l        SMIStability      E||Cov(z_l | y) V^{-1} - I_M||_F^2 / V^2: q-hat ~ alpha F Q SMI 2.3
//	alpha_l    Stability         1/F_l at Q = 0: layer l's weak-recovery threshold           SMI 2.3
//	C-hat      Chat              GAMP's posterior covariance of W, P x P                     SMI 3
//	M_ll, C_l  M, Cos            overlap w-hat_l . w*_l / D and its cosine                   SMI 3, 4
package engine
