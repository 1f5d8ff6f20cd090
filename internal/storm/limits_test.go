package storm_test

import (
	"os"
	"testing"

	"github.com/retrykit/retry/internal/storm"
)

var limitSeeds = []uint64{1, 2, 3, 4, 5}

func TestLimits(t *testing.T) {
	scs := storm.LimitScenarios()
	sums, err := storm.CompareLimits(scs, limitSeeds)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		_ = storm.WriteLimitsTable(os.Stdout, scs, sums, len(limitSeeds))
	}
}
