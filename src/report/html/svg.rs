//! Line charts as inline SVG: the scales that place values on an axis
//! (linear, log, and HdrHistogram's percentile axis), their ticks, and the
//! drawing. No script: the chart is complete as the page arrives.
//!
//! Colours come from the page's style sheet (classes `s1`..`s6`), so the
//! charts follow its light and dark schemes and print.

use std::fmt::Write as _;

use super::escape::escape;

/// The drawing area, in SVG units (the chart scales to the page's width).
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 42.0;

/// Where values fall on an axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear {
        min: f64,
        max: f64,
    },
    /// Logarithmic from `min` to `max` (both above 0).
    Log {
        min: f64,
        max: f64,
    },
    /// Percentiles (0 to 100) at log10(1 / (1 - p)): 90% is one decade
    /// from 0%, 99% two, 99.9% three, up to `decades`, so the tail gets
    /// as much room as the body (HdrHistogram's percentile plots).
    Percentile {
        decades: u32,
    },
}

impl Scale {
    /// From 0 to `max` rounded up to a tick.
    pub fn from_zero(max: f64) -> Scale {
        let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
        let step = nice_step(max / 5.0);
        Scale::Linear { min: 0.0, max: (max / step).ceil() * step }
    }

    /// Whole decades around `min` to `max` (both above 0).
    pub fn log(min: f64, max: f64) -> Scale {
        let min = 10f64.powf(min.log10().floor());
        let max = 10f64.powf(max.log10().ceil()).max(min * 10.0);
        Scale::Log { min, max }
    }

    /// For values from `min` to `max` (above 0): log when they span more
    /// than two decades (a latency tail would flatten the rest), else
    /// linear from 0.
    pub fn fitting(min: f64, max: f64) -> Scale {
        if min > 0.0 && max / min > 100.0 {
            Scale::log(min, max)
        } else {
            Scale::from_zero(max)
        }
    }

    /// Where `value` falls, from 0 (the start of the axis) to 1 (its end);
    /// values outside are clamped to the ends.
    pub fn fraction(self, value: f64) -> f64 {
        let f = match self {
            Scale::Linear { min, max } => (value - min) / (max - min),
            Scale::Log { min, max } => (value.max(min).log10() - min.log10()) / (max / min).log10(),
            Scale::Percentile { decades } => percentile_decades(value) / f64::from(decades.max(1)),
        };
        if f.is_nan() {
            0.0
        } else {
            f.clamp(0.0, 1.0)
        }
    }

    /// The values the axis marks.
    pub fn ticks(self) -> Vec<f64> {
        match self {
            Scale::Linear { min, max } => {
                let step = nice_step((max - min) / 5.0);
                let first = (min / step).ceil() as i64;
                let last = (max / step + 1e-9).floor() as i64;
                (first..=last).map(|i| i as f64 * step).collect()
            }
            Scale::Log { min, max } => {
                let decades = (max / min).log10().round() as i32;
                // Few decades: 1, 2, 5 in each, so the axis has labels.
                let multiples: &[f64] = if decades <= 2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
                let mut ticks = Vec::new();
                for d in 0..=decades {
                    for m in multiples {
                        let value = min * 10f64.powi(d) * m;
                        if value <= max * (1.0 + 1e-9) {
                            ticks.push(value);
                        }
                    }
                }
                ticks
            }
            Scale::Percentile { decades } => (0..=decades).map(decade_percentile).collect(),
        }
    }
}

/// log10(1 / (1 - p/100)): 0 for 0%, 1 for 90%, 3 for 99.9%; the axis
/// ends are clamped to finite values (100% is infinitely far).
pub fn percentile_decades(percentile: f64) -> f64 {
    let rest = (100.0 - percentile) / 100.0;
    if rest <= 0.0 {
        f64::MAX
    } else {
        -rest.min(1.0).log10()
    }
}

/// The percentile `decades` decades along the axis: 0, 90, 99, 99.9...
pub fn decade_percentile(decades: u32) -> f64 {
    100.0 - 100.0 / 10f64.powi(decades as i32)
}

/// `0%`, `90%`, `99%`, `99.9%`, `99.99%`: a percentile axis label,
/// with just the decimals it needs.
pub fn percentile_label(percentile: f64) -> String {
    let decimals = (percentile_decades(percentile).round() as usize).saturating_sub(2);
    format!("{percentile:.decimals$}%")
}

/// 1, 2 or 5 times a power of ten, the smallest at least `rough`.
fn nice_step(rough: f64) -> f64 {
    if !(rough.is_finite() && rough > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().find(|m| m * power >= rough * (1.0 - 1e-9));
    step.unwrap_or(10.0) * power
}

/// A number as an axis label: no more decimals than the ticks need.
pub fn number_label(value: f64) -> String {
    if value == 0.0 {
        return "0".to_string();
    }
    let magnitude = value.abs();
    if magnitude >= 1e6 {
        return format!("{}M", number_label(value / 1e6));
    }
    if magnitude >= 1e4 {
        return format!("{}k", number_label(value / 1e3));
    }
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// An axis: its scale, how its ticks read, and its title.
pub struct Axis {
    pub scale: Scale,
    pub label: fn(f64) -> String,
    pub title: String,
}

/// One line of a chart.
pub struct Series {
    pub name: String,
    /// Its colour, `s1` to `s6` in the style sheet.
    pub class: &'static str,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

/// A line chart.
pub struct Chart {
    /// `data-chart`: what the chart shows (`spectrum`, `throughput`...).
    pub kind: &'static str,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

impl Chart {
    /// The chart as a `<figure>`: the SVG, then a legend.
    pub fn render(&self) -> String {
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<figure class="chart"><svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{}" data-chart="{}">"#,
            escape(&self.title),
            self.kind
        );
        svg.push_str(&self.axes());
        for series in &self.series {
            svg.push_str(&self.line(series));
        }
        svg.push_str("</svg><figcaption>");
        let _ = write!(svg, "<strong>{}</strong>", escape(&self.title));
        for series in &self.series {
            let dashed = if series.dashed { " dashed" } else { "" };
            let _ = write!(
                svg,
                r#" <span class="key"><span class="swatch {}{dashed}"></span>{}</span>"#,
                series.class,
                escape(&series.name)
            );
        }
        svg.push_str("</figcaption></figure>\n");
        svg
    }

    /// Plot coordinates of a data point.
    fn at(&self, (x, y): (f64, f64)) -> (f64, f64) {
        let plot_width = WIDTH - LEFT - RIGHT;
        let plot_height = HEIGHT - TOP - BOTTOM;
        (
            LEFT + self.x.scale.fraction(x) * plot_width,
            TOP + (1.0 - self.y.scale.fraction(y)) * plot_height,
        )
    }

    /// Grid lines, tick labels and axis titles.
    fn axes(&self) -> String {
        let mut out = String::from(r#"<g class="axes">"#);
        let bottom = HEIGHT - BOTTOM;
        for value in self.x.scale.ticks() {
            let (x, _) = self.at((value, 0.0));
            // The label at the right end would stick out of the picture.
            let anchor = if x > WIDTH - RIGHT - 1.0 { "end" } else { "middle" };
            let _ = write!(
                out,
                r#"<line class="grid" x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}"/><text x="{x:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
                bottom + 16.0,
                escape(&(self.x.label)(value))
            );
        }
        for value in self.y.scale.ticks() {
            let (_, y) = self.at((0.0, value));
            let _ = write!(
                out,
                r#"<line class="grid" x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                WIDTH - RIGHT,
                LEFT - 6.0,
                y + 4.0,
                escape(&(self.y.label)(value))
            );
        }
        let _ = write!(
            out,
            r#"<rect class="frame" x="{LEFT}" y="{TOP}" width="{:.1}" height="{:.1}"/><text class="title" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text class="title" transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text></g>"#,
            WIDTH - LEFT - RIGHT,
            HEIGHT - TOP - BOTTOM,
            LEFT + (WIDTH - LEFT - RIGHT) / 2.0,
            HEIGHT - 6.0,
            escape(&self.x.title),
            TOP + (HEIGHT - TOP - BOTTOM) / 2.0,
            escape(&self.y.title),
        );
        out
    }

    /// One series as a path: a run of points is a line, a point that is
    /// not a number (a period with nothing to show) breaks it, and a point
    /// alone between breaks gets a dot, which a line cannot show.
    fn line(&self, series: &Series) -> String {
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for &(x, y) in &series.points {
            if x.is_finite() && y.is_finite() {
                runs.last_mut().expect("never empty").push(self.at((x, y)));
            } else if !runs.last().expect("never empty").is_empty() {
                runs.push(Vec::new());
            }
        }
        let mut d = Vec::new();
        let mut dots = String::new();
        for run in runs.iter().filter(|run| !run.is_empty()) {
            for (i, (x, y)) in run.iter().enumerate() {
                d.push(format!("{}{x:.1},{y:.1}", if i == 0 { 'M' } else { 'L' }));
            }
            if let [(x, y)] = run.as_slice() {
                let _ = write!(
                    dots,
                    r#"<circle class="dot {}" cx="{x:.1}" cy="{y:.1}" r="3"/>"#,
                    series.class
                );
            }
        }
        let dashed = if series.dashed { " dashed" } else { "" };
        let name = escape(&series.name);
        format!(
            r#"<path class="line {}{dashed}" data-series="{name}" d="{}"><title>{name}</title></path>{dots}"#,
            series.class,
            d.join(" ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_percentile_axis_gives_each_nine_a_decade() {
        let scale = Scale::Percentile { decades: 4 };
        for (p, at) in [(0.0, 0.0), (90.0, 0.25), (99.0, 0.5), (99.9, 0.75), (99.99, 1.0)] {
            assert!(close(scale.fraction(p), at), "{p}: {}", scale.fraction(p));
        }
        // 100% and beyond the last decade stay on the chart.
        assert_eq!(scale.fraction(100.0), 1.0);
        assert_eq!(scale.fraction(99.9999), 1.0);
        let labels: Vec<String> = scale.ticks().into_iter().map(percentile_label).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
        assert!(close(percentile_decades(50.0), 2f64.log10()));
    }

    #[test]
    fn linear_scales_start_at_zero_and_end_on_a_tick() {
        let scale = Scale::from_zero(87.0);
        assert_eq!(scale, Scale::Linear { min: 0.0, max: 100.0 });
        assert_eq!(scale.ticks(), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(scale.fraction(50.0), 0.5);
        assert_eq!(scale.fraction(-3.0), 0.0);
        assert_eq!(scale.fraction(1e9), 1.0);
        let Scale::Linear { max, .. } = Scale::from_zero(0.0123) else { panic!() };
        assert!(close(max, 0.015), "{max}");
        // Nothing measured: still an axis.
        assert_eq!(Scale::from_zero(0.0), Scale::Linear { min: 0.0, max: 1.0 });
        assert_eq!(Scale::from_zero(f64::NAN), Scale::Linear { min: 0.0, max: 1.0 });
    }

    #[test]
    fn log_scales_cover_whole_decades() {
        let scale = Scale::log(0.08, 1500.0);
        assert_eq!(scale, Scale::Log { min: 0.01, max: 10_000.0 });
        assert!(close(scale.fraction(1.0), 2.0 / 6.0));
        assert_eq!(scale.ticks().len(), 7);
        // Two decades or fewer get 1-2-5 ticks.
        let narrow = Scale::log(1.0, 50.0);
        let ticks = narrow.ticks();
        assert_eq!(ticks.len(), 7, "{ticks:?}");
        assert!(close(ticks[1], 2.0) && close(ticks[6], 100.0), "{ticks:?}");
        // A single value still spans a decade.
        assert_eq!(Scale::log(5.0, 5.0), Scale::Log { min: 1.0, max: 10.0 });
    }

    #[test]
    fn a_tail_makes_the_scale_logarithmic() {
        assert!(matches!(Scale::fitting(0.1, 1000.0), Scale::Log { .. }));
        assert!(matches!(Scale::fitting(1.0, 50.0), Scale::Linear { .. }));
        assert!(matches!(Scale::fitting(0.0, 50.0), Scale::Linear { .. }));
    }

    #[test]
    fn nice_steps_and_labels() {
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(2.0), 2.0);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(number_label(0.25), "0.25");
        assert_eq!(number_label(20.0), "20");
        assert_eq!(number_label(25_000.0), "25k");
        assert_eq!(number_label(3_000_000.0), "3M");
    }

    #[test]
    fn charts_draw_every_point_and_escape_their_text() {
        let chart = Chart {
            kind: "test",
            title: "<b>".into(),
            x: Axis { scale: Scale::from_zero(10.0), label: number_label, title: "x".into() },
            y: Axis { scale: Scale::from_zero(10.0), label: number_label, title: "y".into() },
            series: vec![
                Series {
                    name: "a&b".into(),
                    class: "s1",
                    points: vec![(0.0, 0.0), (5.0, 5.0), (10.0, 10.0), (f64::NAN, 1.0)],
                    dashed: false,
                },
                Series {
                    name: "gaps".into(),
                    class: "s2",
                    points: vec![(0.0, 0.0), (1.0, f64::NAN), (5.0, 5.0), (10.0, 10.0)],
                    dashed: true,
                },
            ],
        };
        let svg = chart.render();
        assert!(svg.contains(r#"data-chart="test""#), "{svg}");
        assert!(svg.contains(r#"d="M64.0,218.0 L384.0,115.0 L704.0,12.0""#), "{svg}");
        // A gap breaks the line; a point alone gets a dot.
        assert!(svg.contains(r#"d="M64.0,218.0 M384.0,115.0 L704.0,12.0""#), "{svg}");
        assert!(svg.contains(r#"<circle class="dot s2" cx="64.0" cy="218.0""#), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 1, "{svg}");
        assert!(svg.contains("a&amp;b") && svg.contains("&lt;b&gt;") && !svg.contains("<b>"));
    }
}
