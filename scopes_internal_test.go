package retry

import (
	"fmt"
	"testing"
)

// Callers taking turns with as many kept names as the default bound find
// nearly all of them in one of their two hot slots, and once they have,
// a round of lookups writes no slot: names whose slots are both taken
// stay out rather than take turns writing them.
func TestManyScopesTakingTurnsStayHot(t *testing.T) {
	s, err := NewStandard()
	if err != nil {
		t.Fatal(err)
	}
	c := s.e.scopes
	names := make([]string, DefaultMaxScopes)
	for i := range names {
		names[i] = fmt.Sprintf("host-%d.example.com", i)
	}
	for range 3 {
		for _, name := range names {
			c.get(name)
		}
	}
	hot := 0
	for _, name := range names {
		if c.hotScope(name) != nil || c.hotIn(c.otherSlot(name), name) != nil {
			hot++
		}
	}
	if hot < len(names)*95/100 {
		t.Errorf("%d of %d names taking turns are hot, want at least 95%%", hot, len(names))
	}
	before := make([]*scopeState, hotSlots)
	for i := range c.hot {
		before[i] = c.hot[i].Load()
	}
	for _, name := range names {
		if st := c.get(name); st.name != name {
			t.Fatalf("%q found the scope %q", name, st.name)
		}
	}
	for i := range c.hot {
		if c.hot[i].Load() != before[i] {
			t.Fatalf("hot slot %d written by a round of lookups of scopes already hot", i)
		}
	}
}
