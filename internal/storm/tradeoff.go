package storm

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// A TradeoffPoint is one design of adaptive mode's growth trade-off, as
// the root package's TestGrowthTradeoff measures it: the throttled share
// of the limits table's hundred small clients against the fairness between
// its ten equal clients at 3x, each the min-max over the seeds.
type TradeoffPoint struct {
	Label          string     // the design, as the chart's key lists it
	Family         string     // the family of designs: one colour each
	SmallThrottled [2]float64 // min, max; a share, 0 to 1
	Fairness       [2]float64 // min, max; 0 to 1
}

// Targets of the trade-off chart: at most this share of the small
// clients' attempts throttled, at least this fairness.
const (
	tradeoffMaxThrottled = 0.05
	tradeoffMinFairness  = 0.8
)

// tradeoffColors are the families' colours in the order they first come;
// the first point, the default, is drawn in black whatever its family.
var tradeoffColors = []string{"#000000", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// WriteTradeoffSVG draws points on one plot: the small clients' throttled
// share across, the fairness up, each point a box spanning its min-max on
// both measures and numbered for the key beside the plot. The first point
// is the default, drawn in black; the other families take a colour each in
// the order they come. The target corner (at most 5% throttled, fairness
// at least 0.8) is shaded. note is written under the plot. It fails on no
// points, on more families than it has colours, and on a measure that is
// not a min-max within 0 to 1.
func WriteTradeoffSVG(w io.Writer, points []TradeoffPoint, note string) error {
	if len(points) == 0 {
		return errors.New("storm: WriteTradeoffSVG: no points")
	}
	colorOf := map[string]string{}
	for i, p := range points {
		for _, m := range []struct {
			name string
			v    [2]float64
		}{{"SmallThrottled", p.SmallThrottled}, {"Fairness", p.Fairness}} {
			if !(m.v[0] >= 0 && m.v[0] <= m.v[1] && m.v[1] <= 1) {
				return fmt.Errorf("storm: WriteTradeoffSVG: point %d (%q): %s %v is not a min-max within 0 to 1", i, p.Label, m.name, m.v)
			}
		}
		if _, ok := colorOf[p.Family]; !ok && i > 0 {
			if len(colorOf) == len(tradeoffColors)-1 {
				return fmt.Errorf("storm: WriteTradeoffSVG: more than %d families", len(tradeoffColors)-1)
			}
			colorOf[p.Family] = tradeoffColors[len(colorOf)+1]
		}
	}

	const (
		left, top, plotW, plotH = 70, 48, 520, 380
		keyX                    = left + plotW + 40
		width                   = keyX + 400
		rowH                    = 17
	)
	xmax := 0.0
	for _, p := range points {
		xmax = max(xmax, p.SmallThrottled[1])
	}
	xmax = niceCeil(max(xmax, 2*tradeoffMaxThrottled) * 100 * 1.05) // in percent
	xs := func(share float64) float64 { return left + share*100/xmax*plotW }
	ys := func(f float64) float64 { return top + (1-f)*plotH }
	height := max(top+plotH+70, top+rowH*(len(points)+len(colorOf)+4))

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="#fff"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-weight="bold">Adaptive mode's growth: small clients' throttles against fairness between equal clients</text>`+"\n", left)

	// The target corner, the grid and the axes.
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="#d9f2d9"/>`+"\n",
		left, top, xs(tradeoffMaxThrottled)-left, ys(tradeoffMinFairness)-top)
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#2a6e2a">target</text>`+"\n", left+4, ys(tradeoffMinFairness)-5)
	for v := 0.0; v <= 1+1e-9; v += 0.2 {
		y := ys(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/><text x="%d" y="%.1f" text-anchor="end" fill="#333">%.1f</text>`+"\n",
			left, y, left+plotW, y, left-6, y+4, v)
	}
	step := niceStep(xmax)
	for v := 0.0; v <= xmax+1e-9; v += step {
		x := xs(v / 100)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/><text x="%.1f" y="%d" text-anchor="middle" fill="#333">%g%%</text>`+"\n",
			x, top, x, top+plotH, x, top+plotH+16, v)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, top, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333">100 small clients at 3x: attempts throttled (min-max over seeds)</text>`+"\n",
		left+plotW/2, top+plotH+36)
	fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(-90)" text-anchor="middle" fill="#333">10 equal clients at 3x: fairness, worst / best client</text>`+"\n",
		left-44, top+plotH/2)

	// The points, the default last so that it is on top, and the key.
	color := func(i int) string {
		if i == 0 {
			return tradeoffColors[0]
		}
		return colorOf[points[i].Family]
	}
	// A number goes to the right of its box, moved past the numbers
	// already placed that it would overlap: up in the plot's lower half,
	// down in its upper half.
	type spot struct{ x, y float64 }
	var placed []spot
	label := func(x, y float64) (float64, float64) {
		shift := 11.0
		if y > top+plotH/2 {
			shift = -shift
		}
		for moved := true; moved; {
			moved = false
			for _, q := range placed {
				if math.Abs(q.x-x) < 20 && math.Abs(q.y-y) < 11 {
					y, moved = q.y+shift, true
				}
			}
		}
		placed = append(placed, spot{x, y})
		return x, y
	}
	for k := range points {
		i := (k + 1) % len(points)
		p := points[i]
		x0, x1 := xs(p.SmallThrottled[0]), xs(p.SmallThrottled[1])
		y0, y1 := ys(p.Fairness[1]), ys(p.Fairness[0])
		cx, cy := (x0+x1)/2, (y0+y1)/2
		lx, ly := label(x1+3, cy-3)
		c := color(i)
		fmt.Fprintf(&b, `<g><title>%s: %.1f-%.1f%% throttled, fairness %.2f-%.2f</title>`, escape(p.Label),
			100*p.SmallThrottled[0], 100*p.SmallThrottled[1], p.Fairness[0], p.Fairness[1])
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.12" stroke="%s"/>`,
			x0, y0, max(x1-x0, 1), max(y1-y0, 1), c, c)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, cx, cy, c)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" font-size="11">%d</text></g>`+"\n", lx, ly, c, i+1)
	}
	y := top
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">designs</text>`+"\n", keyX, y)
	for i, p := range points {
		y += rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%d  %s</text>`+"\n", keyX, y, color(i), i+1, escape(p.Label))
	}
	y += rowH
	keyed := map[string]bool{}
	for i, p := range points {
		if i == 0 || keyed[p.Family] {
			continue
		}
		keyed[p.Family] = true
		y += rowH
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" fill="#333">%s</text>`+"\n",
			keyX, y-9, colorOf[p.Family], keyX+16, y, escape(p.Family))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">%s</text>`+"\n", 10, height-10, escape(note))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
