package storm

import (
	"slices"
	"sort"
)

// Sorted is one figure of a scenario's runs over many seeds, in increasing
// order: what the tests that count how many runs miss a target read.
type Sorted []float64

// OverSeeds measures one figure of a run on every seed from first to last
// and returns the figures sorted. It stops at the first error.
func OverSeeds(first, last uint64, measure func(seed uint64) (float64, error)) (Sorted, error) {
	var s Sorted
	for seed := first; seed <= last; seed++ {
		v, err := measure(seed)
		if err != nil {
			return nil, err
		}
		s = append(s, v)
	}
	slices.Sort(s)
	return s, nil
}

// Below counts the runs whose figure is below x.
func (s Sorted) Below(x float64) int { return sort.SearchFloat64s(s, x) }

// Median is the middle run's figure (of an even count, the upper middle).
func (s Sorted) Median() float64 { return s[len(s)/2] }
