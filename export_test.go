package retry

// WithAbsoluteGrowth adds g*t^3 sends per second to the default
// algorithm's growth curve, t seconds after a cut, for the measurement in
// growth_tradeoff_test.go.
func WithAbsoluteGrowth(g float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.absGrowth = g })
}

// WithAttemptClock counts the default algorithm's growth curve's time in
// the client's own attempts as well, a attempts for a second, for the
// measurement in growth_tradeoff_test.go.
func WithAttemptClock(a float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.attemptClock = a })
}

// WithEvidenceAttempts makes the default algorithm decide each cut on at
// least n attempts made since the last one, for the measurement in
// growth_tradeoff_test.go.
func WithEvidenceAttempts(n int) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.evidenceAttempts = n })
}
