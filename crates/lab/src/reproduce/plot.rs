//! Line charts as PNG and SVG with a bundled font (DejaVu Sans), so plots render on a machine with no
//! fonts installed.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// (x, y) points in x order.
    pub points: Vec<(f64, f64)>,
}

/// One panel.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Title above the panel.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Lines.
    pub series: Vec<Series>,
    /// Logarithmic y axis.
    pub log_y: bool,
}

/// A chart that could not be drawn or written.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw {path}: {message}")]
pub struct PlotError {
    path: String,
    message: String,
}

const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Draws `charts` in a grid of `cols` columns into `<stem>.png` and `<stem>.svg`.
pub fn render(charts: &[Chart], cols: usize, stem: &Path) -> Result<(), PlotError> {
    REGISTER.call_once(|| {
        // The font is compiled in; failing to parse it is a build defect caught by the tests.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
    let cols = cols.clamp(1, charts.len().max(1));
    let rows = charts.len().div_ceil(cols).max(1);
    let size = (520 * cols as u32, 380 * rows as u32);
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    let err = |p: &Path, e: String| PlotError { path: p.display().to_string(), message: e };
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        draw(&root, charts, rows, cols).map_err(|e| err(&png, e))?;
        root.present().map_err(|e| err(&png, e.to_string()))?;
    }
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        draw(&root, charts, rows, cols).map_err(|e| err(&svg, e))?;
        root.present().map_err(|e| err(&svg, e.to_string()))?;
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    charts: &[Chart],
    rows: usize,
    cols: usize,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let areas = root.split_evenly((rows, cols));
    for (chart, area) in charts.iter().zip(areas.iter()) {
        panel(area, chart).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn bounds(chart: &Chart) -> ((f64, f64), (f64, f64)) {
    let pts =
        chart.series.iter().flat_map(|s| s.points.iter()).filter(|p| p.0.is_finite() && p.1.is_finite());
    let (mut x0, mut x1, mut y0, mut y1) =
        (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        return ((0.0, 1.0), (0.0, 1.0));
    }
    let pad = |a: f64, b: f64| {
        if (b - a).abs() < 1e-12 { (a - 0.5, b + 0.5) } else { (a - (b - a) * 0.05, b + (b - a) * 0.05) }
    };
    let (x0, x1) = pad(x0, x1);
    let (y0, y1) = if chart.log_y { (y0.max(1e-6) / 1.3, y1.max(1e-6) * 1.3) } else { pad(y0.min(0.0), y1) };
    ((x0, x1), (y0, y1))
}

/// A tick label with at most three significant digits and no float noise.
fn tick(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let ((x0, x1), (y0, y1)) = bounds(chart);
    let mut b = ChartBuilder::on(area);
    b.caption(&chart.title, ("sans-serif", 17)).margin(8).x_label_area_size(36).y_label_area_size(52);
    macro_rules! body {
        ($ctx:expr) => {{
            let mut ctx = $ctx;
            ctx.configure_mesh()
                .x_desc(chart.x_label.as_str())
                .y_desc(chart.y_label.as_str())
                .x_label_formatter(&|v| tick(*v))
                .y_label_formatter(&|v| tick(*v))
                .label_style(("sans-serif", 12))
                .draw()?;
            for (i, s) in chart.series.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                let pts: Vec<(f64, f64)> =
                    s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
                ctx.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
                if pts.len() <= 60 {
                    ctx.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
                }
            }
            ctx.configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .label_font(("sans-serif", 11))
                .position(SeriesLabelPosition::UpperRight)
                .draw()?;
        }};
    }
    if chart.log_y {
        body!(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?);
    } else {
        body!(b.build_cartesian_2d(x0..x1, y0..y1)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_png_and_svg_without_system_fonts() {
        let dir = tempfile::tempdir().unwrap();
        let c = Chart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series { name: "a".into(), points: vec![(0.5, 1.0), (0.75, 2.0)] }],
            log_y: false,
        };
        let log = Chart { log_y: true, ..c.clone() };
        render(&[c, log], 2, &dir.path().join("fig")).unwrap();
        let png = std::fs::read(dir.path().join("fig.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let svg = std::fs::read_to_string(dir.path().join("fig.svg")).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("<text") && svg.contains("\nt\n"),
            "title text is drawn"
        );
    }
}
