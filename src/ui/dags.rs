//! Tab 4: maintenance DAGs from Airflow.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme::Theme;
use crate::app::state::State;

pub fn draw(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    if !s.airflow_configured {
        let lines = vec![
            Line::from(""),
            Line::from(Span::styled("  Airflow is not configured.", th.header())),
            Line::from(
                "  Pass --airflow URL (with FLOE_AIRFLOW_PASSWORD), or set [airflow] url in the config file,",
            ),
            Line::from(
                "  to see the maintenance DAGs, their failing tasks and the tail of their logs here.",
            ),
        ];
        f.render_widget(Paragraph::new(lines), area);
    }
}
