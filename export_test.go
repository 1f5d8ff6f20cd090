package retry

// WithAbsoluteGrowth adds g*t^3 sends per second to the default
// algorithm's growth curve, t seconds after a cut, for the measurement in
// growth_tradeoff_test.go.
func WithAbsoluteGrowth(g float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.absGrowth = g })
}
