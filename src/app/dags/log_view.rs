//! A task's log as drawn: runs of frames under a virtualenv's `site-packages` folded into
//! one row (they are the library's, rarely the cause), long lines cut or wrapped, and
//! scrolled sideways when cut.

use crate::airflow::LogLine;
use crate::app::state::State;

/// One row of the log view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogRow {
    /// The log's line at this index.
    Line(usize),
    /// `lines` lines from `first` on: `frames` frames under site-packages, folded.
    Folded {
        first: usize,
        lines: usize,
        frames: usize,
    },
}

impl LogRow {
    /// The first log line the row shows.
    pub fn first(self) -> usize {
        match self {
            LogRow::Line(i) => i,
            LogRow::Folded { first, .. } => first,
        }
    }
}

/// A traceback frame of code under `site-packages`: Python's `  File "…/site-packages/…",
/// line N, in f` or Airflow 3's structured `  …/site-packages/…:N in f`.
pub fn is_library_frame(text: &str) -> bool {
    let t = text.trim_start();
    t.contains("/site-packages/") && (t.starts_with("File \"") || t.contains(".py:"))
}

fn indent(text: &str) -> usize {
    text.len() - text.trim_start().len()
}

/// The rows of `lines`: every line, or (unless `unfolded`) with each run of library
/// frames, and the source line Python prints under each, as one row.
pub fn log_rows(lines: &[LogLine], unfolded: bool) -> Vec<LogRow> {
    let mut rows = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if unfolded || !is_library_frame(&lines[i].text) {
            rows.push(LogRow::Line(i));
            i += 1;
            continue;
        }
        let first = i;
        let mut frames = 0;
        while i < lines.len() && is_library_frame(&lines[i].text) {
            let frame = &lines[i].text;
            frames += 1;
            i += 1;
            // Python's plain-text traceback: the frame's source line, indented deeper.
            if frame.trim_start().starts_with("File \"")
                && let Some(next) = lines.get(i)
                && !next.text.trim_start().starts_with("File \"")
                && !next.text.trim().is_empty()
                && indent(&next.text) > indent(frame)
            {
                i += 1;
            }
        }
        rows.push(LogRow::Folded {
            first,
            lines: i - first,
            frames,
        });
    }
    rows
}

/// The row that shows log line `line`.
pub fn row_of(rows: &[LogRow], line: usize) -> usize {
    rows.iter().rposition(|r| r.first() <= line).unwrap_or(0)
}

/// `h`/`l`: scroll the log's long lines sideways (not while they wrap).
pub fn scroll_log_sideways(s: &mut State, delta: isize) {
    if !crate::app::nav::in_log(s) {
        return;
    }
    if let Some(v) = &mut s.dags.log {
        if v.wrap {
            return;
        }
        let widest = v
            .log
            .lines
            .iter()
            .map(|l| l.text.chars().count())
            .max()
            .unwrap_or(0);
        v.hscroll =
            (v.hscroll as isize + delta).clamp(0, widest.saturating_sub(1) as isize) as usize;
    }
}

/// `w`: wrap long lines, or cut them at the edge again.
pub fn toggle_log_wrap(s: &mut State) {
    if !crate::app::nav::in_log(s) {
        return;
    }
    if let Some(v) = &mut s.dags.log {
        v.wrap = !v.wrap;
        v.hscroll = 0;
    }
}

/// `z`: unfold the frames under site-packages, or fold them again; the top line stays.
pub fn toggle_log_frames(s: &mut State) {
    if !crate::app::nav::in_log(s) {
        return;
    }
    if let Some(v) = &mut s.dags.log {
        let top = v.rows.get(v.scroll).map(|r| r.first()).unwrap_or(0);
        v.frames = !v.frames;
        v.rows = log_rows(&v.log.lines, v.frames);
        v.scroll = row_of(&v.rows, top);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(t: &str) -> LogLine {
        LogLine {
            timestamp: None,
            level: None,
            text: t.into(),
            error: true,
        }
    }

    #[test]
    fn library_frames_fold_into_one_row_and_unfold() {
        let lines: Vec<LogLine> = [
            "Traceback (most recent call last):",
            "  File \"/opt/airflow/venv/lib/python3.11/site-packages/airflow/models/taskinstance.py\", line 465, in _execute_task",
            "    result = _execute_callable(context=context)",
            "  File \"/opt/airflow/venv/lib/python3.11/site-packages/airflow/operators/python.py\", line 238, in execute",
            "    return_value = self.execute_callable()",
            "  File \"/opt/airflow/dags/compact.py\", line 41, in compact",
            "    raise ConnectionError(msg)",
            "ConnectionError: could not connect to Trino at trino-old.internal:8080",
            "  /opt/venv/lib/python3.12/site-packages/trino/client.py:812 in execute",
            "  /opt/venv/lib/python3.12/site-packages/requests/api.py:59 in request",
        ]
        .into_iter()
        .map(line)
        .collect();
        let rows = log_rows(&lines, false);
        assert_eq!(
            rows,
            vec![
                LogRow::Line(0),
                LogRow::Folded {
                    first: 1,
                    lines: 4,
                    frames: 2
                },
                LogRow::Line(5),
                LogRow::Line(6),
                LogRow::Line(7),
                LogRow::Folded {
                    first: 8,
                    lines: 2,
                    frames: 2
                },
            ]
        );
        assert_eq!(row_of(&rows, 3), 1);
        assert_eq!(row_of(&rows, 7), 4);
        assert_eq!(log_rows(&lines, true).len(), lines.len());
        // The DAG's own frame is never folded.
        assert!(!is_library_frame(&lines[5].text));
    }
}
