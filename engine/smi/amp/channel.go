package amp

import (
	"errors"
	"math"

	"github.com/aimtheory/aim/engine/smi"
	"github.com/aimtheory/aim/engine/stream"
)

// sampleOmega writes sample mu's omega_{.l} = What x_{mu l} / sqrt(D) - V g_prev_{.l} (no
// Onsager term at the first iteration) into om (P x M).
func (s *smiState) sampleOmega(om []float64, mu int, V []float64, first bool) {
	D, M, P := s.D, s.M, s.P
	sqrtD := math.Sqrt(float64(D))
	x := s.data.X[mu*M*D : (mu+1)*M*D]
	gp := s.gPrev[mu*P*M : (mu+1)*P*M]
	for k := 0; k < P; k++ {
		wk := s.what[k*D : (k+1)*D]
		for l := 0; l < M; l++ {
			v := dotF(wk, x[l*D:(l+1)*D]) / sqrtD
			if !first {
				for j := 0; j < P; j++ {
					v -= V[k*P+j] * gp[j*M+l]
				}
			}
			om[k*M+l] = v
		}
	}
}

// sampleAll runs the sampled channel integrals of all N samples of iteration it in one batch
// on o.Device (nil: the CPU twin): every sample's omega and u go to the batch's tasks 2 mu + h,
// half h of sample mu with slot 2 ((it - 1) N + mu) + h, whose Draws/2 draws come from
// stream.SMIAMPDraw(it, N, mu) + h stream.SMIAMPDrawNormals/2.
func (s *smiState) sampleAll(it int, V, ve []float64, first bool) error {
	M, N := s.M, s.N
	if err := s.parallel(N, func(w *smiWorker, mu int) {
		om := w.omega
		s.sampleOmega(om, mu, V, first)
		for h := 0; h < 2; h++ {
			s.batch.Set(2*mu+h, 2*(uint64(it-1)*uint64(N)+uint64(mu))+uint64(h), s.data.U[mu*M:(mu+1)*M], om, ve)
		}
	}); err != nil {
		return err
	}
	return s.batch.Run(s.o.Device, s.o.Draws/2, s.data.P.Seed, stream.SMIAMPDraws, stream.SMIAMPDrawNormals/2, len(s.workers))
}

// sampleChannel computes sample mu's channel moments (with Options.Draws at L >= 3 from
// sampleAll's batch, else by the cubature at omega, computed here), g (into s.g) and the sum
// over tokens of the same-token Jacobian blocks (into s.dgSum). V is Chat (the
// Onsager term), ve the channel's variance V + eps I and vinv its inverse.
func (s *smiState) sampleChannel(w *smiWorker, mu int, V, ve, vinv []float64, first bool) {
	M, P := s.M, s.P
	g := s.g[mu*P*M : (mu+1)*P*M]
	dg := s.dgSum[mu*P*P : (mu+1)*P*P]
	var err error
	if s.sampled() {
		err = s.sampleMoments(w, mu)
	} else {
		s.sampleOmega(w.omega, mu, V, first)
		err = w.post.Moments(w.mom, s.data.U[mu*M:(mu+1)*M], w.omega, ve)
	}
	if err == nil {
		err = smiChannelOut(g, dg, w.mom, vinv, P, M, w.cov, w.tmp)
	}
	if err != nil {
		for i := range g {
			g[i] = 0
		}
		for i := range dg {
			dg[i] = 0
		}
		s.failed[mu], s.inexact[mu] = true, false
		return
	}
	s.failed[mu], s.inexact[mu] = false, !w.mom.Exact
}

// sampleMoments takes sample mu's posterior moments from the two halves of sampleAll's batch
// into w.mom: the halves' mean (m_a + m_b)/2 and a second moment whose covariance is
// Second - (m_a m_b^T + m_b m_a^T)/2, free of the upward bias of m m^T by the noise of m.
func (s *smiState) sampleMoments(w *smiWorker, mu int) error {
	for h, m := range w.half {
		if err := s.batch.Moments(m, 2*mu+h, s.o.Draws/2); err != nil {
			return err
		}
	}
	a, b := w.half[0], w.half[1]
	pm := len(a.Mean)
	for i := 0; i < pm; i++ {
		w.mom.Mean[i] = (a.Mean[i] + b.Mean[i]) / 2
	}
	for i := 0; i < pm; i++ {
		for j := 0; j < pm; j++ {
			cross := (a.Mean[i]*b.Mean[j] + b.Mean[i]*a.Mean[j]) / 2
			w.mom.Second[i*pm+j] = (a.Second[i*pm+j]+b.Second[i*pm+j])/2 - cross + w.mom.Mean[i]*w.mom.Mean[j]
		}
	}
	w.mom.Exact = a.Exact && b.Exact
	return nil
}

// smiChannelOut turns the posterior moments of one sample into the GAMP channel outputs:
// g_{.l} = V^{-1} E[z_{.l} - omega_{.l}] (g is P x M row-major) and
// dgSum = sum_l (V^{-1} Cov(z_{.l}) V^{-1} - V^{-1}), Cov the P x P same-token block of the
// posterior covariance. cov and tmp are P x P work space. It fails on a non-finite output.
func smiChannelOut(g, dgSum []float64, m *smi.DeepMoments, vinv []float64, P, M int, cov, tmp []float64) error {
	pm := P * M
	for i := range dgSum {
		dgSum[i] = 0
	}
	for l := 0; l < M; l++ {
		for k := 0; k < P; k++ {
			var v float64
			for j := 0; j < P; j++ {
				v += vinv[k*P+j] * m.Mean[j*M+l]
			}
			g[k*M+l] = v
		}
		for a := 0; a < P; a++ {
			ia := a*M + l
			for b := 0; b < P; b++ {
				ib := b*M + l
				cov[a*P+b] = m.Second[ia*pm+ib] - m.Mean[ia]*m.Mean[ib]
			}
		}
		// tmp = Cov V^{-1}; dg_l = V^{-1} tmp - V^{-1}.
		for a := 0; a < P; a++ {
			for b := 0; b < P; b++ {
				var v float64
				for j := 0; j < P; j++ {
					v += cov[a*P+j] * vinv[j*P+b]
				}
				tmp[a*P+b] = v
			}
		}
		for a := 0; a < P; a++ {
			for b := 0; b < P; b++ {
				var v float64
				for j := 0; j < P; j++ {
					v += vinv[a*P+j] * tmp[j*P+b]
				}
				dgSum[a*P+b] += v - vinv[a*P+b]
			}
		}
	}
	if !allFinite(g) || !allFinite(dgSum) {
		return errors.New("amp: SMI channel output is not finite")
	}
	return nil
}
