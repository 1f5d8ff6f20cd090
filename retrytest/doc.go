// Package retrytest helps test code that uses package retry, without real
// waits and without sharing state between tests.
//
// [Standard] and [Adaptive] give a test a strategy of its own, of either
// mode, in one line; [Context] and [AdaptiveContext] put one in the test's
// context for code that calls retry.Do without one, so that tests running
// in parallel never share the process-wide default strategy and its retry
// quota.
//
// [Clock] is a manual clock that also provides the waits of the
// strategies built on it. [Clock.Run] runs the code under test and ends
// each of its waits as soon as it starts, returning how long they were in
// all:
//
//	clock := retrytest.NewClock(time.Time{})
//	s := retrytest.Standard(t, retry.WithClock(clock))
//	waited := clock.Run(func() { _, err = retry.Do(ctx, fn, retry.WithStrategy(s)) })
//
// A test that must step time itself uses [Clock.BlockUntilWaiters] and
// [Clock.Advance].
//
// A test that only needs waits to take no time can also run in a
// testing/synctest bubble with the default clock, which needs nothing
// from this package.
package retrytest
