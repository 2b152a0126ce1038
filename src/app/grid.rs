//! A scrollable, filterable, sortable list over rows owned elsewhere. The index vector is
//! recomputed when data, filter or sort change, never per frame; drawing reads only the
//! visible window.

use std::cmp::Ordering;

/// Ascending, unknown values last.
pub fn opt_cmp<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Largest first, unknown values last.
pub fn opt_desc<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => y.partial_cmp(&x).unwrap_or(Ordering::Equal),
        (a, b) => opt_cmp(a, b),
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grid {
    /// Row indices that pass the filter, in display order.
    pub index: Vec<usize>,
    /// Position of the selection within `index`.
    pub selected: usize,
    /// First visible position.
    pub offset: usize,
    pub sort_col: usize,
    pub reverse: bool,
    /// Case-insensitive substring (already lower-cased).
    pub filter: String,
    /// The operator moved away from the first row: the selection follows its row through
    /// re-sorts. Until then (and after `g`) it stays on the first row, the worst one.
    pub moved: bool,
}

impl Grid {
    /// The selected row's index into the data, if any.
    pub fn selected_row(&self) -> Option<usize> {
        self.index.get(self.selected).copied()
    }

    /// Recompute the index. `text(row)` is the row's lower-cased searchable text;
    /// `cmp` orders rows for `sort_col`. The selection stays on the same row (by data
    /// index, or by `same` when rows were replaced).
    pub fn rebuild<T>(
        &mut self,
        rows: &[T],
        text: impl Fn(&T) -> &str,
        cmp: impl Fn(&T, &T, usize) -> Ordering,
        keep: Option<&dyn Fn(&T) -> bool>,
    ) {
        let prev = self.selected_row();
        let filter = self.filter.as_str();
        self.index = (0..rows.len())
            .filter(|&i| filter.is_empty() || text(&rows[i]).contains(filter))
            .collect();
        let col = self.sort_col;
        let rev = self.reverse;
        // Every comparator ends with a unique key, so an unstable sort is deterministic.
        self.index.sort_unstable_by(|&a, &b| {
            let o = cmp(&rows[a], &rows[b], col);
            if rev { o.reverse() } else { o }
        });
        let found = match keep {
            _ if !self.moved => Some(0),
            Some(f) => self.index.iter().position(|&i| f(&rows[i])),
            None => prev.and_then(|p| self.index.iter().position(|&i| i == p)),
        };
        if let Some(pos) = found {
            self.selected = pos;
        }
        self.clamp();
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    fn clamp(&mut self) {
        if self.index.is_empty() {
            self.selected = 0;
            self.offset = 0;
        } else if self.selected >= self.index.len() {
            self.selected = self.index.len() - 1;
        }
        if self.offset > self.selected {
            self.offset = self.selected;
        }
    }

    /// Move by `delta` rows (negative is up), keeping the selection visible in a window of
    /// `height` rows.
    pub fn move_by(&mut self, delta: isize, height: usize) {
        if self.index.is_empty() {
            return;
        }
        let max = self.index.len() as isize - 1;
        self.selected = (self.selected as isize + delta).clamp(0, max) as usize;
        self.moved = self.selected > 0;
        self.ensure_visible(height);
    }

    pub fn top(&mut self, height: usize) {
        self.selected = 0;
        self.moved = false;
        self.ensure_visible(height);
    }

    pub fn bottom(&mut self, height: usize) {
        self.selected = self.index.len().saturating_sub(1);
        self.moved = self.selected > 0;
        self.ensure_visible(height);
    }

    pub fn ensure_visible(&mut self, height: usize) {
        let h = height.max(1);
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + h {
            self.offset = self.selected + 1 - h;
        }
        let max_offset = self.index.len().saturating_sub(h);
        if self.offset > max_offset {
            self.offset = max_offset;
        }
    }

    /// Positions `[start, end)` of `index` that a window of `height` rows shows.
    pub fn window(&self, height: usize) -> (usize, usize) {
        let start = self.offset.min(self.index.len());
        (start, (start + height).min(self.index.len()))
    }

    /// Cycle the sort column; a new column starts in its natural direction.
    pub fn cycle_sort(&mut self, columns: usize) {
        self.sort_col = (self.sort_col + 1) % columns.max(1);
        self.reverse = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<(String, u32)> {
        vec![
            ("b".into(), 2),
            ("a".into(), 3),
            ("c".into(), 1),
            ("ab".into(), 0),
        ]
    }

    fn cmp(a: &(String, u32), b: &(String, u32), col: usize) -> Ordering {
        match col {
            0 => a.0.cmp(&b.0),
            _ => b.1.cmp(&a.1),
        }
    }

    #[test]
    fn filter_sort_and_selection_follow_the_row() {
        let r = rows();
        let mut g = Grid::default();
        g.rebuild(&r, |x| &x.0, cmp, None);
        assert_eq!(g.index, vec![1, 3, 0, 2]);
        g.sort_col = 1;
        g.rebuild(&r, |x| &x.0, cmp, None);
        assert_eq!(g.selected, 0, "untouched: stays on the first row");
        g.sort_col = 0;
        g.rebuild(&r, |x| &x.0, cmp, None);
        g.move_by(2, 10); // "b"
        assert_eq!(g.selected_row(), Some(0));
        g.sort_col = 1;
        g.rebuild(&r, |x| &x.0, cmp, None);
        assert_eq!(g.index, vec![1, 0, 2, 3]);
        assert_eq!(g.selected_row(), Some(0), "selection stays on b");
        g.filter = "a".into();
        g.rebuild(&r, |x| &x.0, cmp, None);
        assert_eq!(g.index, vec![1, 3]);
        assert_eq!(g.selected, 1, "b filtered out: selection clamps");
        g.reverse = true;
        g.rebuild(&r, |x| &x.0, cmp, Some(&|x: &(String, u32)| x.0 == "a"));
        assert_eq!(g.index, vec![3, 1]);
        assert_eq!(g.selected_row(), Some(1));
    }

    #[test]
    fn scrolling_keeps_selection_visible() {
        let r: Vec<(String, u32)> = (0..100).map(|i| (format!("{i:03}"), i)).collect();
        let mut g = Grid::default();
        g.rebuild(&r, |x| &x.0, cmp, None);
        g.move_by(15, 10);
        assert_eq!((g.selected, g.offset), (15, 6));
        g.move_by(-10, 10);
        assert_eq!((g.selected, g.offset), (5, 5));
        g.bottom(10);
        assert_eq!((g.selected, g.offset), (99, 90));
        assert_eq!(g.window(10), (90, 100));
        g.move_by(1000, 10);
        assert_eq!(g.selected, 99);
        g.top(10);
        assert_eq!((g.selected, g.offset), (0, 0));
        let mut empty = Grid::default();
        empty.move_by(1, 10);
        empty.bottom(10);
        assert_eq!(empty.selected_row(), None);
    }
}
