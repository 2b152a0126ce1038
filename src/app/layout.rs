//! Screen geometry: what `update` needs to know about the drawing (how many list rows a
//! page holds) and the drawing uses to lay the screen out. One place for both.

/// Rows every screen spends outside the body list: header, tabs, column header, status,
/// footer.
pub const CHROME_ROWS: usize = 5;

/// Rows the Snapshots timeline (its sentence, chart and DAG runs) takes above the list
/// (none on short terminals).
pub fn chart_height(term_rows: u16) -> usize {
    if term_rows < 16 {
        0
    } else {
        ((term_rows as usize).saturating_sub(CHROME_ROWS) / 3).clamp(9, 14)
    }
}

/// How wide a list column is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    Fixed(u16),
    /// At least this, and whatever is left over.
    Min(u16),
}
