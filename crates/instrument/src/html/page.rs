//! The page itself: escaping, tables whose figure cells name the JSON value
//! they show, inline figures, and the head (style, content security policy,
//! the render check).

use anyhow::{Context, Result};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// Text made safe for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// One table cell. A figure cell names where its number comes from:
/// `data-json="summary.json#/runs/0/latency/p99_ns"` (a file of the
/// result and an RFC 6901 pointer into it) and `data-value` (the number as
/// the file has it), so a reader or a test can check the page against the
/// file.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    text: String,
    source: Option<(String, String)>,
    class: Option<&'static str>,
}

impl Cell {
    /// A plain text cell.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell { text: s.into(), ..Cell::default() }
    }

    /// A figure read from `doc` (the file `file`) at `pointer`, shown by
    /// `show`; when the file has no number there, `missing` is shown and
    /// the cell names no source.
    pub fn figure(file: &str, doc: &Value, pointer: &str, show: impl Fn(&Value) -> String, missing: &str) -> Cell {
        match doc.pointer(pointer) {
            Some(v) if v.is_number() => Cell::value(file, pointer, v, show),
            _ => Cell { text: missing.into(), source: None, class: Some("num") },
        }
    }

    /// A number `v` that the file `file` has at `pointer`, shown by `show`.
    pub fn value(file: &str, pointer: &str, v: &Value, show: impl Fn(&Value) -> String) -> Cell {
        Cell { text: show(v), source: Some((format!("{file}#{pointer}"), v.to_string())), class: Some("num") }
    }

    /// The cell with `s` after its text (`*`: an incomplete run).
    pub fn suffix(mut self, s: &str) -> Cell {
        self.text.push_str(s);
        self
    }

    /// The cell with a CSS class (`num` right-aligns).
    pub fn class(mut self, c: &'static str) -> Cell {
        self.class = Some(c);
        self
    }

    fn html(&self, tag: &str) -> String {
        let mut o = format!("<{tag}");
        if let Some((src, v)) = &self.source {
            let _ = write!(o, " data-json=\"{}\" data-value=\"{}\"", esc(src), esc(v));
        }
        if let Some(c) = self.class {
            let _ = write!(o, " class=\"{c}\"");
        }
        let _ = write!(o, ">{}</{tag}>", esc(&self.text));
        o
    }
}

/// A table: header rows (cells with a column span), body rows, a caption and notes below.
#[derive(Default)]
pub struct Table {
    /// The element id.
    pub id: String,
    /// What the table shows.
    pub caption: String,
    /// Header rows: (text, columns spanned).
    pub head: Vec<Vec<(String, usize)>>,
    /// Body rows.
    pub rows: Vec<Vec<Cell>>,
    /// Lines under the table.
    pub notes: Vec<String>,
}

impl Table {
    /// A table with one header row.
    pub fn new(id: &str, caption: &str, head: &[&str]) -> Table {
        Table { id: id.into(), caption: caption.into(), head: vec![head.iter().map(|h| (h.to_string(), 1)).collect()], ..Table::default() }
    }

    fn html(&self) -> String {
        let mut o = format!("<table id=\"{}\"><caption>{}</caption><thead>", esc(&self.id), esc(&self.caption));
        for r in &self.head {
            o.push_str("<tr>");
            for (h, span) in r {
                if *span > 1 {
                    let _ = write!(o, "<th colspan=\"{span}\">{}</th>", esc(h));
                } else {
                    let _ = write!(o, "<th>{}</th>", esc(h));
                }
            }
            o.push_str("</tr>");
        }
        o.push_str("</thead><tbody>");
        for r in &self.rows {
            o.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                o.push_str(&c.html(if i == 0 { "th" } else { "td" }));
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody></table>");
        for n in &self.notes {
            let _ = write!(o, "<p class=\"note\">{}</p>", esc(n));
        }
        o
    }
}

/// A page being written: sections in order, a table of contents, then
/// [`Page::finish`].
pub struct Page {
    title: String,
    toc: Vec<(String, String)>,
    body: String,
}

/// The style: readable on a screen and printed; wide tables scroll in their box.
const STYLE: &str = "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;margin:0 auto;padding:1em 2em 4em;max-width:1500px;color:#1b1f23;background:#fff}\
h1{font-size:1.6em;margin:.3em 0}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}\
nav{font-size:.9em}nav a{margin-right:1em}\
.wrap{overflow-x:auto}table{border-collapse:collapse;margin:.6em 0;font-variant-numeric:tabular-nums;font-size:.92em}\
caption{text-align:left;font-weight:600;padding:.3em 0}th,td{border:1px solid #d0d7de;padding:.25em .6em;white-space:nowrap}\
thead th{background:#f3f5f7}tbody th{text-align:left;font-weight:600;background:#fafbfc}td.num{text-align:right}\
td.na{color:#8a8f98;text-align:right}p.note{font-size:.88em;color:#444;margin:.2em 0;max-width:70em}\
pre{background:#f6f8fa;border:1px solid #d0d7de;padding:.7em;overflow-x:auto;font-size:.85em}\
figure{margin:1em 0}figure svg,figure img{width:100%;max-width:1200px;height:auto;border:1px solid #e1e4e8}figcaption{font-size:.9em;color:#444}\
dl.env{display:grid;grid-template-columns:max-content auto;gap:.15em 1em}dl.env dt{font-weight:600}dl.env dd{margin:0;word-break:break-word}\
.missing{color:#9a3412}";

/// Catches every error (script, a resource refused by the policy, a broken
/// image) into the document, and when the page has loaded, says so
/// (`data-ok`) if nothing went wrong and every figure has a size.
const SCRIPT_HEAD: &str =
    "(function(){var errs=[];function note(m){errs.push(String(m));document.documentElement.setAttribute('data-errors',errs.join('\\n'));}\
window.addEventListener('error',function(e){note(e.message||('failed to load '+((e.target&&(e.target.src||e.target.href))||e.type)));},true);\
document.addEventListener('securitypolicyviolation',function(e){note('blocked by the page policy: '+e.blockedURI);});\
window.addEventListener('load',function(){var figs=document.querySelectorAll('figure svg, figure img'),empty=0;\
for(var i=0;i<figs.length;i++){var r=figs[i].getBoundingClientRect();if(r.width<10||r.height<10){empty++;}}\
var d=document.documentElement;d.setAttribute('data-figures',String(figs.length));d.setAttribute('data-figures-empty',String(empty));\
d.setAttribute('data-cells',String(document.querySelectorAll('[data-json]').length));\
if(errs.length===0&&empty===0){d.setAttribute('data-ok','1');}});})();";

impl Page {
    /// An empty page titled `title`.
    pub fn new(title: &str) -> Page {
        Page { title: title.into(), toc: Vec::new(), body: String::new() }
    }

    /// Starts a section (a heading in the table of contents).
    pub fn section(&mut self, id: &str, title: &str) {
        self.toc.push((id.into(), title.into()));
        let _ = write!(self.body, "<h2 id=\"{}\">{}</h2>", esc(id), esc(title));
    }

    /// A paragraph of text.
    pub fn text(&mut self, s: &str) {
        let _ = write!(self.body, "<p>{}</p>", esc(s));
    }

    /// A paragraph of text with an id and a class.
    pub fn text_with(&mut self, id: &str, class: &str, s: &str) {
        let _ = write!(self.body, "<p id=\"{}\" class=\"{}\">{}</p>", esc(id), esc(class), esc(s));
    }

    /// Preformatted text (the terminal's tables, a command).
    pub fn pre(&mut self, id: &str, s: &str) {
        let _ = write!(self.body, "<pre id=\"{}\">{}</pre>", esc(id), esc(s));
    }

    /// Text in a collapsed block (the terminal's tables).
    pub fn details(&mut self, id: &str, summary: &str, s: &str) {
        let _ = write!(self.body, "<details><summary>{}</summary><pre id=\"{}\">{}</pre></details>", esc(summary), esc(id), esc(s));
    }

    /// Key-value lines: (key, cell).
    pub fn pairs(&mut self, id: &str, pairs: &[(String, Cell)]) {
        let _ = write!(self.body, "<dl class=\"env\" id=\"{}\">", esc(id));
        for (k, v) in pairs {
            let _ = write!(self.body, "<dt>{}</dt>{}", esc(k), v.html("dd"));
        }
        self.body.push_str("</dl>");
    }

    /// A table (scrolling sideways when wider than the page).
    pub fn table(&mut self, t: &Table) {
        let _ = write!(self.body, "<div class=\"wrap\">{}</div>", t.html());
    }

    /// An SVG drawn by detpath itself (plotters' output or the page's own
    /// bars), inline.
    pub fn figure_svg(&mut self, id: &str, caption: &str, svg: &str) {
        let svg = svg.find("<svg").map_or(svg, |i| &svg[i..]);
        let _ = write!(self.body, "<figure id=\"{}\">{}<figcaption>{}</figcaption></figure>", esc(id), svg, esc(caption));
    }

    /// An image file of the result directory (`image/svg+xml`, `image/png`)
    /// as a data: URI: the page stays one file, and an SVG shown as an
    /// image runs no script whatever the file holds.
    pub fn figure_file(&mut self, id: &str, caption: &str, mime: &str, bytes: &[u8]) {
        let _ = write!(
            self.body,
            "<figure id=\"{}\"><img alt=\"{}\" src=\"data:{mime};base64,{}\"><figcaption>{}</figcaption></figure>",
            esc(id),
            esc(caption),
            base64(bytes),
            esc(caption)
        );
    }

    /// The whole document.
    pub fn finish(self) -> String {
        let mut o = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        o.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">");
        o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        let _ = write!(o, "<title>{}</title><style>{STYLE}</style><script>{SCRIPT_HEAD}</script></head><body>", esc(&self.title));
        let _ = write!(o, "<h1>{}</h1><nav>", esc(&self.title));
        for (id, t) in &self.toc {
            let _ = write!(o, "<a href=\"#{}\">{}</a>", esc(id), esc(t));
        }
        o.push_str("</nav>");
        o.push_str(&self.body);
        o.push_str("</body></html>\n");
        o
    }
}

/// Standard base64 (RFC 4648, with padding).
pub fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut o = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        o.push(A[(n >> 18) as usize & 63] as char);
        o.push(A[(n >> 12) as usize & 63] as char);
        o.push(if c.len() > 1 { A[(n >> 6) as usize & 63] as char } else { '=' });
        o.push(if c.len() > 2 { A[n as usize & 63] as char } else { '=' });
    }
    o
}

/// A count as the terminal's tables print it (`1,234,567`); any other value as its JSON.
pub fn count(v: &Value) -> String {
    v.as_u64().map(crate::table::thousands).unwrap_or_else(|| v.to_string())
}

/// The JSON document `name` of the result directory `dir`, if it has one.
pub fn read_json(dir: &Path, name: &str) -> Result<Option<Value>> {
    let p = dir.join(name);
    if !p.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).map(Some).with_context(|| format!("{}: not JSON", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_base64() {
        assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn a_figure_cell_names_its_source_and_a_missing_one_does_not() {
        let doc: Value = serde_json::json!({"runs": [{"p99_ns": 8086123, "p99_99_ns": null}]});
        let c = Cell::figure("summary.json", &doc, "/runs/0/p99_ns", |v| format!("{}", v.as_u64().unwrap() / 1000), "-");
        assert_eq!(c.html("td"), "<td data-json=\"summary.json#/runs/0/p99_ns\" data-value=\"8086123\" class=\"num\">8086</td>");
        let m = Cell::figure("summary.json", &doc, "/runs/0/p99_99_ns", |_| unreachable!(), "n/a");
        assert_eq!(m.html("td"), "<td class=\"num\">n/a</td>");
    }
}
