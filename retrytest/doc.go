// Package retrytest helps test code that uses package retry, without real
// waits and without sharing state between tests.
//
// [Clock] is a manual clock that also provides the waits of the
// strategies built on it: a test advances it, and every retry whose
// backoff is over goes ahead at once. [Context] gives a test a strategy of
// its own for code that calls retry.Do without one, so that tests running
// in parallel never share the process-wide default strategy and its retry
// quota.
//
// A test that only needs waits to take no time can also run in a
// testing/synctest bubble with the default clock, which needs nothing
// from this package.
package retrytest
