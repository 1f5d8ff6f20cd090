package storm

import (
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
	boxes := make([]box, len(points))
	xmax := 0.0
	for i, p := range points {
		boxes[i] = box{label: p.Label, family: p.Family, x: p.SmallThrottled, y: p.Fairness}
		xmax = max(xmax, p.SmallThrottled[1])
	}
	return boxChart{
		name:    "WriteTradeoffSVG",
		title:   "Adaptive mode's growth: small clients' throttles against fairness between equal clients",
		xLabel:  "100 small clients at 3x: attempts throttled (min-max over seeds)",
		yLabel:  "10 equal clients at 3x: fairness, worst / best client",
		xNames:  "SmallThrottled",
		yNames:  "Fairness",
		xmax:    niceCeil(max(xmax, 2*tradeoffMaxThrottled)*100*1.05) / 100,
		percent: true,
		target:  [4]float64{0, tradeoffMaxThrottled, tradeoffMinFairness, 1},
		tip: func(b box) string {
			return fmt.Sprintf("%.1f-%.1f%% throttled, fairness %.2f-%.2f", 100*b.x[0], 100*b.x[1], b.y[0], b.y[1])
		},
	}.write(w, boxes, note)
}

// A BoundPoint is one design of adaptive mode's growth trade-off beside
// the fairness the Cramér-Rao bound allows it (FairnessAllowed), for the
// ten equal clients at 3x of the root package's TestGrowthTradeoff.
type BoundPoint struct {
	Label    string     // the design, as the chart's key lists it
	Family   string     // the family of designs: one colour each
	Allowed  float64    // the fairness the bound allows; 0 to 1
	Fairness [2]float64 // the fairness measured: min, max; 0 to 1
}

// WriteBoundSVG draws points on one plot: the fairness the bound allows
// across, the fairness measured up, each point a box spanning its min-max
// over the seeds, numbered and coloured as WriteTradeoffSVG does, with the
// diagonal on which a design gets what the bound allows, and the target
// corner (fairness at least 0.8, which needs the bound to allow 0.8)
// shaded. It fails as WriteTradeoffSVG does.
func WriteBoundSVG(w io.Writer, points []BoundPoint, note string) error {
	boxes := make([]box, len(points))
	for i, p := range points {
		boxes[i] = box{label: p.Label, family: p.Family, x: [2]float64{p.Allowed, p.Allowed}, y: p.Fairness}
	}
	return boxChart{
		name:     "WriteBoundSVG",
		title:    "Fairness between ten equal clients at 3x: what the throttles allow, and what each design gets",
		xLabel:   "the fairness the bound allows: exp(-3.08 e sqrt((1-p)/K))",
		yLabel:   "fairness measured (min-max over seeds)",
		xNames:   "Allowed",
		yNames:   "Fairness",
		xmax:     1,
		target:   [4]float64{tradeoffMinFairness, 1, tradeoffMinFairness, 1},
		diagonal: true,
		tip: func(b box) string {
			return fmt.Sprintf("allowed %.2f, fairness %.2f-%.2f", b.x[0], b.y[0], b.y[1])
		},
	}.write(w, boxes, note)
}

// A box is one design on a boxChart: a box spanning the min-max of its two
// measures.
type box struct {
	label, family string
	x, y          [2]float64 // min, max
}

// A boxChart is a plot of designs, each a box on two measures, both
// within 0 to 1: y up from 0 to 1, x across from 0 to xmax.
type boxChart struct {
	name                  string // the writer's, for its errors
	title, xLabel, yLabel string
	xNames, yNames        string  // the measures' names, for errors
	xmax                  float64 // the x axis' end, in the measure's units
	percent               bool    // x is a share: ticks in percent
	target                [4]float64
	diagonal              bool               // draw y = x
	tip                   func(b box) string // a box's tooltip
}

// write draws boxes, the first the default in black; see WriteTradeoffSVG.
func (c boxChart) write(w io.Writer, boxes []box, note string) error {
	if len(boxes) == 0 {
		return fmt.Errorf("storm: %s: no points", c.name)
	}
	colorOf := map[string]string{}
	for i, p := range boxes {
		for _, m := range []struct {
			name string
			v    [2]float64
		}{{c.xNames, p.x}, {c.yNames, p.y}} {
			if !(m.v[0] >= 0 && m.v[0] <= m.v[1] && m.v[1] <= 1) {
				return fmt.Errorf("storm: %s: point %d (%q): %s %v is not a min-max within 0 to 1", c.name, i, p.label, m.name, m.v)
			}
		}
		if _, ok := colorOf[p.family]; !ok && i > 0 {
			if len(colorOf) == len(tradeoffColors)-1 {
				return fmt.Errorf("storm: %s: more than %d families", c.name, len(tradeoffColors)-1)
			}
			colorOf[p.family] = tradeoffColors[len(colorOf)+1]
		}
	}

	const (
		left, top, plotW, plotH = 70, 48, 520, 380
		keyX                    = left + plotW + 40
		width                   = keyX + 400
		rowH                    = 17
	)
	xs := func(v float64) float64 { return left + v/c.xmax*plotW }
	ys := func(f float64) float64 { return top + (1-f)*plotH }
	height := max(top+plotH+70, top+rowH*(len(boxes)+len(colorOf)+4))

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="#fff"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-weight="bold">%s</text>`+"\n", left, escape(c.title))

	// The target corner, the grid and the axes.
	t := c.target
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d9f2d9"/>`+"\n",
		xs(t[0]), ys(t[3]), xs(t[1])-xs(t[0]), ys(t[2])-ys(t[3]))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#2a6e2a">target</text>`+"\n", xs(t[0])+4, ys(t[2])-5)
	for v := 0.0; v <= 1+1e-9; v += 0.2 {
		y := ys(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/><text x="%d" y="%.1f" text-anchor="end" fill="#333">%.1f</text>`+"\n",
			left, y, left+plotW, y, left-6, y+4, v)
	}
	scale, unit := 1.0, ""
	if c.percent {
		scale, unit = 100, "%"
	}
	step := niceStep(c.xmax * scale)
	for v := 0.0; v <= c.xmax*scale+1e-9; v += step {
		x := xs(v / scale)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/><text x="%.1f" y="%d" text-anchor="middle" fill="#333">%g%s</text>`+"\n",
			x, top, x, top+plotH, x, top+plotH+16, math.Round(v*1e6)/1e6, unit)
	}
	if c.diagonal {
		end := min(c.xmax, 1)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="4 3"/>`+"\n",
			xs(0), ys(0), xs(end), ys(end))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, top, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", left+plotW/2, top+plotH+36, escape(c.xLabel))
	fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(-90)" text-anchor="middle" fill="#333">%s</text>`+"\n",
		left-44, top+plotH/2, escape(c.yLabel))

	// The points, the default last so that it is on top, and the key.
	color := func(i int) string {
		if i == 0 {
			return tradeoffColors[0]
		}
		return colorOf[boxes[i].family]
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
	for k := range boxes {
		i := (k + 1) % len(boxes)
		p := boxes[i]
		x0, x1 := xs(p.x[0]), xs(p.x[1])
		y0, y1 := ys(p.y[1]), ys(p.y[0])
		cx, cy := (x0+x1)/2, (y0+y1)/2
		lx, ly := label(x1+3, cy-3)
		col := color(i)
		fmt.Fprintf(&b, `<g><title>%s: %s</title>`, escape(p.label), escape(c.tip(p)))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.12" stroke="%s"/>`,
			x0, y0, max(x1-x0, 1), max(y1-y0, 1), col, col)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, cx, cy, col)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" font-size="11">%d</text></g>`+"\n", lx, ly, col, i+1)
	}
	y := top
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">designs</text>`+"\n", keyX, y)
	for i, p := range boxes {
		y += rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%d  %s</text>`+"\n", keyX, y, color(i), i+1, escape(p.label))
	}
	y += rowH
	keyed := map[string]bool{}
	for i, p := range boxes {
		if i == 0 || keyed[p.family] {
			continue
		}
		keyed[p.family] = true
		y += rowH
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" fill="#333">%s</text>`+"\n",
			keyX, y-9, colorOf[p.family], keyX+16, y, escape(p.family))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">%s</text>`+"\n", 10, height-10, escape(note))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
