package awsstorm

import (
	"sync"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/internal/storm"
)

// The names of the SDK's rows in the table.
const (
	AWSStandard = "aws-standard"
	AWSAdaptive = "aws-adaptive"
)

// A Contender is a retry configuration in the table.
type Contender struct {
	Name        string
	Description string
	run         func(storm.Scenario, uint64) (storm.Result, error)
}

// Run simulates c in sc with seed. The same arguments give the same
// Result.
func (c Contender) Run(sc storm.Scenario, seed uint64) (storm.Result, error) { return c.run(sc, seed) }

func retrykitMode(m storm.Mode) Contender {
	return Contender{Name: m.String(), Description: "retrykit " + m.Description(),
		run: func(sc storm.Scenario, seed uint64) (storm.Result, error) { return storm.Run(sc, m, seed) }}
}

// Contenders returns the rows of the table: retrykit's standard and
// adaptive modes, as in examples/storm, and the SDK's standard and
// adaptive retryers.
func Contenders() []Contender {
	return []Contender{
		retrykitMode(storm.Standard),
		retrykitMode(storm.Adaptive),
		{
			Name:        AWSStandard,
			Description: "aws-sdk-go-v2 retry.NewStandard(): defaults (3 attempts, 0-2^n s jitter backoff capped at 20 s, 500-token quota, 5 per retry, 1 back per successful attempt); public API",
			run:         RunStandard,
		},
		{
			Name:        AWSAdaptive,
			Description: "aws-sdk-go-v2 retry.NewAdaptiveMode(): defaults (standard + CUBIC client rate limiter); its clock and sleeps redirected to the simulation's through go:linkname",
			run:         RunAdaptive,
		},
	}
}

// RunStandard simulates the SDK's standard retryer, NewStandard with its
// defaults but JitterBackoff on the simulation's seeded random source, in
// sc, and names the Result's mode "aws-standard". It uses only the SDK's
// API: the standard retryer reads no clock. The same arguments give the
// same Result.
func RunStandard(sc storm.Scenario, seed uint64) (storm.Result, error) {
	return storm.RunStrategy(sc, AWSStandard, func(_ retry.Clock, random func() float64) (storm.Stepper, error) {
		r, err := NewStandard(random)
		if err != nil {
			return nil, err
		}
		return NewStrategy(r, SDKError), nil
	}, seed)
}

// RunAll runs every contender in every scenario with seed, concurrently
// but for RunAdaptive's runs, which take turns. The results come scenario
// by scenario, contenders in order.
func RunAll(scenarios []storm.Scenario, contenders []Contender, seed uint64) ([]storm.Result, error) {
	results := make([]storm.Result, len(scenarios)*len(contenders))
	errs := make([]error, len(results))
	var wg sync.WaitGroup
	for i, sc := range scenarios {
		for j, c := range contenders {
			k := i*len(contenders) + j
			wg.Go(func() { results[k], errs[k] = c.Run(sc, seed) })
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}
