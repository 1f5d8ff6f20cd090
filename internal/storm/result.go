package storm

import (
	"math"
	"time"
)

// result computes the metrics from the counts of a finished run.
func (s *sim) result(mode string) Result {
	r := s.res
	r.Scenario, r.Mode = s.sc.Name, mode
	r.Amplification = ratio(r.Attempts, r.Requests)
	r.ThrottledShare = ratio(r.Throttled, r.Attempts)
	r.Success = ratio(r.Succeeded, r.Requests)
	r.Goodput = float64(r.Succeeded) / s.sc.servable()
	if s.sc.Incident.Outage {
		r.OutageAmplification = ratio(s.outageAttempts, s.outageRequests)
	}
	r.Recovery = s.recovery()
	r.Fairness = s.fairness()
	for _, c := range s.clients {
		r.ClientSucceeded = append(r.ClientSucceeded, c.succeeded)
	}
	r.LatencyP50 = percentile(s.latencies, 0.50)
	r.LatencyP99 = percentile(s.latencies, 0.99)
	r.FailP50 = percentile(s.failTimes, 0.50)
	for i := range s.bins {
		c, _ := s.sc.capacityAt(time.Duration(i) * Bin)
		s.bins[i].Capacity = c
	}
	r.Series = s.bins
	r.Fine = s.fine
	return r
}

// servable is what the server could serve over the run: its capacity
// integrated over time.
func (sc *Scenario) servable() float64 {
	total := sc.Capacity * sc.Duration.Seconds()
	if sc.hasIncident() {
		c, _ := sc.capacityAt(sc.Incident.Start)
		total -= (sc.Capacity - c) * (sc.Incident.End - sc.Incident.Start).Seconds()
	}
	return total
}

// recovery returns the time from the heal to the first 1-second window,
// on a 100-ms grid, whose successes reach recoveryLevel of the baseline
// rate (see Result.Recovery); -1 if there is no incident or no such window.
func (s *sim) recovery() time.Duration {
	inc := s.sc.Incident
	if !s.sc.hasIncident() {
		return -1
	}
	from, to := inc.Start-recoveryBaseline, inc.Start
	if from < 0 {
		from, to = s.sc.Duration-recoveryBaseline, s.sc.Duration
		if from < inc.End {
			return -1 // no baseline outside the incident
		}
	}
	baseline := 0
	for _, c := range s.fine[from/recoveryStep : to/recoveryStep] {
		baseline += c
	}
	target := recoveryLevel * float64(baseline) / (to - from).Seconds() // per second
	span := int(time.Second / recoveryStep)
	heal := int(inc.End / recoveryStep)
	for k := heal; k+span <= len(s.fine); k++ {
		sum := 0
		for _, c := range s.fine[k : k+span] {
			sum += c
		}
		if float64(sum) >= target {
			return time.Duration(k-heal) * recoveryStep
		}
	}
	return -1
}

// fairness returns the worst client's successes per worker over the best
// client's.
func (s *sim) fairness() float64 {
	worst, best := math.Inf(1), 0.0
	for c := range s.clients {
		per := float64(s.clients[c].succeeded) / float64(s.sc.workersOf(c))
		worst, best = min(worst, per), max(best, per)
	}
	if best == 0 {
		return 1 // nobody was served: alike
	}
	return worst / best
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
