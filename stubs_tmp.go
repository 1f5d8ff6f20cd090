package retry

// Temporary: replaced by strategy_adaptive.go.
type adaptiveConfig struct {
	standardConfig
	limiter        limiterConfig
	limiterOptions bool
}
