package storm_test

import (
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/retrykit/retry/internal/storm"
)

func tradeoffPoints() []storm.TradeoffPoint {
	return []storm.TradeoffPoint{
		{Label: "default", Family: "default", SmallThrottled: [2]float64{0.169, 0.174}, Fairness: [2]float64{0.18, 0.37}},
		{Label: "g = 0.03", Family: "absolute <growth>", SmallThrottled: [2]float64{0.279, 0.283}, Fairness: [2]float64{0.50, 0.62}},
		{Label: "g = 0.4", Family: "absolute <growth>", SmallThrottled: [2]float64{0.368, 0.370}, Fairness: [2]float64{0.30, 0.64}},
		{Label: "a = 20 & more", Family: "attempts", SmallThrottled: [2]float64{0.049, 0.053}, Fairness: [2]float64{0.03, 0.05}},
	}
}

// The chart is well-formed SVG with a point, a box and a key line for
// every design, a key line for every family but the default's, and its
// labels escaped.
func TestWriteTradeoffSVG(t *testing.T) {
	points := tradeoffPoints()
	var b strings.Builder
	if err := storm.WriteTradeoffSVG(&b, points, "seeds 1-5 & a note"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	wellFormed(t, svg)
	if n := strings.Count(svg, "<circle"); n != len(points) {
		t.Errorf("%d points drawn, want %d", n, len(points))
	}
	for _, want := range []string{"a = 20 &amp; more", "absolute &lt;growth&gt;", "seeds 1-5 &amp; a note", ">target<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if n := strings.Count(svg, "absolute &lt;growth&gt;"); n != 1 {
		t.Errorf("family in the key %d times, want once", n)
	}
}

// wellFormed fails t unless svg is well-formed XML.
func wellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
	}
}

func TestWriteTradeoffSVGBadInput(t *testing.T) {
	bad := map[string]func([]storm.TradeoffPoint) []storm.TradeoffPoint{
		"no points": func([]storm.TradeoffPoint) []storm.TradeoffPoint { return nil },
		"NaN":       func(p []storm.TradeoffPoint) []storm.TradeoffPoint { p[1].Fairness[0] = math.NaN(); return p },
		"min above max": func(p []storm.TradeoffPoint) []storm.TradeoffPoint {
			p[2].SmallThrottled = [2]float64{0.3, 0.2}
			return p
		},
		"above 1":  func(p []storm.TradeoffPoint) []storm.TradeoffPoint { p[0].Fairness[1] = 1.2; return p },
		"negative": func(p []storm.TradeoffPoint) []storm.TradeoffPoint { p[3].SmallThrottled[0] = -0.1; return p },
		"too many families": func(p []storm.TradeoffPoint) []storm.TradeoffPoint {
			for i := range 8 {
				q := p[1]
				q.Family = strings.Repeat("f", i+1)
				p = append(p, q)
			}
			return p
		},
	}
	for name, f := range bad {
		var b strings.Builder
		if err := storm.WriteTradeoffSVG(&b, f(tradeoffPoints()), ""); err == nil {
			t.Errorf("%s: no error", name)
		} else if b.Len() != 0 {
			t.Errorf("%s: wrote %d bytes with the error %v", name, b.Len(), err)
		}
	}
}

// The bound's chart is well-formed SVG with a point for every design, the
// diagonal, and its labels escaped; it fails on what it cannot draw.
func TestWriteBoundSVG(t *testing.T) {
	points := []storm.BoundPoint{
		{Label: "default", Family: "default", Allowed: 0.40, Fairness: [2]float64{0.17, 0.38}},
		{Label: "cuts on <20>", Family: "evidence", Allowed: 0.80, Fairness: [2]float64{0.64, 0.81}},
		{Label: "told", Family: "told & fixed", Allowed: 1, Fairness: [2]float64{0.98, 0.99}},
	}
	var b strings.Builder
	if err := storm.WriteBoundSVG(&b, points, "seeds 1-5"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	wellFormed(t, svg)
	if n := strings.Count(svg, "<circle"); n != len(points) {
		t.Errorf("%d points drawn, want %d", n, len(points))
	}
	for _, want := range []string{"cuts on &lt;20&gt;", "told &amp; fixed", `stroke-dasharray="4 3"`, ">target<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	for name, p := range map[string]storm.BoundPoint{
		"allowed above 1": {Label: "x", Allowed: 1.1, Fairness: [2]float64{0.5, 0.6}},
		"allowed NaN":     {Label: "x", Allowed: math.NaN(), Fairness: [2]float64{0.5, 0.6}},
		"min above max":   {Label: "x", Allowed: 0.5, Fairness: [2]float64{0.6, 0.5}},
	} {
		b.Reset()
		if err := storm.WriteBoundSVG(&b, append(points[:1:1], p), ""); err == nil || b.Len() != 0 {
			t.Errorf("%s: error %v, %d bytes written", name, err, b.Len())
		}
	}
	if err := storm.WriteBoundSVG(&b, nil, ""); err == nil {
		t.Error("no points: no error")
	}
}
