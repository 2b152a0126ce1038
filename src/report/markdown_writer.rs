//! The one markdown writer of the reports (`floe check --format markdown`, the postmortem):
//! every string from a server is made inert here and cannot leave its place.
//!
//! The policy: prose goes through [`text`] (on one line, every character markdown would
//! act on escaped); an identifier (a table name, a DAG, task, rule or connection id, a state
//! a server reported) goes through [`code`] (a code span whose fence is longer than any
//! backtick run inside); a table is written by [`Table`], which escapes each cell's pipes
//! once. No control byte is ever written: each piece is sanitised on its way in.

use crate::text::one_line;

/// Text for markdown prose and table cells: on one line, inert, and with every character
/// markdown would act on escaped — a hostile value cannot open a link (no `[`), raw HTML,
/// an entity, emphasis or a new table cell.
pub fn text(s: &str) -> String {
    let line = one_line(s);
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '&'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A code span holding `s` verbatim (on one line, inert): its fence is one backtick longer
/// than the longest run of backticks inside, so nothing inside can close it.
pub fn code(s: &str) -> String {
    let line = one_line(s);
    if line.is_empty() {
        return "-".into();
    }
    let mut longest = 0;
    let mut run = 0;
    for c in line.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest + 1);
    let pad = if line.starts_with('`') || line.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{line}{pad}{fence}")
}

/// [`code`] for a table cell: a `|` inside a code span still ends a GFM cell unless
/// escaped.
pub fn code_cell(s: &str) -> String {
    escape_pipes(&code(s))
}

/// Every `|` escaped for a GFM table: the table scanner pairs backslashes, so a pipe needs
/// an odd run of them before it (a pipe already after an odd run is escaped as it is).
fn escape_pipes(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    let mut run = 0;
    for c in s.chars() {
        if c == '|' && run % 2 == 0 {
            out.push('\\');
        }
        run = if c == '\\' { run + 1 } else { 0 };
        out.push(c);
    }
    out
}

/// One cell of a [`Table`], escaped by the table as its kind says.
pub enum Cell {
    /// Prose from anywhere: written as [`text`].
    Text(String),
    /// An identifier: written as [`code_cell`].
    Code(String),
    /// floe's own text (a number, a label, a time), or markdown already made of [`text`] and
    /// [`code`] pieces: put on one line, inert, with its pipes escaped.
    Plain(String),
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    pub fn code(s: impl Into<String>) -> Cell {
        Cell::Code(s.into())
    }

    pub fn plain(s: impl Into<String>) -> Cell {
        Cell::Plain(s.into())
    }

    fn render(&self) -> String {
        match self {
            Cell::Text(s) => text(s),
            Cell::Code(s) => code_cell(s),
            Cell::Plain(s) => escape_pipes(&one_line(s)),
        }
    }
}

/// How a column's cells line up.
#[derive(Clone, Copy)]
pub enum Align {
    Left,
    Right,
}

/// A GFM table: a header, then rows whose cells are escaped once, here.
pub struct Table {
    out: String,
    columns: usize,
}

impl Table {
    /// A table with these column titles (floe's own) and alignments.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        let mut out = String::new();
        for (title, _) in columns {
            out.push_str("| ");
            out.push_str(title);
            out.push(' ');
        }
        out.push_str("|\n");
        for (_, align) in columns {
            out.push_str(match align {
                Align::Left => "|---",
                Align::Right => "|---:",
            });
        }
        out.push_str("|\n");
        Table {
            out,
            columns: columns.len(),
        }
    }

    /// Columns that all line up left.
    pub fn left(titles: &[&str]) -> Table {
        let columns: Vec<(&str, Align)> = titles.iter().map(|t| (*t, Align::Left)).collect();
        Table::new(&columns)
    }

    /// One row; it must have one cell a column.
    pub fn row(&mut self, cells: impl IntoIterator<Item = Cell>) {
        let mut n = 0;
        for cell in cells {
            self.out.push_str("| ");
            self.out.push_str(&cell.render());
            self.out.push(' ');
            n += 1;
        }
        debug_assert_eq!(
            n, self.columns,
            "a markdown row with the wrong number of cells"
        );
        self.out.push_str("|\n");
    }

    /// The table's markdown, ending in a newline.
    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_and_text() {
        assert_eq!(code("plain"), "`plain`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`a"), "`` `a ``");
        assert_eq!(code(""), "-");
        assert_eq!(code_cell("a|b"), "`a\\|b`");
        assert_eq!(code_cell("a\\|b"), "`a\\|b`", "already escaped");
        assert_eq!(code_cell("a\\\\|b"), "`a\\\\\\|b`");
        assert_eq!(
            text("a_b *c* [d](e) <f>"),
            "a\\_b \\*c\\* \\[d\\](e) \\<f\\>"
        );
        assert_eq!(text("two\nlines"), "two lines");
    }

    #[test]
    fn a_table_escapes_each_cell_once() {
        let mut t = Table::new(&[
            ("id", Align::Left),
            ("n", Align::Right),
            ("why", Align::Left),
        ]);
        t.row([
            Cell::code("a|b"),
            Cell::plain("1 → 2"),
            Cell::text("x | *y*"),
        ]);
        t.row([
            Cell::code(""),
            Cell::plain(format!("{} | {}", code("a"), text("b_c"))),
            Cell::text("\u{1b}[2J"),
        ]);
        let md = t.finish();
        assert_eq!(
            md,
            "| id | n | why |\n|---|---:|---|\n\
             | `a\\|b` | 1 → 2 | x \\| \\*y\\* |\n\
             | - | `a` \\| b\\_c | \\\\x1b\\[2J |\n"
        );
        assert!(crate::text::is_inert(&md));
    }
}
