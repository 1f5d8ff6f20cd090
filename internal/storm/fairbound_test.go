package storm_test

import (
	"math"
	"testing"

	"github.com/retrykit/retry/internal/storm"
)

// The expected ranges of normal samples, against their published values
// (2/√π and 3/√π in closed form).
func TestExpectedRange(t *testing.T) {
	for n, want := range map[int]float64{2: 2 / math.SqrtPi, 3: 3 / math.SqrtPi, 10: 3.0775, 100: 5.0152} {
		got, err := storm.ExpectedRange(n)
		if err != nil || math.Abs(got-want) > 5e-5 {
			t.Errorf("ExpectedRange(%d) = %v, %v; want %.4f", n, got, err, want)
		}
	}
	for _, n := range []int{1, 0, -3} {
		if _, err := storm.ExpectedRange(n); err == nil {
			t.Errorf("ExpectedRange(%d): no error", n)
		}
	}
}

func TestFairnessAllowed(t *testing.T) {
	// The published algorithm's ten clients at 3x: e 0.86, 4.5%
	// throttled, 56 throttles a client.
	got, err := storm.FairnessAllowed(10, 0.86, 0.045, 56)
	if want := math.Exp(-3.0775 * 0.86 * math.Sqrt(0.955/56)); err != nil || math.Abs(got-want) > 1e-4 {
		t.Errorf("FairnessAllowed = %v, %v; want %.4f", got, err, want)
	}
	// More throttles allow more fairness; more elasticity less.
	a, _ := storm.FairnessAllowed(10, 1, 0.05, 50)
	b, _ := storm.FairnessAllowed(10, 1, 0.05, 200)
	c, _ := storm.FairnessAllowed(10, 2, 0.05, 200)
	if !(a < b && c < b) {
		t.Errorf("allowed %v at 50 throttles, %v at 200, %v at 200 and twice the elasticity", a, b, c)
	}
	// A client that does not respond is allowed 1, throttled or not.
	for _, k := range []float64{0, 10} {
		if f, err := storm.FairnessAllowed(10, 0, 0, k); err != nil || f != 1 {
			t.Errorf("FairnessAllowed(e = 0, K = %v) = %v, %v; want 1", k, f, err)
		}
	}
	// One that does not settle on the share is allowed nothing.
	if f, err := storm.FairnessAllowed(10, math.Inf(1), 0.05, 50); err != nil || f != 0 {
		t.Errorf("FairnessAllowed(e = +Inf) = %v, %v; want 0", f, err)
	}
	for name, args := range map[string][4]float64{
		"one client":     {1, 1, 0.05, 50},
		"negative e":     {10, -1, 0.05, 50},
		"NaN e":          {10, math.NaN(), 0.05, 50},
		"-infinite e":    {10, math.Inf(-1), 0.05, 50},
		"share 1":        {10, 1, 1, 50},
		"negative share": {10, 1, -0.1, 50},
		"no throttles":   {10, 1, 0.05, 0},
		"NaN throttles":  {10, 1, 0.05, math.NaN()},
	} {
		if f, err := storm.FairnessAllowed(int(args[0]), args[1], args[2], args[3]); err == nil {
			t.Errorf("%s: FairnessAllowed%v = %v, no error", name, args, f)
		}
	}
}

// The floors are the laws that meet FairnessAllowed with equality at every
// rate, or every overload: build each law from its floor and check, at a
// few points, that the elasticity it has (by finite differences) allows
// exactly the fairness asked.
func TestShareFloors(t *testing.T) {
	const n, f, run = 10, 0.8, 120.0
	check := func(name string, rate, e, p float64) {
		t.Helper()
		k := p * rate * run / (1 - p) // throttles: the share of the attempts
		got, err := storm.FairnessAllowed(n, e, p, k)
		if err != nil || math.Abs(got-f) > 1e-3 {
			t.Errorf("%s: the floor's law allows %v (%v), want %v", name, got, err, f)
		}
	}
	const lo, hi = 1.0, 10.0
	share := func(x float64) float64 { // p(x) of the law at the floor, from x to hi
		p, err := storm.ShareFloorAcrossRates(n, f, run, x, hi)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The elasticity of a law p(v): |d ln v / d ln p|.
	elasticity := func(p func(float64) float64, v float64) float64 {
		const h = 1e-4
		return 2 * h / math.Abs(math.Log(p(v*(1+h))/p(v*(1-h))))
	}
	for _, x := range []float64{1, 2, 5} {
		check("across rates", x, elasticity(share, x), share(x))
	}
	const rate, pLo = 10.0, 0.05
	at := func(o float64) float64 { // p at overload o of the law at the floor from 3x
		p, err := storm.ShareFloorAcrossOverloads(n, f, run, rate, 3, o, pLo)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, o := range []float64{4, 6, 10} {
		check("across overloads", rate, elasticity(at, o), at(o))
	}
	// Both floors rise with the fairness asked and fall with the run.
	p1, _ := storm.ShareFloorAcrossRates(n, 0.7, run, lo, hi)
	p2, _ := storm.ShareFloorAcrossRates(n, 0.8, run, lo, hi)
	p3, _ := storm.ShareFloorAcrossRates(n, 0.8, 5*run, lo, hi)
	if !(p1 < p2 && p3 < p2) {
		t.Errorf("floors %v (fairness 0.7), %v (0.8), %v (0.8 over 5 times the run)", p1, p2, p3)
	}

	for name, call := range map[string]func() (float64, error){
		"rates: fairness 1":   func() (float64, error) { return storm.ShareFloorAcrossRates(n, 1, run, lo, hi) },
		"rates: fairness 0":   func() (float64, error) { return storm.ShareFloorAcrossRates(n, 0, run, lo, hi) },
		"rates: one client":   func() (float64, error) { return storm.ShareFloorAcrossRates(1, f, run, lo, hi) },
		"rates: no run":       func() (float64, error) { return storm.ShareFloorAcrossRates(n, f, 0, lo, hi) },
		"rates: lo above hi":  func() (float64, error) { return storm.ShareFloorAcrossRates(n, f, run, hi, lo) },
		"rates: lo 0":         func() (float64, error) { return storm.ShareFloorAcrossRates(n, f, run, 0, hi) },
		"rates: hi infinite":  func() (float64, error) { return storm.ShareFloorAcrossRates(n, f, run, lo, math.Inf(1)) },
		"loads: NaN run":      func() (float64, error) { return storm.ShareFloorAcrossOverloads(n, f, math.NaN(), rate, 3, 10, pLo) },
		"loads: no rate":      func() (float64, error) { return storm.ShareFloorAcrossOverloads(n, f, run, 0, 3, 10, pLo) },
		"loads: lo below 1":   func() (float64, error) { return storm.ShareFloorAcrossOverloads(n, f, run, rate, 0.5, 10, pLo) },
		"loads: lo above hi":  func() (float64, error) { return storm.ShareFloorAcrossOverloads(n, f, run, rate, 10, 3, pLo) },
		"loads: share 1":      func() (float64, error) { return storm.ShareFloorAcrossOverloads(n, f, run, rate, 3, 10, 1) },
		"loads: fairness NaN": func() (float64, error) { return storm.ShareFloorAcrossOverloads(n, math.NaN(), run, rate, 3, 10, pLo) },
	} {
		if p, err := call(); err == nil {
			t.Errorf("%s: %v, no error", name, p)
		}
	}
}
