//! `peers-plot IN.json OUT.svg`: draws what `scripts/compare-peers.sh --json` measured as two
//! bar charts in one SVG: layout a's forwarder cost in ns/packet (lower is better) and
//! layout b's delivered Mpps with the loss beside each bar.

use anyhow::{Context, Result, bail};
use plotters::prelude::*;
use serde::Deserialize;

/// One row of the script's JSON (medians of its runs).
#[derive(Debug, Clone, Deserialize)]
struct Row {
    contender: String,
    layout: String,
    mpps: f64,
    loss_pct: Option<f64>,
    ns_per_packet: Option<f64>,
}

/// One bar: its label, its length and the text printed after it.
struct Bar {
    label: String,
    value: f64,
    text: String,
}

const WIDTH: u32 = 900;
const BAR_HEIGHT: i32 = 26;
const LABEL_WIDTH: i32 = 230;
const TITLE_HEIGHT: i32 = 40;

/// Layout a's forwarder costs and layout b's rates, in the script's row order.
fn panels(rows: &[Row]) -> (Vec<Bar>, Vec<Bar>) {
    let cost = rows
        .iter()
        .filter(|r| r.layout == "a")
        .filter_map(|r| {
            let ns = r.ns_per_packet?;
            Some(Bar { label: r.contender.clone(), value: ns, text: format!("{ns:.0} ns ({:.3} Mpps)", r.mpps) })
        })
        .collect();
    let rate = rows
        .iter()
        .filter(|r| r.layout == "b")
        .map(|r| Bar {
            label: r.contender.clone(),
            value: r.mpps,
            text: match r.loss_pct {
                Some(l) => format!("{:.3} Mpps, {l:.2} % lost", r.mpps),
                None => format!("{:.3} Mpps", r.mpps),
            },
        })
        .collect();
    (cost, rate)
}

/// Draws `bars` under `title` in `area`, scaled to the longest.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    bars: &[Bar],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let font = ("sans-serif", 16).into_font();
    area.draw(&Text::new(title.to_string(), (10, 12), font.clone().style(FontStyle::Bold)))?;
    let longest = bars.iter().map(|b| b.value).fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
    let room = f64::from(WIDTH as i32 - LABEL_WIDTH - 220);
    for (k, b) in bars.iter().enumerate() {
        let y = TITLE_HEIGHT + k as i32 * (BAR_HEIGHT + 8);
        let len = (b.value.max(0.0) / longest * room).round() as i32;
        let color =
            if b.label.starts_with("vecflow") { RGBColor(0x2a, 0x6f, 0xdb) } else { RGBColor(0x9a, 0x9a, 0x9a) };
        area.draw(&Text::new(b.label.clone(), (10, y + 6), font.clone()))?;
        area.draw(&Rectangle::new([(LABEL_WIDTH, y), (LABEL_WIDTH + len.max(1), y + BAR_HEIGHT)], color.filled()))?;
        area.draw(&Text::new(b.text.clone(), (LABEL_WIDTH + len + 8, y + 6), font.clone()))?;
    }
    Ok(())
}

/// The SVG of `rows`.
fn render(rows: &[Row]) -> Result<String> {
    let (cost, rate) = panels(rows);
    if cost.is_empty() && rate.is_empty() {
        bail!("no rows of layout a (with ns/packet) or b to draw");
    }
    let height_of = |n: usize| if n == 0 { 0 } else { TITLE_HEIGHT + n as i32 * (BAR_HEIGHT + 8) + 20 };
    let (h1, h2) = (height_of(cost.len()), height_of(rate.len()));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, (h1 + h2) as u32)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = root.split_vertically(h1);
        if !cost.is_empty() {
            draw_panel(&top, "Layout a, one CPU: forwarder cost in ns/packet (lower is better)", &cost)?;
        }
        if !rate.is_empty() {
            draw_panel(&bottom, "Layout b, two CPUs: delivered Mpps (higher is better)", &rate)?;
        }
        root.present()?;
    }
    Ok(svg)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = &args[..] else { bail!("usage: peers-plot IN.json OUT.svg") };
    let text = std::fs::read_to_string(input).with_context(|| format!("reading {input}"))?;
    let rows: Vec<Row> = serde_json::from_str(&text).with_context(|| format!("{input}: not compare-peers JSON"))?;
    std::fs::write(output, render(&rows)?).with_context(|| format!("writing {output}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(contender: &str, layout: &str, mpps: f64, loss: Option<f64>, ns: Option<f64>) -> Row {
        Row { contender: contender.into(), layout: layout.into(), mpps, loss_pct: loss, ns_per_packet: ns }
    }

    #[test]
    fn both_layouts_are_drawn_with_their_numbers() {
        let rows = [
            row("generator-alone", "a", 0.9, Some(0.0), None),
            row("kernel", "a", 0.6, Some(0.0), Some(620.0)),
            row("vecflow-afxdp", "a", 0.7, Some(0.0), Some(300.0)),
            row("vecflow-afxdp", "b", 0.9, Some(0.05), None),
        ];
        let svg = render(&rows).unwrap();
        for text in ["kernel", "620 ns (0.600 Mpps)", "300 ns", "0.900 Mpps, 0.05 % lost", "Layout b"] {
            assert!(svg.contains(text), "{text} missing from\n{svg}");
        }
        assert!(!svg.contains("generator-alone"), "the baseline has no cost of its own to draw");
        assert_eq!(svg.matches("<rect").count(), 1 + 3, "the background and one bar per row drawn");
    }

    #[test]
    fn nothing_to_draw_is_an_error() {
        assert!(render(&[row("generator-alone", "a", 1.0, None, None)]).is_err());
    }
}
