//! Styles. Under `NO_COLOR` nothing is coloured: severity is always a text label, the
//! selection is reverse video, emphasis is bold/dim.

use ratatui::style::{Color, Modifier, Style};

use crate::app::state::Level;
use crate::health::Severity;

#[derive(Clone, Copy, Debug)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    pub fn new(no_color: bool) -> Theme {
        Theme { color: !no_color }
    }

    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    pub fn severity(&self, s: Severity) -> Style {
        match s {
            Severity::Critical => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            Severity::Warning => self.fg(Color::Yellow),
            Severity::Unknown => self.fg(Color::Magenta),
            Severity::Info => self.fg(Color::Cyan),
            Severity::Ok => self.fg(Color::Green),
        }
    }

    /// The selected row: reverse video, readable in every terminal and without colour.
    pub fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    pub fn header(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn column_header(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }

    pub fn dim(&self) -> Style {
        Style::default().add_modifier(Modifier::DIM)
    }

    pub fn key(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn badge(&self) -> Style {
        if self.color {
            Style::default()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        }
    }

    pub fn active_tab(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD)
    }

    pub fn marked(&self) -> Style {
        self.fg(Color::LightBlue).add_modifier(Modifier::BOLD)
    }

    pub fn compaction(&self) -> Style {
        self.fg(Color::Green).add_modifier(Modifier::BOLD)
    }

    pub fn level(&self, l: Level) -> Style {
        match l {
            Level::Info => Style::default(),
            Level::Warn => self.fg(Color::Yellow),
            Level::Error => self.fg(Color::Red).add_modifier(Modifier::BOLD),
        }
    }

    pub fn chart_line(&self) -> Style {
        self.fg(Color::Yellow)
    }
}
