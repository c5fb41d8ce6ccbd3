//! Small inline SVG charts: multi-series line charts and stacked bars over seconds, with
//! "nice" axis ticks and a legend. Pure string building, no dependencies.

use std::fmt::Write;

/// Chart size and plot margins.
const W: f64 = 640.0;
const H: f64 = 224.0;
const L: f64 = 56.0;
const R: f64 = 12.0;
const T: f64 = 40.0;
const B: f64 = 40.0;

/// One named line.
pub struct Line<'a> {
    /// Legend text.
    pub name: &'a str,
    /// Stroke colour.
    pub color: &'a str,
    /// (x, y) points, x ascending.
    pub points: Vec<(f64, f64)>,
    /// Dashed stroke.
    pub dashed: bool,
}

/// Escape text for HTML/SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round step so that `max / step` is about `n`.
pub fn nice_step(max: f64, n: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / n;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

fn fmt_tick(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if v >= 1000.0 {
        format!("{:.1}k", v / 1000.0)
    } else if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn frame(out: &mut String, title: &str, y_label: &str, x_max: f64, y_max: f64) -> (f64, f64) {
    let pw = W - L - R;
    let ph = H - T - B;
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" class="chart" role="img"><title>{t}</title><rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/><text x="{L}" y="16" class="ct">{t}</text>"##,
        t = esc(title)
    );
    let ystep = nice_step(y_max, 4.0);
    let mut v = 0.0;
    while v <= y_max * 1.0001 {
        let y = T + ph - v / y_max * ph;
        let _ = write!(
            out,
            r##"<line x1="{L}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#e3e3e3"/><text x="{tx}" y="{ty:.1}" class="tk" text-anchor="end">{lab}</text>"##,
            x2 = L + pw,
            tx = L - 6.0,
            ty = y + 4.0,
            lab = fmt_tick(v)
        );
        v += ystep;
    }
    let xstep = nice_step(x_max, 8.0).max(1.0);
    let mut x = 0.0;
    while x <= x_max * 1.0001 {
        let px = L + x / x_max * pw;
        let _ = write!(
            out,
            r##"<line x1="{px:.1}" x2="{px:.1}" y1="{y1}" y2="{y2}" stroke="#999"/><text x="{px:.1}" y="{ty}" class="tk" text-anchor="middle">{lab}</text>"##,
            y1 = T + ph,
            y2 = T + ph + 4.0,
            ty = T + ph + 16.0,
            lab = fmt_tick(x)
        );
        x += xstep;
    }
    let _ = write!(
        out,
        r##"<line x1="{L}" x2="{L}" y1="{T}" y2="{yb}" stroke="#999"/><line x1="{L}" x2="{xr}" y1="{yb}" y2="{yb}" stroke="#999"/><text x="{xm}" y="{yl}" class="tk" text-anchor="middle">seconds</text><text transform="translate(12 {ym}) rotate(-90)" class="tk" text-anchor="middle">{yl2}</text>"##,
        yb = T + ph,
        xr = L + pw,
        xm = L + pw / 2.0,
        yl = H - 6.0,
        ym = T + ph / 2.0,
        yl2 = esc(y_label)
    );
    (pw, ph)
}

fn legend(out: &mut String, items: &[(&str, &str)]) {
    let mut x = W - R;
    // Right-aligned, drawn from the right so long names do not run off the chart.
    for (name, color) in items.iter().rev() {
        let w = 7.0 * name.chars().count() as f64 + 22.0;
        x -= w;
        let _ = write!(
            out,
            r##"<rect x="{x:.1}" y="22" width="12" height="10" fill="{color}"/><text x="{tx:.1}" y="31" class="lg">{n}</text>"##,
            tx = x + 16.0,
            n = esc(name)
        );
    }
}

/// A line chart; `y_max` fixes the scale (side-by-side charts share it).
pub fn lines(title: &str, y_label: &str, series: &[Line<'_>], x_max: f64, y_max: f64) -> String {
    let x_max = x_max.max(1.0);
    let y_max = if y_max > 0.0 && y_max.is_finite() {
        y_max
    } else {
        1.0
    };
    let mut out = String::new();
    let (pw, ph) = frame(&mut out, title, y_label, x_max, y_max);
    for s in series {
        if s.points.is_empty() {
            continue;
        }
        let pts: Vec<String> = s
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|(x, y)| {
                format!(
                    "{:.1},{:.1}",
                    L + x.min(x_max) / x_max * pw,
                    T + ph - y.clamp(0.0, y_max) / y_max * ph
                )
            })
            .collect();
        let _ = write!(
            out,
            r##"<polyline fill="none" stroke="{c}" stroke-width="2"{d} points="{p}"/>"##,
            c = s.color,
            d = if s.dashed {
                r#" stroke-dasharray="5 3""#
            } else {
                ""
            },
            p = pts.join(" ")
        );
    }
    let items: Vec<(&str, &str)> = series.iter().map(|s| (s.name, s.color)).collect();
    legend(&mut out, &items);
    out.push_str("</svg>");
    out
}

/// Stacked bars: one bar per x, one segment per category.
pub fn stacked(
    title: &str,
    y_label: &str,
    categories: &[(&str, &str)],
    bars: &[(f64, Vec<f64>)],
    x_max: f64,
    y_max: f64,
) -> String {
    let x_max = x_max.max(1.0);
    let y_max = if y_max > 0.0 && y_max.is_finite() {
        y_max
    } else {
        1.0
    };
    let mut out = String::new();
    let (pw, ph) = frame(&mut out, title, y_label, x_max, y_max);
    let bw = (pw / x_max * 0.85).max(1.0);
    for (x, vals) in bars {
        let mut acc = 0.0;
        for (i, v) in vals.iter().enumerate() {
            if *v <= 0.0 {
                continue;
            }
            let y0 = T + ph - (acc / y_max).min(1.0) * ph;
            acc += v;
            let y1 = T + ph - (acc / y_max).min(1.0) * ph;
            let _ = write!(
                out,
                r##"<rect x="{px:.1}" y="{y1:.1}" width="{bw:.1}" height="{h:.1}" fill="{c}"/>"##,
                px = L + x / x_max * pw,
                h = (y0 - y1).max(0.0),
                c = categories.get(i).map_or("#888", |c| c.1)
            );
        }
    }
    legend(&mut out, categories);
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_are_1_2_5_multiples() {
        assert_eq!(nice_step(100.0, 4.0), 50.0);
        assert_eq!(nice_step(7.0, 4.0), 2.0);
        assert_eq!(nice_step(0.3, 4.0), 0.1);
        assert_eq!(nice_step(0.0, 4.0), 1.0);
    }
}
