package report

import (
	"fmt"
	"image/color"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var serverColor = map[string]color.Color{
	Ceiling:                 color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff},
	GoSDK:                   color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	Elicit:                  color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	TSSDK:                   color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	StoreServer(SQLite):     color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff},
	StoreServer(Postgres):   color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff},
	ElicitdServer(SQLite):   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	ElicitdServer(Postgres): color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
}

var serverGlyph = map[string]draw.GlyphDrawer{Ceiling: draw.BoxGlyph{}, GoSDK: draw.TriangleGlyph{}, Elicit: draw.CircleGlyph{},
	TSSDK: draw.PyramidGlyph{}, StoreServer(SQLite): draw.BoxGlyph{}, StoreServer(Postgres): draw.BoxGlyph{},
	ElicitdServer(SQLite): draw.CircleGlyph{}, ElicitdServer(Postgres): draw.CircleGlyph{}}

// ChartScenarios are the chart's panels for r: the core scenarios, then
// the export flow on each store.
func ChartScenarios(r *Results) []string {
	out := slices.Clone(r.Settings.Scenarios)
	if slices.Contains(r.Settings.Flows, "export") {
		for _, st := range r.Settings.Stores {
			out = append(out, FlowScenario("export", st))
		}
	}
	return out
}

// WriteChart writes a PNG with one panel per scenario: median requests/s
// (MRTR: legs/s; export: flows/s, beside the bare store's inserts/s)
// against connections (log scale) for the servers that ran it.
func WriteChart(path string, scenarios []string, s *Summary) error {
	// The core scenarios in the first row, the real flows in the second.
	var core, flows []*plot.Plot
	for _, sc := range scenarios {
		p, err := chartPanel(sc, s)
		if err != nil {
			return err
		}
		switch {
		case p == nil:
		case isCore(sc):
			core = append(core, p)
		default:
			flows = append(flows, p)
		}
	}
	var rows [][]*plot.Plot
	for _, r := range [][]*plot.Plot{core, flows} {
		if len(r) > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("report: nothing to chart")
	}
	return writePNG(path, drawRows(rows))
}

var panelTitle = map[string]string{"call": "tools/call", "mrtr": "MRTR flow (legs)", "discover": "server/discover",
	FlowScenario("export", SQLite): "export_report on SQLite", FlowScenario("export", Postgres): "export_report on PostgreSQL"}

// chartPanel plots scenario sc: one line per server that ran it, x at the
// measured connection counts. It returns nil when sc was not measured.
func chartPanel(sc string, s *Summary) (*plot.Plot, error) {
	p := newPanel(sc)
	var ticks plot.ConstantTicks
	for _, k := range s.Keys {
		if k.Scenario == sc {
			ticks = append(ticks, plot.Tick{Value: float64(k.Conns), Label: strconv.Itoa(k.Conns)})
		}
	}
	if len(ticks) == 0 {
		return nil, nil
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = ticks[0].Value/1.3, ticks[len(ticks)-1].Value*1.3
	maxY := 0.0
	for _, srv := range chartServers(sc) {
		pts := throughputPoints(s, sc, srv)
		if len(pts) == 0 {
			continue
		}
		l, sp, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		l.Color = serverColor[srv]
		l.Width = vg.Points(1.5)
		sp.Color = serverColor[srv]
		sp.Shape = serverGlyph[srv]
		sp.Radius = vg.Points(3)
		p.Add(l, sp)
		p.Legend.Add(serverTitle[srv], l, sp)
		for _, pt := range pts {
			maxY = max(maxY, pt.Y)
		}
	}
	p.Y.Max = maxY * 1.25
	return p, nil
}

// newPanel is an empty panel for scenario sc: titles, log-scale x,
// y from 0 with plain integer labels, legend top left, grid.
func newPanel(sc string) *plot.Plot {
	p := plot.New()
	p.Title.Text = panelTitle[sc]
	p.X.Label.Text = "connections"
	p.Y.Label.Text = "requests/s"
	if !isCore(sc) {
		p.Y.Label.Text = "flows/s (bare store: inserts/s)"
	}
	p.X.Scale = plot.LogScale{}
	p.Y.Min = 0
	p.Y.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', 0, 64)
			}
		}
		return ticks
	})
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// chartServers are the servers drawn in sc's panel: the core servers and
// the TypeScript peer, or a store's bare store and elicitd.
func chartServers(sc string) []string {
	if isCore(sc) {
		return append(slices.Clone(Servers), TSSDK)
	}
	st := strings.TrimPrefix(sc, "export-")
	return []string{StoreServer(st), ElicitdServer(st)}
}

// throughputPoints are srv's median rates in sc against connections:
// requests/s, or flows/s for a real flow.
func throughputPoints(s *Summary, sc, srv string) plotter.XYs {
	var pts plotter.XYs
	for _, k := range s.Keys {
		if c := s.Cells[k][srv]; k.Scenario == sc && c != nil {
			y := c.RPS
			if c.FlowsPerSec > 0 && !isCore(sc) {
				y = c.FlowsPerSec
			}
			pts = append(pts, plotter.XY{X: float64(k.Conns), Y: y})
		}
	}
	return pts
}

// drawRows lays the panels out one row of rows per line, on white.
func drawRows(rows [][]*plot.Plot) *vgimg.Canvas {
	const panelW, panelH = 4 * vg.Inch, 3.2 * vg.Inch
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	w, h := panelW*vg.Length(cols), panelH*vg.Length(len(rows))
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))
	dc := draw.New(img)
	// White background.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	for i, r := range rows {
		// Row i from the top, as wide as its panels.
		c := dc
		c.Rectangle = vg.Rectangle{Min: vg.Point{X: 0, Y: h - panelH*vg.Length(i+1)}, Max: vg.Point{X: panelW * vg.Length(len(r)), Y: h - panelH*vg.Length(i)}}
		tiles := draw.Tiles{Rows: 1, Cols: len(r), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2,
			PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
		canvases := plot.Align([][]*plot.Plot{r}, tiles, c)
		for j, p := range r {
			p.Draw(canvases[0][j])
		}
	}
	return img
}

func writePNG(path string, img *vgimg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
