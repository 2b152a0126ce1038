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

/// Cells left for the identity column of a list `width` wide showing `cols` (one cell of
/// spacing between columns; every other column at its fixed or minimum width).
pub fn identity_room<C: Copy>(
    width: u16,
    cols: &[C],
    width_of: impl Fn(C) -> Width,
    is_identity: impl Fn(C) -> bool,
) -> u16 {
    let others: u16 = cols
        .iter()
        .filter(|c| !is_identity(**c))
        .map(|c| match width_of(*c) {
            Width::Fixed(n) | Width::Min(n) => n,
        })
        .sum();
    let spacing = cols.len().saturating_sub(1) as u16;
    width.saturating_sub(others.saturating_add(spacing))
}

/// The column that names the row yields last: from `cols` (what a list `width` wide
/// admits, left to right), drop the optional columns (`priority` above 0; the highest
/// first, the rightmost of equals first) until the identity column gets `need` cells or
/// no optional column is left.
pub fn fit_columns<C: Copy>(
    width: u16,
    mut cols: Vec<C>,
    need: u16,
    width_of: impl Fn(C) -> Width,
    is_identity: impl Fn(C) -> bool,
    priority: impl Fn(C) -> u16,
) -> Vec<C> {
    while identity_room(width, &cols, &width_of, &is_identity) < need {
        let drop = cols
            .iter()
            .enumerate()
            .filter(|(_, c)| !is_identity(**c) && priority(**c) > 0)
            .max_by_key(|(i, c)| (priority(**c), *i))
            .map(|(i, _)| i);
        match drop {
            Some(i) => {
                cols.remove(i);
            }
            None => break,
        }
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_columns_yield_to_the_identity_lowest_priority_first() {
        // (width, priority); column 0 is the identity.
        let cols: Vec<(u16, u16)> = vec![(0, 0), (5, 0), (6, 100), (7, 100), (8, 120)];
        let w = |c: (u16, u16)| {
            if c.0 == 0 {
                Width::Min(10)
            } else {
                Width::Fixed(c.0)
            }
        };
        let id = |c: (u16, u16)| c.0 == 0;
        let p = |c: (u16, u16)| c.1;
        // 60 wide: 5+6+7+8 + 4 spacing = 30, 30 left.
        assert_eq!(identity_room(60, &cols, w, id), 30);
        assert_eq!(fit_columns(60, cols.clone(), 30, w, id, p), cols);
        // 31 needed: the 120 column goes first.
        let got = fit_columns(60, cols.clone(), 35, w, id, p);
        assert_eq!(got, vec![(0, 0), (5, 0), (6, 100), (7, 100)]);
        // Then the rightmost of equal priority.
        let got = fit_columns(60, cols.clone(), 45, w, id, p);
        assert_eq!(got, vec![(0, 0), (5, 0), (6, 100)]);
        // Mandatory columns stay, however much the identity wants.
        let got = fit_columns(60, cols.clone(), 200, w, id, p);
        assert_eq!(got, vec![(0, 0), (5, 0)]);
    }
}
