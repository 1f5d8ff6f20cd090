package storm

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// frontierModeColors are the colours of the modes on the frontier chart;
// the fixed-rate senders are grey.
var frontierModeColors = map[string]string{
	Standard.String():          "#1f77b4",
	Adaptive.String():          "#2ca02c",
	AdaptiveDemand.String():    "#9467bd",
	AdaptivePublished.String(): "#ff7f0e",
}

// WriteFrontierSVG draws, for each of scenarios that has a Frontier, a plot
// of its summaries (from CompareLimits over seeds seeds): the share of
// attempts throttled against the goodput, each mode and each fixed-rate
// sender a box spanning its min-max on both, and the fixed-rate senders
// joined in order of their rate: the frontier no steady sender gets below.
// It fails if no scenario has a Frontier, or if a summary the plot needs is
// missing, or its throttled share or goodput is not a min-max (within 0 to
// 1, and 0 to 2: a server's bucket starts full).
func WriteFrontierSVG(w io.Writer, scenarios []LimitScenario, summaries []LimitSummary, seeds int) error {
	var plotted []LimitScenario
	for _, ls := range scenarios {
		if len(ls.Frontier) > 0 {
			plotted = append(plotted, ls)
		}
	}
	if len(plotted) == 0 {
		return errors.New("storm: WriteFrontierSVG: no scenario with a frontier")
	}
	get := func(scenario, mode string) (LimitSummary, error) {
		i := slices.IndexFunc(summaries, func(s LimitSummary) bool { return s.Scenario == scenario && s.Mode == mode })
		if i < 0 {
			return LimitSummary{}, fmt.Errorf("storm: WriteFrontierSVG: no summary of %q in %s", mode, scenario)
		}
		s := summaries[i]
		// Goodput may pass 1 by a little: the server's bucket starts full.
		if t, g := s.Throttled, s.Goodput; !(t[0] >= 0 && t[0] <= t[1] && t[1] <= 1) || !(g[0] >= 0 && g[0] <= g[1] && g[1] <= 2) {
			return LimitSummary{}, fmt.Errorf("storm: WriteFrontierSVG: %q in %s: throttled %v, goodput %v: not a min-max within 0 to 1 and 0 to 2",
				mode, scenario, t, g)
		}
		return s, nil
	}

	const (
		plotW, plotH = 400, 300
		left, top    = 64, 56
		gap          = 250 // between a plot and the next: its key
	)
	width := len(plotted)*(left+plotW+gap) + 10
	height := top + plotH + 64
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="#fff"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-weight="bold">A tiny burst: throttled against served, each mode beside senders at a fixed rate (the frontier)</text>`+"\n", left)

	for k, ls := range plotted {
		x0 := k*(left+plotW+gap) + left
		type point struct {
			label, color string
			mult         float64 // a fixed-rate sender's multiple of its share; 0 for a mode
			s            LimitSummary
		}
		var fixed, modes []point
		for _, m := range append([]float64{1}, ls.Frontier...) {
			s, err := get(ls.Name, fixedRateName(m))
			if err != nil {
				return err
			}
			fixed = append(fixed, point{fmt.Sprintf("×%g", m), "#7f7f7f", m, s})
		}
		slices.SortFunc(fixed, func(a, b point) int { return cmp.Compare(a.mult, b.mult) })
		for _, m := range LimitModes {
			s, err := get(ls.Name, m.String())
			if err != nil {
				return err
			}
			c, ok := frontierModeColors[m.String()]
			if !ok {
				c = "#000000"
			}
			modes = append(modes, point{m.String(), c, 0, s})
		}
		ymax := 0.0
		for _, p := range append(slices.Clone(fixed), modes...) {
			ymax = max(ymax, p.s.Throttled[1])
		}
		ymax = min(niceCeil(max(ymax, 0.05)*100*1.05), 100) // in percent, at least 5%
		xmax := 1.0
		for _, p := range append(slices.Clone(fixed), modes...) {
			xmax = max(xmax, math.Ceil(p.s.Goodput[1]*5)/5)
		}
		xs := func(g float64) float64 { return float64(x0) + g/xmax*plotW }
		ys := func(th float64) float64 { return top + plotH - th*100/ymax*plotH }

		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#333">%s</text>`+"\n", x0, top-10, escape(ls.Title))
		for v := 0.0; v <= xmax+1e-9; v += 0.2 {
			x := xs(v)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/><text x="%.1f" y="%d" text-anchor="middle" fill="#333">%.0f%%</text>`+"\n",
				x, top, x, top+plotH, x, top+plotH+16, 100*v)
		}
		step := niceStep(ymax)
		for v := 0.0; v <= ymax+1e-9; v += step {
			y := ys(v / 100)
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/><text x="%d" y="%.1f" text-anchor="end" fill="#333">%g%%</text>`+"\n",
				x0, y, x0+plotW, y, x0-6, y+4, v)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, top, plotW, plotH)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333">goodput: served / capacity</text>`+"\n", x0+plotW/2, top+plotH+34)
		fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(-90)" text-anchor="middle" fill="#333">attempts throttled</text>`+"\n", x0-44, top+plotH/2)

		mid := func(v [2]float64) float64 { return (v[0] + v[1]) / 2 }
		var line []string
		for _, p := range fixed {
			line = append(line, fmt.Sprintf("%.1f,%.1f", xs(mid(p.s.Goodput)), ys(mid(p.s.Throttled))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#7f7f7f" stroke-width="1.5" stroke-dasharray="5,3" points="%s"><title>the fixed-rate frontier</title></polyline>`+"\n",
			strings.Join(line, " "))
		box := func(p point, labelLeft bool) {
			gx0, gx1 := xs(p.s.Goodput[0]), xs(p.s.Goodput[1])
			ty0, ty1 := ys(p.s.Throttled[1]), ys(p.s.Throttled[0])
			cx, cy := (gx0+gx1)/2, (ty0+ty1)/2
			fmt.Fprintf(&b, `<g><title>%s: %.1f-%.1f%% throttled, %.1f-%.1f%% served</title>`, escape(p.label),
				100*p.s.Throttled[0], 100*p.s.Throttled[1], 100*p.s.Goodput[0], 100*p.s.Goodput[1])
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.15" stroke="%s"/>`,
				gx0, ty0, max(gx1-gx0, 1), max(ty1-ty0, 1), p.color, p.color)
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, cx, cy, p.color)
			if labelLeft {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="%s" font-size="11">%s</text>`, gx0-4, cy+4, p.color, escape(p.label))
			}
			b.WriteString("</g>\n")
		}
		for _, p := range fixed {
			box(p, true)
		}
		for _, p := range modes {
			box(p, false)
		}
		// The key: the modes, then the frontier.
		ky := top + 6
		for _, p := range modes {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" fill="#333">%s</text>`+"\n",
				x0+plotW+16, ky, p.color, x0+plotW+32, ky+9, escape(p.label))
			ky += 18
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#7f7f7f" stroke-width="1.5" stroke-dasharray="5,3"/><text x="%d" y="%d" fill="#333">fixed rate, × its share</text>`+"\n",
			x0+plotW+16, ky+5, x0+plotW+26, ky+5, x0+plotW+32, ky+9)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">min-max over %d seeds; boxes span both; 20-50 ms each way; go run ./examples/storm -frontier-svg FILE</text>`+"\n",
		10, height-8, seeds)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
