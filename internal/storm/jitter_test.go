package storm

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrykit/retry"
)

func compareJitter(t *testing.T, sc JitterScenario, seed uint64) map[JitterKind]JitterResult {
	t.Helper()
	rs, err := CompareJitter(sc, JitterKinds, seed)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(JitterKinds) {
		t.Fatalf("got %d results for %d kinds", len(rs), len(JitterKinds))
	}
	m := map[JitterKind]JitterResult{}
	for i, r := range rs {
		if r.Kind != JitterKinds[i] {
			t.Fatalf("result %d is %v, want %v", i, r.Kind, JitterKinds[i])
		}
		m[r.Kind] = r
	}
	return m
}

// The qualitative result the demo reports, checked on several seeds: once
// the server heals, clients without jitter arrive all at once, in waves
// the server can serve only a tenth of, so they take longest and send
// most; every jittered kind spreads them out. Over the whole run, equal
// and decorrelated jitter, whose delays have a floor, also keep the
// busiest window of retries below no jitter's; full jitter does not, as
// its first retries, drawn from (0, Base], crowd the first windows.
func TestJitterComparison(t *testing.T) {
	sc := DefaultJitterScenario()
	for seed := uint64(1); seed <= 5; seed++ {
		rs := compareJitter(t, sc, seed)
		none := rs[NoJitter]
		if none.PeakAfterHeal != sc.Clients || none.PeakLoad != sc.Clients {
			t.Errorf("seed %d: without jitter the peaks are %d and %d, want every client (%d) at once",
				seed, none.PeakLoad, none.PeakAfterHeal, sc.Clients)
		}
		for _, k := range []JitterKind{FullJitter, EqualJitter, DecorrelatedJitter} {
			r := rs[k]
			if r.Succeeded != sc.Clients {
				t.Errorf("seed %d, %v: %d of %d clients succeeded", seed, k, r.Succeeded, sc.Clients)
			}
			if r.PeakAfterHeal >= none.PeakAfterHeal {
				t.Errorf("seed %d, %v: peak after the heal %d, not below no jitter's %d", seed, k, r.PeakAfterHeal, none.PeakAfterHeal)
			}
			if r.P99 >= none.P99 || r.Max >= none.Max {
				t.Errorf("seed %d, %v: p99 %v, max %v; not below no jitter's %v, %v", seed, k, r.P99, r.Max, none.P99, none.Max)
			}
			if r.Attempts >= none.Attempts {
				t.Errorf("seed %d, %v: %d attempts, not below no jitter's %d", seed, k, r.Attempts, none.Attempts)
			}
			if k != FullJitter && r.PeakLoad >= none.PeakLoad {
				t.Errorf("seed %d, %v: peak %d, not below no jitter's %d", seed, k, r.PeakLoad, none.PeakLoad)
			}
		}
	}
}

func TestJitterDeterministic(t *testing.T) {
	sc := DefaultJitterScenario()
	a, b, c := compareJitter(t, sc, 1), compareJitter(t, sc, 1), compareJitter(t, sc, 2)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two runs with the same seed differ:\n%+v\n%+v", a, b)
	}
	if reflect.DeepEqual(a[FullJitter], c[FullJitter]) {
		t.Error("seeds 1 and 2 gave the same full-jitter result")
	}
	if !reflect.DeepEqual(a[NoJitter], c[NoJitter]) {
		t.Error("without jitter, the seed changed the result")
	}
}

func TestJitterInvariants(t *testing.T) {
	scs := []JitterScenario{DefaultJitterScenario()}
	small := DefaultJitterScenario()
	small.Clients, small.Capacity, small.Latency, small.HealAt = 7, 1, 0, 0
	scs = append(scs, small)
	unhealed := DefaultJitterScenario()
	unhealed.HealAt, unhealed.MaxAttempts = time.Hour, 4
	scs = append(scs, unhealed)
	for _, sc := range scs {
		for _, r := range compareJitter(t, sc, 3) {
			if r.Succeeded+r.Failed != sc.Clients {
				t.Errorf("%+v, %v: %d succeeded + %d failed != %d clients", sc, r.Kind, r.Succeeded, r.Failed, sc.Clients)
			}
			if r.Attempts < sc.Clients || r.Attempts > sc.Clients*sc.MaxAttempts {
				t.Errorf("%v: %d attempts, want [%d, %d]", r.Kind, r.Attempts, sc.Clients, sc.Clients*sc.MaxAttempts)
			}
			if r.Succeeded > 0 && !(sc.HealAt+sc.Latency <= r.P50 && r.P50 <= r.P99 && r.P99 <= r.Max) {
				t.Errorf("%v: want heal+latency %v <= p50 %v <= p99 %v <= max %v", r.Kind, sc.HealAt+sc.Latency, r.P50, r.P99, r.Max)
			}
			// A client can retry more than once in a window, so a peak
			// can pass the number of clients, but not the retries sent.
			if r.PeakLoad > r.Attempts-sc.Clients || r.PeakAfterHeal > r.Attempts {
				t.Errorf("%v: peaks %d, %d above the attempts sent (%d)", r.Kind, r.PeakLoad, r.PeakAfterHeal, r.Attempts)
			}
		}
	}
	for _, r := range compareJitter(t, unhealed, 3) {
		if r.Succeeded != 0 || r.Failed != unhealed.Clients || r.Attempts != unhealed.Clients*unhealed.MaxAttempts || r.Max != 0 || r.PeakAfterHeal != 0 {
			t.Errorf("%v, never healed: %+v; want every client to spend its %d attempts", r.Kind, r, unhealed.MaxAttempts)
		}
	}
}

func TestJitterBadInput(t *testing.T) {
	for _, mod := range []func(*JitterScenario){
		func(sc *JitterScenario) { sc.Clients = 0 },
		func(sc *JitterScenario) { sc.HealAt = -1 },
		func(sc *JitterScenario) { sc.Latency = -1 },
		func(sc *JitterScenario) { sc.Capacity = 0 },
		func(sc *JitterScenario) { sc.Window = 0 },
		func(sc *JitterScenario) { sc.MaxAttempts = 0 },
	} {
		sc := DefaultJitterScenario()
		mod(&sc)
		if _, err := CompareJitter(sc, JitterKinds, 1); err == nil {
			t.Errorf("%+v: no error", sc)
		}
	}
	for _, mod := range []func(*JitterScenario){
		func(sc *JitterScenario) { sc.Base = -1 },
		func(sc *JitterScenario) { sc.Cap = sc.Base - 1 },
	} {
		sc := DefaultJitterScenario()
		mod(&sc)
		for _, k := range JitterKinds {
			if _, err := CompareJitter(sc, []JitterKind{k}, 1); !errors.Is(err, retry.ErrInvalidConfig) {
				t.Errorf("%v, %+v: %v, want ErrInvalidConfig", k, sc, err)
			}
		}
	}
	if _, err := CompareJitter(DefaultJitterScenario(), []JitterKind{JitterKind(9)}, 1); err == nil {
		t.Error("unknown kind: no error")
	}
	if got := JitterKind(9).String(); got != "JitterKind(9)" {
		t.Errorf("String = %q", got)
	}
}

func TestWriteJitterTable(t *testing.T) {
	sc := DefaultJitterScenario()
	rs, err := CompareJitter(sc, JitterKinds, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteJitterTable(&b, sc, rs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"100 clients fail at 0s", "heals at 2s", "p99", "peak heal", "\nnone ", "\nfull ", "\nequal ", "\ndecorrelated "} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// The none row shows every client in one window after the heal.
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 10 && f[0] == "none" && f[9] != "100" {
			t.Errorf("none row %q: peak heal %s, want 100", line, f[9])
		}
	}
}
