package retry

// ScopeStats is a snapshot of the state a strategy keeps for one scope,
// for metrics and tests.
type ScopeStats struct {
	// Scope is the scope's name; "" is the default scope.
	Scope string

	// RetryQuota is the state of the scope's retry quota, or nil if the
	// strategy has none. With WithRetryQuota every scope reports the one
	// shared bucket.
	RetryQuota *TokenBucketStats

	// RateLimiter is the state of the scope's rate limiter: nil for a
	// Standard strategy. With WithRateLimiter every scope reports the one
	// shared limiter.
	RateLimiter *RateLimiterStats
}

// Stats returns a snapshot of the state s keeps for scope, and false if it
// keeps none: a named scope that was never used, or was forgotten as the
// least recently used (see WithMaxScopes). The default scope "" always
// has state. When every scope shares the default state (a Standard with
// WithRetryQuota or WithoutRetryQuota; an Adaptive with that and
// WithRateLimiter), any scope reports it. Stats does not count as a use of the scope.
func (s *Standard) Stats(scope string) (ScopeStats, bool) { return s.engine().stats(scope) }

// AllStats returns a snapshot of every scope s keeps state for: the
// default scope first, then named scopes from the most to the least
// recently used. It does not count as a use of any scope.
func (s *Standard) AllStats() []ScopeStats { return s.engine().allStats() }

// Stats returns a snapshot of the state a keeps for scope, and false if it
// keeps none (see Standard.Stats).
func (a *Adaptive) Stats(scope string) (ScopeStats, bool) { return a.engine().stats(scope) }

// AllStats returns a snapshot of every scope a keeps state for (see
// Standard.AllStats).
func (a *Adaptive) AllStats() []ScopeStats { return a.engine().allStats() }

func (e *engine) stats(scope string) (ScopeStats, bool) {
	if !e.valid() {
		return ScopeStats{}, false
	}
	if scope == "" || e.scopes == nil {
		return e.def.stats(scope), true
	}
	st, ok := e.scopes.lookup(scope)
	if !ok {
		return ScopeStats{}, false
	}
	return st.stats(scope), true
}

func (e *engine) allStats() []ScopeStats {
	if !e.valid() {
		return nil
	}
	all := []ScopeStats{e.def.stats("")}
	if e.scopes != nil {
		for _, st := range e.scopes.snapshot() {
			all = append(all, st.stats(st.name))
		}
	}
	return all
}

func (st *scopeState) stats(name string) ScopeStats {
	s := ScopeStats{Scope: name}
	if st.bucket != nil {
		b := st.bucket.Stats()
		s.RetryQuota = &b
	}
	if st.limiter != nil {
		l := st.limiter.Stats()
		s.RateLimiter = &l
	}
	return s
}
