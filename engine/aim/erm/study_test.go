package erm

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aimtheory/aim/engine/aim/gd"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
	"github.com/aimtheory/aim/engine/aim/se"
)

// TestStudy is the finite-size study of GAMP-ERM against the state evolution recorded in
// docs/validation/erm.md (ERM_STUDY=A: alpha = 0.6 at D = 100, 200, 400; B: the interpolating
// point without noise and alpha = 0.3, lambda = 1 at D = 400). It prints; it asserts nothing.
func TestStudy(t *testing.T) {
	if os.Getenv("ERM_STUDY") == "" {
		t.Skip("the finite-size study of docs/validation/erm.md: ERM_STUDY=A or B")
	}
	dev := cpu.New(0)
	type pt struct {
		a, l, noise float64
		D, seeds    int
	}
	var pts []pt
	switch os.Getenv("ERM_STUDY") {
	case "A":
		pts = []pt{{0.6, 0.1, 0.25, 100, 12}, {0.6, 0.1, 0.25, 200, 8}, {0.6, 0.1, 0.25, 400, 3}}
	case "B":
		pts = []pt{{0.2, 1e-3, 0, 50, 4}, {0.2, 1e-3, 0, 100, 4}, {0.2, 1e-3, 0, 200, 3}, {0.3, 1, 0.25, 400, 2}}
	}
	for _, c := range pts {
		p, _ := Solve(Problem{Rho: 0.5, Alpha: c.a, Noise: c.noise, Lambda: c.l}, se.DefaultOptions())
		{
			D, seeds := c.D, c.seeds
			var es []float64
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				pp := aim.Params{D: D, Alpha: c.a, Rho: 0.5, Seed: seed, Channel: channel.Spec{Kind: channel.KindLinear, T: 1, Noise: c.noise}}
				data, err := aim.Generate(dev, pp)
				if err != nil {
					t.Fatal(err)
				}
				o := amp.DefaultOptions()
				o.ERM, o.WeightDecay, o.MaxIter, o.Tol = true, c.l, 1000, 1e-10
				r, err := amp.Run(dev, data, o)
				data.Free(dev)
				if err != nil || !r.Converged {
					fmt.Printf("  D=%d seed=%d err=%v conv=%v it=%d\n", D, seed, err, r.Converged, r.Iterations)
				}
				es = append(es, r.Error)
			}
			m, sd := meanSD(es)
			fmt.Printf("a=%g l=%g noise=%g D=%d E=%.5f +- %.5f (sem %.5f) | SE %.5f gap %+.5f\n", c.a, c.l, c.noise, D, m, sd, sd/math.Sqrt(float64(len(es))), p.TestError, m-p.TestError)
		}
	}
}

// TestStudyGD compares factorised GD with weight decay (R = D) with GAMP-ERM on the same data
// and with the state evolution (ERM_STUDY=C).
func TestStudyGD(t *testing.T) {
	if os.Getenv("ERM_STUDY") != "C" {
		t.Skip("GD against GAMP-ERM at D = 200 (docs/validation/erm.md): ERM_STUDY=C")
	}
	dev := cpu.New(0)
	for _, c := range []struct {
		a, l, noise float64
		D, seeds    int
	}{{0.3, 0.1, 0.25, 200, 3}, {0.6, 0.1, 0.25, 200, 2}} {
		p, _ := Solve(Problem{Rho: 0.5, Alpha: c.a, Noise: c.noise, Lambda: c.l}, se.DefaultOptions())
		for seed := uint64(1); seed <= uint64(c.seeds); seed++ {
			if c.a == 0.3 && seed == 1 {
				continue
			}
			pp := aim.Params{D: c.D, Alpha: c.a, Rho: 0.5, Seed: seed, Channel: channel.Spec{Kind: channel.KindLinear, T: 1, Noise: c.noise}}
			data, err := aim.Generate(dev, pp)
			if err != nil {
				t.Fatal(err)
			}
			o := amp.DefaultOptions()
			o.ERM, o.WeightDecay, o.MaxIter, o.Tol = true, c.l, 1000, 1e-12
			r, err := amp.Run(dev, data, o)
			g := gd.DefaultOptions()
			g.WeightDecay, g.R, g.Steps, g.LR = c.l, c.D, 2000, 0.05
			start := time.Now()
			rg, err2 := gd.Run(dev, data, g)
			data.Free(dev)
			fmt.Printf("a=%g l=%g D=%d seed=%d GAMP-ERM %.6f (%v) GD %.6f (%v, %.0f s, train %.5f) SE %.5f train %.5f\n", c.a, c.l, c.D, seed, r.Error, err, rg.Error, err2, time.Since(start).Seconds(), rg.FinalLoss[0]*float64(c.D)/float64(pp.N()), p.TestError, p.TrainError)
		}
	}
}

// TestStudyScaling compares GAMP-ERM (lambda = 0.01, damping 0.8, noiseless, a gamma = 1.25
// power-law teacher, rho = 1) with the ERM state evolution at N/D = 8 to 32 and D = 100 to 400,
// with the local exponents d log E / d log N of both (ERM_STUDY=D; docs/validation/erm.md).
func TestStudyScaling(t *testing.T) {
	if os.Getenv("ERM_STUDY") != "D" {
		t.Skip("the scaling-law study of docs/validation/erm.md: ERM_STUDY=D")
	}
	scalingStudy(t, "GAMP-ERM", []int{100, 200, 400}, func(dev device.Device, data *aim.Data) (float64, error) {
		o := amp.DefaultOptions()
		o.ERM, o.WeightDecay, o.MaxIter, o.Tol, o.Damping = true, 0.01, 3000, 1e-12, 0.8
		r, err := amp.Run(dev, data, o)
		if err == nil && !r.Converged {
			fmt.Printf("  D=%d alpha=%g seed=%d: not converged\n", data.P.D, data.P.Alpha, data.P.Seed)
		}
		return r.Error, err
	})
}

// TestStudyScalingGD is TestStudyScaling with gradient descent on W (R = D, weight decay 0.01,
// Adam lr 0.05, 3000 steps) in place of GAMP-ERM, on the same data (ERM_STUDY=E; the D list in
// ERM_STUDY_D, default 100,200).
func TestStudyScalingGD(t *testing.T) {
	if os.Getenv("ERM_STUDY") != "E" {
		t.Skip("the scaling-law study with GD of docs/validation/erm.md: ERM_STUDY=E")
	}
	dims := []int{100, 200}
	if v := os.Getenv("ERM_STUDY_D"); v != "" {
		dims = nil
		for _, f := range strings.Split(v, ",") {
			D, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("ERM_STUDY_D=%s: %v", v, err)
			}
			dims = append(dims, D)
		}
	}
	scalingStudy(t, "GD", dims, func(dev device.Device, data *aim.Data) (float64, error) {
		g := gd.DefaultOptions()
		g.WeightDecay, g.R, g.Steps, g.LR = 0.01, data.P.D, 3000, 0.05
		r, err := gd.Run(dev, data, g)
		return r.Error, err
	})
}

// scalingStudy prints, at each D and N/D = 8, 16, 32, the ERM state evolution (lambda = 0.01) of
// the noiseless gamma = 1.25 power-law teacher (rho = 1) and the mean error of run over seeds 1 and
// 2 (3 for GAMP-ERM below D = 400, 1 for GD at D = 400), with the local exponents of both.
func scalingStudy(t *testing.T, name string, dims []int, run func(device.Device, *aim.Data) (float64, error)) {
	dev := cpu.New(0)
	for _, D := range dims {
		seeds := 3
		switch {
		case D >= 400 && name == "GD":
			seeds = 1
		case D >= 400 || name == "GD":
			seeds = 2
		}
		var prevS, prevG, prevA float64
		for _, nd := range []float64{8, 16, 32} {
			a := nd / float64(D)
			pp := aim.Params{D: D, Alpha: a, Rho: 1, Channel: channel.Spec{Kind: channel.KindLinear, T: 1}, Teacher: aim.Teacher{PowerLaw: true, Gamma: 1.25}}
			p, err := Solve(Problem{Alpha: a, Lambda: 0.01, Prior: pp.Prior()}, se.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			var es []float64
			start := time.Now()
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				pp.Seed = seed
				data, err := aim.Generate(dev, pp)
				if err != nil {
					t.Fatal(err)
				}
				e, err := run(dev, data)
				data.Free(dev)
				if err != nil {
					t.Fatal(err)
				}
				es = append(es, e)
			}
			m, sd := meanSD(es)
			ss, sg := math.NaN(), math.NaN()
			if prevA > 0 {
				ss, sg = math.Log(p.TestError/prevS)/math.Log(a/prevA), math.Log(m/prevG)/math.Log(a/prevA)
			}
			fmt.Printf("D=%d N/D=%g alpha=%.4f SE %.5f (slope %.3f) %s %.5f +- %.5f (slope %.3f) %.0f s\n", D, nd, a, p.TestError, ss, name, m, sd, sg, time.Since(start).Seconds())
			prevS, prevG, prevA = p.TestError, m, a
		}
	}
}
