package storm

import (
	"errors"
	"fmt"
	"math"
)

// What fairness between equal clients costs a client that learns from its
// own attempts.
//
// A token-bucket server throttles every client's attempt with the same
// probability p at a given moment, and a client's rate can follow only
// what its own attempts met. Count each attempt as a draw that is
// throttled with probability p: N attempts carry N/(p(1-p)) of Fisher
// information about p, and the Cramér-Rao bound holds for any statistic
// of them, a client's mean rate over a run included. If that mean rate
// moves by a factor of e per factor of the throttled share (e, the
// elasticity, is |d ln rate / d ln p| over a change in the capacity), then
//
//	Var(ln rate) >= e² (1-p) / K,   K = pN, the throttles the client met,
//
// whatever the algorithm. Fairness, the worst of n clients' successes over
// the best's, is then about exp(-R(n) e sqrt((1-p)/K)) at most, with R(n)
// the expected range of n standard normal draws. A client's information
// is what this counts only if its attempts were independent draws;
// throttles that come in bursts carry less.
//
// The bound ties three things: fairness costs throttles (K grows with p),
// a client whose rate responds less to the share (small e) needs fewer,
// and a rate law is one curve for every fleet, so a small e at one share
// means a large change in p between shares. FairnessAllowed, and the two
// floors below, compute it.

// ExpectedRange is the expected range (largest minus smallest) of n
// independent standard normal draws: 1.128 for 2, 3.078 for 10, 5.015 for
// 100. It fails for n below 2.
func ExpectedRange(n int) (float64, error) {
	if n < 2 {
		return 0, fmt.Errorf("storm: ExpectedRange: n = %d, want 2 or more", n)
	}
	// E[range] = ∫ 1 - Φ(x)^n - (1-Φ(x))^n dx, by Simpson's rule: the
	// integrand is below 1e-15 beyond ±12 for any n this is asked for.
	f := func(x float64) float64 {
		phi := 0.5 * math.Erfc(-x/math.Sqrt2)
		return 1 - math.Pow(phi, float64(n)) - math.Pow(1-phi, float64(n))
	}
	const lo, hi, steps = -12.0, 12.0, 4800
	h := (hi - lo) / steps
	sum := f(lo) + f(hi)
	for i := 1; i < steps; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(lo+float64(i)*h)
	}
	return sum * h / 3, nil
}

// FairnessAllowed is the fairness between n equal clients that the
// Cramér-Rao bound above allows a rate law of the given elasticity, at a
// throttled share p, with K throttles a client over the run:
// exp(-ExpectedRange(n) e sqrt((1-p)/K)). A client that does not respond to
// throttles (e = 0) is allowed 1, whatever it met; one whose rate does not
// settle on the share at all (e = +Inf: the share does not fall as the
// capacity rises) is allowed 0. It fails for n below 2, a negative or NaN
// e, p outside [0, 1), and, when e > 0, K not above 0.
func FairnessAllowed(n int, e, p, k float64) (float64, error) {
	r, err := ExpectedRange(n)
	switch {
	case err != nil:
		return 0, err
	case !(e >= 0):
		return 0, fmt.Errorf("storm: FairnessAllowed: elasticity %v, want e >= 0", e)
	case !(p >= 0 && p < 1):
		return 0, fmt.Errorf("storm: FairnessAllowed: throttled share %v, want 0 <= p < 1", p)
	case e == 0:
		return 1, nil
	case !(k > 0) || math.IsInf(k, 0):
		return 0, fmt.Errorf("storm: FairnessAllowed: %v throttles a client, want a finite K > 0", k)
	case math.IsInf(e, 1):
		return 0, nil
	}
	return math.Exp(-r * e * math.Sqrt((1-p)/k)), nil
}

// spreadAllowed is the standard deviation of the log of a client's rate
// that keeps n clients at least fairness f on average: -ln f / R(n).
func spreadAllowed(n int, f float64) (float64, error) {
	if !(f > 0 && f < 1) {
		return 0, fmt.Errorf("storm: fairness %v, want 0 < f < 1", f)
	}
	r, err := ExpectedRange(n)
	if err != nil {
		return 0, err
	}
	return -math.Log(f) / r, nil
}

// ShareFloorAcrossRates is the least throttled share, at the lowest rate,
// of a rate law that ignores the client's demand (its rate follows the
// share alone, as the default's and the published algorithm's do) and
// keeps every fleet of n equal clients at least fairness f over a run of
// run seconds whatever their share of the capacity, from lo to hi
// successes a second each.
//
// With x a client's rate, p the share, T the run and s = -ln f / R(n),
// FairnessAllowed asks e (1-p)/sqrt(pxT) <= s at every x (K = pxT/(1-p)
// throttles, e = |d ln x / d ln p|): so
// |dx| / x^(3/2) <= s sqrt(T) |dp| / (sqrt(p) (1-p)), and from lo to hi
// (the share falls as the rate rises) 1/sqrt(lo) - 1/sqrt(hi) <= s sqrt(T)
// (artanh sqrt(p(lo)) - artanh sqrt(p(hi))). The floor takes p(hi) = 0,
// which leaves p(lo) the least. It fails on bad input.
func ShareFloorAcrossRates(n int, f, run, lo, hi float64) (float64, error) {
	s, err := spreadAllowed(n, f)
	if err != nil {
		return 0, err
	}
	if !(run > 0) || math.IsInf(run, 0) || !(lo > 0 && lo < hi) || math.IsInf(hi, 0) {
		return 0, errors.New("storm: ShareFloorAcrossRates: want a finite run > 0 and rates 0 < lo < hi")
	}
	a := (1/math.Sqrt(lo) - 1/math.Sqrt(hi)) / (s * math.Sqrt(run))
	return math.Pow(math.Tanh(a), 2), nil
}

// ShareFloorAcrossOverloads is the least throttled share at overload hi of
// a rate law that scales with the client's demand (its rate a fraction of
// its demand that follows the share, as WithDemandClock's does), that keeps
// every fleet of n equal clients at least fairness f over a run of run
// seconds at each overload from lo to hi (demand over what the service
// admits), its clients each served rate successes a second, given the
// share pLo it sees at overload lo.
//
// The same steps as ShareFloorAcrossRates, with the rate fixed and the
// fraction of demand sent falling from 1/lo to 1/hi: ln(hi/lo) <= 2 s
// sqrt(rate T) (artanh sqrt(p(hi)) - artanh sqrt(p(lo))). It fails on bad
// input.
func ShareFloorAcrossOverloads(n int, f, run, rate, lo, hi, pLo float64) (float64, error) {
	s, err := spreadAllowed(n, f)
	if err != nil {
		return 0, err
	}
	if !(run > 0) || math.IsInf(run, 0) || !(rate > 0) || math.IsInf(rate, 0) ||
		!(lo >= 1 && lo < hi) || math.IsInf(hi, 0) || !(pLo >= 0 && pLo < 1) {
		return 0, errors.New("storm: ShareFloorAcrossOverloads: want a finite run and rate > 0, overloads 1 <= lo < hi, and 0 <= pLo < 1")
	}
	a := math.Atanh(math.Sqrt(pLo)) + math.Log(hi/lo)/(2*s*math.Sqrt(rate*run))
	return math.Pow(math.Tanh(a), 2), nil
}
