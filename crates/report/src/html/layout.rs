//! A small layered layout for a finding's chain, drawn as inline SVG: the
//! page must show the graph without Graphviz or any script. Nodes sit in
//! layers (one per call depth), left to right within a layer; edges run
//! down between layers or across within one (a held lock beside the
//! function that holds it).

use std::fmt::Write as _;

use super::esc;

/// What a node stands for, which decides its look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A function on the chain.
    Frame,
    /// The function the finding is in.
    Finding,
    /// The callee (or drop) that breaks the rule.
    Violation,
    /// A lock held at the violating point.
    Lock,
}

pub struct Node {
    pub layer: usize,
    pub text: String,
    /// Shown on hover: the full name.
    pub title: String,
    pub kind: NodeKind,
    /// A same-page link (`#s-12`), for functions with a summary.
    pub href: Option<String>,
}

pub struct GraphEdge {
    pub from: usize,
    pub to: usize,
    pub label: String,
    pub dashed: bool,
}

const CHAR_W: f64 = 7.4;
const NODE_H: f64 = 26.0;
const LAYER_GAP: f64 = 30.0;
const NODE_GAP: f64 = 44.0;
const PAD: f64 = 10.0;
/// Longer names are shortened in the box (the full one is the tooltip):
/// kernel instance names run to hundreds of characters.
pub const MAX_CHARS: usize = 64;

/// `a::B::<very long generics>::c` → `a::B::<X<…>>::c`, then
/// `a::B::<…>::c`, then the tail, so the box names the item.
pub fn short_name(name: &str) -> String {
    if name.chars().count() <= MAX_CHARS {
        return name.to_string();
    }
    let mut out = String::new();
    for keep in [1, 0] {
        out = without_generics(name, keep);
        if out.chars().count() <= MAX_CHARS {
            return out;
        }
    }
    let n = out.chars().count();
    let tail: String = out.chars().skip(n - (MAX_CHARS - 1)).collect();
    format!("…{tail}")
}

/// `name` with generic arguments nested deeper than `keep` levels
/// replaced by `…`. A leading `<T as Trait>` is a qualified path, not
/// generics: its brackets stay and do not count as a level.
fn without_generics(name: &str, keep: usize) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    // Inside a leading `<T as Trait>`, until its closing `>`.
    let mut qualified = name.starts_with('<');
    let mut prev = None;
    for (i, c) in name.chars().enumerate() {
        let arrow = prev == Some('-');
        prev = Some(c);
        match c {
            // `->` in a fn pointer type is not a bracket.
            '>' if arrow && depth <= keep => out.push(c),
            '>' if arrow => {}
            '<' if i == 0 && qualified => out.push(c),
            '<' => {
                depth += 1;
                if depth <= keep {
                    out.push(c);
                } else if depth == keep + 1 {
                    out.push_str("<…");
                }
            }
            '>' if depth == 0 && qualified => {
                qualified = false;
                out.push(c);
            }
            '>' if depth > 0 => {
                if depth <= keep + 1 {
                    out.push(c);
                }
                depth -= 1;
            }
            _ if depth <= keep => out.push(c),
            _ => {}
        }
    }
    out
}

/// The arrowhead every graph's edges use, defined once per page (an id
/// must be unique in the document).
pub const DEFS: &str = r#"<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs></svg>"#;

/// The SVG of the graph, sized to its content.
pub fn svg(nodes: &[Node], edges: &[GraphEdge]) -> String {
    let layers = nodes.iter().map(|n| n.layer + 1).max().unwrap_or(0);
    let width_of = |n: &Node| n.text.chars().count() as f64 * CHAR_W + 18.0;
    // Each layer's width, then every node's box, each layer centred.
    let mut row_width = vec![0.0f64; layers];
    for n in nodes {
        let w = &mut row_width[n.layer];
        if *w > 0.0 {
            *w += NODE_GAP;
        }
        *w += width_of(n);
    }
    let total_w = row_width.iter().copied().fold(0.0, f64::max) + 2.0 * PAD;
    let total_h = layers as f64 * (NODE_H + LAYER_GAP) - LAYER_GAP + 2.0 * PAD;
    let mut cursor: Vec<f64> = row_width.iter().map(|w| (total_w - w) / 2.0).collect();
    let boxes: Vec<(f64, f64, f64)> = nodes
        .iter()
        .map(|n| {
            let x = cursor[n.layer];
            let w = width_of(n);
            cursor[n.layer] += w + NODE_GAP;
            (x, PAD + n.layer as f64 * (NODE_H + LAYER_GAP), w)
        })
        .collect();
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="chain" xmlns="http://www.w3.org/2000/svg" width="{total_w:.0}" height="{total_h:.0}" viewBox="0 0 {total_w:.0} {total_h:.0}" role="img">"#
    );
    for e in edges {
        let (Some(&(fx, fy, fw)), Some(&(tx, ty, tw))) = (boxes.get(e.from), boxes.get(e.to))
        else {
            continue;
        };
        let (x1, y1, x2, y2, lx, ly) = if (fy - ty).abs() < f64::EPSILON {
            // Across one layer: side to side.
            let (x1, x2) = if fx < tx {
                (fx + fw, tx)
            } else {
                (fx, tx + tw)
            };
            let y = fy + NODE_H / 2.0;
            (x1, y, x2, y, (x1 + x2) / 2.0, y - 4.0)
        } else {
            let (x1, y1) = (fx + fw / 2.0, fy + NODE_H);
            let (x2, y2) = (tx + tw / 2.0, ty);
            (x1, y1, x2, y2, (x1 + x2) / 2.0 + 6.0, (y1 + y2) / 2.0 + 4.0)
        };
        let anchor = if (fy - ty).abs() < f64::EPSILON {
            "middle"
        } else {
            "start"
        };
        let _ = write!(
            out,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" class="edge{}" marker-end="url(#arrow)"/><text x="{lx:.1}" y="{ly:.1}" class="edge-label" text-anchor="{anchor}">{}</text>"#,
            if e.dashed { " dashed" } else { "" },
            esc(&e.label)
        );
    }
    for (n, &(x, y, w)) in nodes.iter().zip(&boxes) {
        let class = match n.kind {
            NodeKind::Frame => "node",
            NodeKind::Finding => "node finding-fn",
            NodeKind::Violation => "node violation",
            NodeKind::Lock => "node lock",
        };
        let body = format!(
            r#"<g class="{class}"><title>{}</title><rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{NODE_H}" rx="5"/><text x="{:.1}" y="{:.1}">{}</text></g>"#,
            esc(&n.title),
            x + 8.0,
            y + NODE_H / 2.0 + 4.0,
            esc(&n.text)
        );
        match &n.href {
            Some(h) => {
                let _ = write!(out, r#"<a href="{}">{body}</a>"#, esc(h));
            }
            None => out.push_str(&body),
        }
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_lose_their_generics_then_their_head() {
        assert_eq!(short_name("a::b"), "a::b");
        let long = format!("k::Lock::<{}>::lock", "x".repeat(80));
        assert_eq!(short_name(&long), "k::Lock::<…>::lock");
        let nested = format!(
            "core::ptr::drop_glue::<core::option::Option<{}>>",
            "y".repeat(60)
        );
        assert_eq!(
            short_name(&nested),
            "core::ptr::drop_glue::<core::option::Option<…>>"
        );
        let qualified =
            "<rust_binder::transaction::Transaction as rust_binder::DeliverToRead>::do_work";
        assert!(short_name(qualified).ends_with("rust_binder::DeliverToRead>::do_work"));
        assert!(short_name(qualified).starts_with('…'));
        let generic_self = format!("<a::B<{}> as c::D>::f", "z".repeat(70));
        assert_eq!(short_name(&generic_self), "<a::B<…> as c::D>::f");
        let fn_ptr = format!("m::call::<fn(u32) -> u32, {}>::go", "w".repeat(70));
        assert_eq!(short_name(&fn_ptr), "m::call::<…>::go");
        let longer = format!("{}::f", "m".repeat(100));
        let s = short_name(&longer);
        assert!(s.starts_with('…') && s.ends_with("::f"));
        assert_eq!(s.chars().count(), MAX_CHARS);
    }

    #[test]
    fn nodes_are_escaped_and_edges_drawn() {
        let nodes = vec![
            Node {
                layer: 0,
                text: "a<b>".into(),
                title: "a<b> & c".into(),
                kind: NodeKind::Frame,
                href: Some("#s-1".into()),
            },
            Node {
                layer: 1,
                text: "c".into(),
                title: "c".into(),
                kind: NodeKind::Violation,
                href: None,
            },
        ];
        let edges = vec![GraphEdge {
            from: 0,
            to: 1,
            label: "call".into(),
            dashed: false,
        }];
        let s = svg(&nodes, &edges);
        assert!(s.contains("a&lt;b&gt; &amp; c"));
        assert!(!s.contains("a<b>"));
        assert!(s.contains(r##"<a href="#s-1">"##));
        assert_eq!(s.matches("<line").count(), 1);
    }
}
