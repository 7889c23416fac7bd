package figure

// symbols.go: the one spelling of the papers' symbols on the figures (axis labels, legends,
// titles), in Unicode with the braced scripts of mathtext.go. The glossary (engine/doc.go)
// names each symbol as the code spells it; this table is how a figure prints it.

// The symbols of the AIM (docs/theory/aim.md) and the SMI (docs/theory/smi.md).
const (
	Alpha     = "α"                   // sample complexity: N/D^2 (AIM), N/D (SMI)
	AlphaBar  = "ᾱ"                   // α (T^2 + T − 2), the softmax curves' common axis
	AlphaBarR = "ᾱ_{r}"               // N/(D R) = α/ρ, the ρ → 0 rescaled axis
	AlphaPR   = "α_{PR}"              // perfect-recovery threshold
	AlphaBarC = "ᾱ_{c}"               // ρ → 0 weak-recovery threshold, in ᾱ_r
	AlphaIT   = "α_{IT}"              // information-theoretic threshold (free entropies cross)
	AlphaAlg  = "α_{alg}"             // algorithmic threshold (the uninformed branch jumps)
	AlphaC    = "α_{c}"               // ERM: perfect recovery of the minimal nuclear-norm interpolator
	AlphaInt  = "α_{interp}"          // ERM: interpolation threshold of noisy labels at λ → 0+
	Rho       = "ρ"                   // rank ratio R/D
	Beta      = "β"                   // softmax inverse temperature
	Delta     = "Δ"                   // label noise variance
	Lambda    = "λ"                   // weight decay (ERM, GD)
	Minus     = "−"                   // U+2212, the minus sign of labels and ticks
	RhoToZero = "ρ → 0"               // the rescaled limit's curve
	ErrorS    = "‖Ŝ − S‖^{2}_{F} / D" // the estimation error of an estimate Ŝ of S (its MMSE at the SE)
	EGen      = "e_{gen}"             // generalisation error
)

// ErrorLabel is the y label of the estimation error on every AIM figure (state evolution,
// GAMP-RIE, GD and their traces): one quantity, one label.
const ErrorLabel = "Estimation error " + ErrorS

// Sub returns a symbol with a subscript: Sub("Q", "11") = "Q_{11}".
func Sub(sym, sub string) string { return sym + "_{" + sub + "}" }

// Sup returns a symbol with a superscript: Sup("D", "2") = "D^{2}".
func Sup(sym, sup string) string { return sym + "^{" + sup + "}" }
