// Package engine is the science of aim, independent of any device. Each model has its own
// package over small shared foundations; imports point down only (docs/design.md):
//
//	engine/aim          the attention-indexed model (AIM, docs/theory/aim.md): teachers and data
//	                    (model.go), the output channels softmax, hardmax and linear (the
//	                    extensive-width quadratic network at T = 1) as the SE sees them
//	engine/aim/se       its state evolution, thresholds alpha_PR and alpha-bar_c, e_gen, the free
//	                    entropy Phi and first-order transitions (alpha_IT, alpha_alg)
//	engine/aim/erm      the state evolution of empirical risk minimisation with weight decay in
//	                    the quadratic network (nuclear norm and ridge), its thresholds and the
//	                    learned spectrum
//	engine/aim/amp      GAMP-RIE on a device, and GAMP for ERM
//	engine/aim/gd       gradient-descent students on a device, with weight decay
//	engine/smi          the sequence multi-index model and deep tied attention (SMI, docs/theory/smi.md):
//	                    teachers and data, the deep channel, its posterior cubature and (L = 3)
//	                    its importance sampler
//	engine/smi/se       its state evolution, stability and conditional thresholds, e_gen
//	engine/smi/amp      GAMP for the SMI
//	engine/smi/sgd      SGD of the teacher's architecture
//	engine/rie          Marchenko-Pastur (+) semicircle, and any teacher spectrum (+) semicircle
//	                    (Discrete): the RIE denoiser of extensive-rank S, the priors (Prior)
//	engine/fixedpoint   the one fixed-point solver (damping theta, stopping rule, Aitken jumps)
//	engine/root         the one bracketing root finder (Illinois regula falsi, bracket growth)
//	engine/stream       the one registry of the random-stream offsets a seed's draws use
//	engine/internal     Cholesky of small SPD systems (spd); test helpers (devtest, reftest)
//
// Below the engine: internal/par (the one deterministic parallel map-reduce), device (the
// Device interface, its argument checks, the Philox stream), channel (the one channel
// specification, channel.Spec, with its validation and constructor, and the Go twins of the
// CUDA kernels: the per-sample channel math that the CPU backend runs and the AIM theory
// reuses, the SMI deep channel's sampler), kernels (the CUDA kernels only), and the backends
// cpu and device/cuda. The AIM and the SMI never import each other.
//
// # Glossary
//
// One table for the symbols of the papers, as the code spells them. AIM is
// docs/theory/aim.md (attention-indexed models), SMI is docs/theory/smi.md.
// The figures print them from one table too: cmd/aim/internal/figure/symbols.go.
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
//	M          Fields(T)         T(T+1)/2 fields per sample (code nf)                      AIM 1
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
//	lambda     lambda            q/V: hardmax's FisherSum(q, V) = F(lambda)/V (H/3 at T = 2) AIM 2.3
//	b          Winners           b_a = argmax_c h_ac: a hardmax output, row by row; its class AIM 2.3
//	                             up to relabelling (PatternClasses)
//	alpha-bar_c AlphaBarC        rho -> 0 weak-recovery threshold in alpha-bar_r             AIM 2.3
//	F(lambda)  FisherTable       hardmax T > 2: FisherSum(q, V) V, tabulated and fitted in   AIM 2.3
//	                             s = (1 + lambda)^-1/2 (engine/aim/hardmaxtable.go)
//	c1         FisherLimit       lim sqrt(lambda) F(lambda): the facets' share times kappa   AIM 2.3
//	kappa      fisherKappa       int phi(d)^2/Phi(d) dd: one facet's Fisher integral         AIM 2.3
//	e_gen      GenError          E||y - y_hat||_F^2 of the Bayes-optimal predictor           AIM 2.4
//	i(snr)     MutualInformation lim I(S; S + snr^-1/2 Z)/D^2 = (1/4) int_0^snr mmse(1/t) dt
//	psi_in     -                 prior free entropy Q0 q-hat/4 - i(q-hat): d/dq-hat = q/4
//	psi_out    OutputEntropy     E log Z_out(y; omega, V), u-coordinates; d/dq = FisherSum/2
//	                             along V = Q0 - q (softmax: up to a q-independent constant)
//	Phi        FreeEntropy       psi_in(q-hat) - q q-hat/4 + alpha psi_out(q, Q0 - q) per D^2;
//	                             stationary at the SE fixed points; Bayes-optimal: the largest
//	Delta      Noise, --noise    label noise variance of the noisy softmax (T = 2):
//	                             y = softmax_row(beta h) + sqrt(Delta) xi, xi_ab iid N(0, 1)
//	                             (channel.NoisySoftmax, aim.NoisySoftmax, channel.Spec.Noise),
//	                             and of the linear channel y = h + sqrt(Delta) xi (AIM 2.8)
//	kappa      (rho)             the quadratic network's width ratio m/d (AIM 2.8): aim's rho;
//	                             not the hardmax Fisher integral kappa above
//	y~         Reduced           (y_aa - y_ab + 1)/2 = sigma(beta d_a) + sqrt(Delta/2) eta_a: the
//	                             noisy softmax's sufficient statistics, d = (h11 - h12, h22 - h12)
//	m_0        MInformed         the informed start m = 1e-6 (uninformed: m = 1)
//	alpha_IT   AlphaIT           first-order transition: the free entropies of the branches
//	                             cross (information-theoretic threshold)
//	alpha_alg  AlphaAlg          first-order transition: the uninformed branch disappears
//	                             (algorithmic threshold); spinodal: the informed one appears
//	z          (device ops)      AMP coordinates z = sqrt(2) u = tau o h                     AIM 3
//	tau        tau               tau_aa = 1, tau_ab = sqrt(2): h to z                        AIM 3
//	S-hat      sHat              the AMP estimate of S                                       AIM 3
//	c-hat      cHat              the denoiser's error mmse_S(Delta; rho); V_z = 2 c-hat      AIM 3
//	Omega      omegaNew          undamped forward field, with the Onsager term -V g          AIM 3
//	A          A                 (2 alpha / N) sum g_out^2 = q-hat / 2                       AIM 3
//	B          back              back-projection sum_mu X_mu^T C_mu X_mu - Tr C_mu I, /sqrt(D) AIM 3
//	R_t        rMat              S-hat + B/(A D), the matrix the RIE denoises (not the rank R) AIM 3
//	theta      Damping           damping: the weight on the old iterate, x <- (1-theta) G + theta x AIM 3
//	                             (every Damping field of the engine; engine/fixedpoint)
//	r          Steps             contraction rate: the larger of the last two step-norm ratios
//	distance   Distance          estimated squared distance to the fixed point, step/(1 - r)^2,
//	                             in the step's units; GAMP's converged means distance < Tol
//	                             (fixedpoint.Steps; amp and smi/amp Iteration.Distance)
//	W          w                 the GD student's weights, R x D; S = W^T W / sqrt(R D)      AIM 4
//	y-hat      yhat              the student's outputs row-softmax(beta h)                   AIM 4
//	Gamma      gamma             dL/dh through the softmax Jacobian                          AIM 4
//	G_S        gS                dL/dS = (sum X^T Gamma X - Tr Gamma I)/sqrt(D)              AIM 4
//	S-bar      sBar              the average of the final S over restarts (averaged GD)      AIM 4
//	lambda     WeightDecay,      weight decay: the penalty lambda Tr S = lambda ||W||_F^2 /  AIM 4.1
//	           Lambda,           sqrt(R D) (nuclear) or lambda ||S||_F^2 (ridge, Direct)
//	           --weight-decay
//	E          TestError         ERM test error ||S-hat - S*||_F^2 / D (the mmse's place)    AIM 4.1
//	E_train    TrainError        ERM training error, mean (y-hat - y)^2 over the samples     AIM 4.1
//	Sigma      -                 the ERM estimator's response; m-hat = 2 alpha/(Sigma + c)   AIM 4.1
//	                             (linear); the softmax's Sigma-hat != m-hat, both sampled
//	kappa      Shrink            the softmax's scale m-hat/Sigma-hat: S-hat = kappa r(Y)     AIM 4.1
//	P          SquareLoss.Prox   the per-sample proximal map of the ERM loss                 AIM 4.1
//	c          lossCurvature     1/4: the square loss's curvature in unit coordinates        AIM 4.1
//	Delta_eff  DeltaEff          (E + Delta/2)/(2 alpha): the ERM prior side's noise         AIM 4.1
//	tau        Tau               the nuclear penalty's eigenvalue threshold 2 lambda/m-hat   AIM 4.1
//	s          Shrink            ridge's eigenvalue scale m-hat/(m-hat + 4 lambda)           AIM 4.1
//	I          I                 the divergence of the spectral map, degrees of freedom      AIM 4.1
//	                             spent per D^2/2; interpolation at I = 2 alpha
//	alpha_c    PerfectRecovery   ERM's perfect-recovery threshold (noiseless, lambda -> 0+)  AIM 4.1
//	           PerfectRecovery-  the softmax's: 2/K times the linear channel's
//	           Softmax
//	alpha_interp Interpolation   ERM's interpolation threshold (noisy, lambda -> 0+)         AIM 4.1
//	gamma      Teacher.Gamma,    a power-law target's exponent: w_k ∝ k^-gamma, k <= R       AIM 4.1
//	           --teacher         (Teacher.PowerLaw; the zero Teacher is MP(rho))
//	nu         rie.Prior         the teacher's spectrum: MP(rho) or its eigenvalues          AIM 4.1
//
// The engine's own terms, beside the papers' (docs/guide/amp.md):
//
//	term       code              meaning
//	chunk      Data.Chunk        samples whose tokens are regenerated and used at once (streamed)
//	shard      Data.Lo, Data.Hi  the samples [Lo, Hi) a member of a device group holds
//	lead       Group.Lead()      member 0: the denoiser / optimiser step, then a broadcast
//	k          Group.Len()       devices of a group; shard j is [floor(j N/k), floor((j+1) N/k))
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
//	m_a, m_b   half              L >= 3: two independent importance-sampling estimates of
//	                             E[Z - omega | y]; E[m_a m_b^T] = m m^T, so q-hat has no noise bias
//	ESS        SampleMoments.ESS the effective sample size (sum w)^2 / sum w^2 of one estimate
//	chart j    channel.DeepSampler proposal that draws z_L and every v_k but v_j, solves v_j
//	J(v, r)    logAttentionJacobian |det d(A(v)^{-1} r)/dv|, a chart's density factor
//	slot s     SampleBatch.Set   a task's place in the normal stream: offset + s stride
//	F_l        SMIStability      E||Cov(z_l | y) V^{-1} - I_M||_F^2 / V^2: q-hat ~ alpha F Q SMI 2.3
//	alpha_l    Stability         1/F_l at Q = 0: layer l's weak-recovery threshold           SMI 2.3
//	psi_in     PsiIn             sum_l (q-hat_l - log(1 + q-hat_l))/2, Gaussian prior: d/dq-hat SMI 2.1
//	                             = Q/2 (the form tr[q-hat(I+q-hat)^-1]/2 - log det/2 is wrong)
//	psi_out    PsiOut            E_{xi,eta} log Z_out(y; omega, V), Z_out the density of +-u SMI 2.1
//	                             (smi.DeepMoments.LogZ); d/dQ_ll = E[sum_tokens g_out,l^2]/2
//	Phi        FreeEntropy       psi_in(q-hat) - tr(Q q-hat)/2 + alpha psi_out(Q), per D;    SMI 2.1
//	                             dPhi/dalpha = psi_out at a fixed point; Bayes-optimal: largest
//	Q_inf      QInformed         the informed start Q = (1 - 1e-4) I (uninformed: Init I)
//	J_lk       Linearisation.J   dG_l/dQ_k of the SE map G(Q) = q-hat/(1 + q-hat): Qerr = the
//	                             error of G through (I - J)^{-1}; the Newton step (fixedpoint.Newton)
//	C-hat      Chat              GAMP's posterior covariance of W, P x P                     SMI 3
//	M_ll, C_l  M, Cos            overlap |w-hat_l . w*_l| / D and its cosine (smi.Data.Overlaps) SMI 3, 4
//	rho_SMI    --damping         the authors' damping, the weight on the NEW iterate:        SMI 2.2, 3
//	                             the CLI's smi --damping; the engine's theta = 1 - rho_SMI
//
// Clashes, and how the code resolves them:
//
//   - R is the rank of W (R = rho D, code R, Params.R) and, in the papers' GAMP-RIE, the
//     matrix the RIE denoises: the code calls that one rMat and the glossary R_t.
//   - M is the AIM's number of fields T(T+1)/2 (code Fields(T), a variable nf; engine/aim has
//     no variable M), the SMI's tokens per sequence (code M, smi.Params.M), and the SMI overlap
//     M_ll (the fields M of the SMI amp.Iteration and sgd.Point, with Q and Cos beside it).
//   - Delta is the denoising problem's noise variance 1/q-hat (code delta, AIM 2.1) and the
//     label noise variance of the noisy softmax (code Noise, the CLI's --noise).
//   - J is the SE map's Jacobian J_lk (Linearisation.J, fixedpoint's Options.Jacobian) and a
//     sampler chart's density factor J(v, r) (logAttentionJacobian).
//   - T is the AIM's tokens per sequence (code T); the SMI authors' iteration cap T is MaxIter
//     in the code, and a test-set size is n_test.
//   - lambda is hardmax's ratio q/V (AIM 2.3), an eigenvalue in the RIE's f(lambda), and the
//     weight decay (AIM 4.1): the code calls the last WeightDecay (gd, amp) or Lambda (erm).
//   - tau is the AMP pattern h -> z (AIM 3) and ERM's eigenvalue threshold (code Tau).
//   - gamma is a power-law target's exponent (AIM 4.1, Teacher.Gamma); the SMI has none.
//   - rho is the AIM's rank ratio R/D (code rho, Rho); the SMI authors' damping rho is the
//     command line's smi --damping only, translated at the CLI's edge to theta = 1 - rho.
package engine
