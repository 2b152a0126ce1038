//! The health popup: the verdict of the table under the cursor, on whichever tab it is
//! (an incident's table on Triage, the row on Tables, the opened table on the detail tabs).

use super::state::{Popup, State, Tab};
use super::triage;

pub fn open(s: &mut State) {
    let t = match s.tab {
        Tab::Triage => triage::selected_table(s),
        Tab::Tables => s.tables.selected().map(|r| r.table.clone()),
        _ => s.focus_table().cloned(),
    };
    if let Some(t) = t {
        s.popup = Some(Popup::Health(t));
    }
}
