package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Charts are drawn here as inline SVG, so report.html needs nothing from
// the network: horizontal bars for one number per engine, lines for a
// number over time or over percentiles.

const (
	chartWidth  = 820
	chartMargin = 10
	labelWidth  = 230 // the bar labels' column
	barHeight   = 22
	barGap      = 6
	plotHeight  = 260
	axisLeft    = 70
	axisBottom  = 40
	legendRow   = 18
)

// palette gives each engine one color throughout the report.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// bar is one bar: a label, its value and color; dashed draws it hatched
// (the RESP runs, beside the HTTP ones).
type bar struct {
	Label  string
	Value  float64
	Text   string // the value as shown at the bar's end
	Color  string
	Dashed bool
}

// barChart draws bars, longest scale first, with their values at the end.
func barChart(title string, bars []bar) string {
	var b strings.Builder
	h := len(bars)*(barHeight+barGap) + 40
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		chartWidth, h, chartWidth, h, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="18" class="title">%s</text>`, chartMargin, esc(title))
	top := 30
	maxV := 0.0
	for _, x := range bars {
		maxV = math.Max(maxV, x.Value)
	}
	width := float64(chartWidth - labelWidth - 2*chartMargin - 110)
	hatched := map[string]bool{}
	for _, x := range bars {
		if id := hatchID(x.Color); x.Dashed && !hatched[id] {
			hatched[id] = true
			fmt.Fprintf(&b, `<defs><pattern id="%s" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="%s" opacity="0.45"/><rect width="3" height="6" fill="%s"/></pattern></defs>`,
				id, x.Color, x.Color)
		}
	}
	for i, x := range bars {
		y := top + i*(barHeight+barGap)
		w := 0.0
		if maxV > 0 {
			w = x.Value / maxV * width
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="label" text-anchor="end">%s</text>`,
			labelWidth, y+barHeight-7, esc(x.Label))
		fill := x.Color
		if x.Dashed {
			fill = "url(#" + hatchID(x.Color) + ")"
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, labelWidth+8, y, math.Max(w, 1), barHeight, fill)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="value">%s</text>`, float64(labelWidth+12)+w, y+barHeight-7, esc(x.Text))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// hatchID names the hatch pattern of a color.
func hatchID(color string) string { return "hatch-" + strings.TrimPrefix(color, "#") }

// series is one line of a line chart.
type series struct {
	Name   string
	Color  string
	Dashed bool
	X, Y   []float64
}

// lineChart draws series over shared axes, with a legend below. xTicks,
// when given, label the x axis at those values (percentile names);
// otherwise the axis gets round numbers.
func lineChart(title, xLabel, yLabel string, ss []series, xTicks map[float64]string) string {
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for i := range s.X {
			minX, maxX = math.Min(minX, s.X[i]), math.Max(maxX, s.X[i])
			maxY = math.Max(maxY, s.Y[i])
		}
	}
	if math.IsInf(minX, 1) {
		minX, maxX = 0, 1
	}
	if maxX == minX {
		maxX = minX + 1
	}
	yTicks := niceTicks(maxY)
	maxY = yTicks[len(yTicks)-1]
	plotW := float64(chartWidth - axisLeft - 2*chartMargin)
	h := 30 + plotHeight + axisBottom + legendRow*((len(ss)+2)/3) + 10
	px := func(x float64) float64 { return axisLeft + (x-minX)/(maxX-minX)*plotW }
	py := func(y float64) float64 { return 30 + plotHeight - y/maxY*plotHeight }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		chartWidth, h, chartWidth, h, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="18" class="title">%s</text>`, chartMargin, esc(title))
	for _, t := range yTicks {
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" class="grid"/>`, axisLeft, axisLeft+plotW, py(t), py(t))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`, axisLeft-6, py(t)+4, short(t))
	}
	if xTicks != nil {
		for x, name := range xTicks {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="tick" text-anchor="middle">%s</text>`, px(x), 30+plotHeight+16, esc(name))
		}
	} else {
		for _, t := range niceTicks(maxX) {
			if t < minX {
				continue
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="tick" text-anchor="middle">%s</text>`, px(t), 30+plotHeight+16, short(t))
		}
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="axis" text-anchor="middle">%s</text>`, axisLeft+plotW/2, 30+plotHeight+32, esc(xLabel))
	fmt.Fprintf(&b, `<text x="14" y="%d" class="axis" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>`, 30+plotHeight/2, 30+plotHeight/2, esc(yLabel))
	for _, s := range ss {
		var pts []string
		for i := range s.X {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 3"`
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, strings.Join(pts, " "), s.Color, dash)
		if len(s.X) == 1 || xTicks != nil {
			for i := range s.X {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(s.X[i]), py(s.Y[i]), s.Color)
			}
		}
	}
	legendTop := 30 + plotHeight + axisBottom + 6
	for i, s := range ss {
		x := axisLeft + (i%3)*250
		y := legendTop + (i/3)*legendRow
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 3"`
		}
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`, x, x+24, y, y, s.Color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="label">%s</text>`, x+30, y+4, esc(s.Name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// niceTicks returns 0 and round steps (1, 2 or 5 times a power of ten)
// up to at least max.
func niceTicks(max float64) []float64 {
	if max <= 0 {
		return []float64{0, 1}
	}
	raw := max / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for t := 0.0; ; t += step {
		ticks = append(ticks, t)
		if t >= max {
			return ticks
		}
	}
}

// short writes an axis value compactly: 1.5k, 2M, 0.25.
func short(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case a >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case a == 0 || a >= 1:
		return trimZero(fmt.Sprintf("%.1f", v))
	}
	return trimZero(fmt.Sprintf("%.3f", v))
}

func trimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func esc(s string) string { return html.EscapeString(s) }
