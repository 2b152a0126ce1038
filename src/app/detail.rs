//! What the Partitions and Snapshots tabs share: each is about one table, the one the
//! operator opened (`TablesView::opened`, else the selected row; never a row that a
//! re-sort put under the selection), and reloads when asked or when that table changed.

use super::action::Effect;
use super::state::Load;
use crate::lakehouse::model::TableRef;

/// The table a detail tab is about, how its load stands, and the newest request for it
/// (a result of an older request is dropped). Each detail view holds one, as each list
/// holds a `Grid`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Detail {
    pub table: Option<TableRef>,
    pub load: Load,
    pub request: u64,
}

impl Detail {
    /// Whether a result of `request` for `table` is the one this tab waits for.
    pub fn awaits(&self, request: u64, table: &TableRef) -> bool {
        request == self.request && self.table.as_ref() == Some(table)
    }
}

/// A view about one table: its [`Detail`], and the effect that loads it.
pub trait TableDetail: Default {
    fn detail(&mut self) -> &mut Detail;
    /// The effect that loads request `request` of `table`.
    fn effect(request: u64, table: TableRef) -> Effect;
}

/// Point the view at `selected` (else the table it is about) and load it, unless it is
/// loaded or loading and not `force`d. Another table starts the view afresh.
pub fn load<V: TableDetail>(v: &mut V, selected: Option<TableRef>, force: bool) -> Vec<Effect> {
    let d = v.detail();
    let Some(table) = selected.or_else(|| d.table.clone()) else {
        return Vec::new();
    };
    let same = d.table.as_ref() == Some(&table);
    if same && !force && matches!(d.load, Load::Loaded | Load::Loading) {
        return Vec::new();
    }
    if !same {
        let request = d.request;
        *v = V::default();
        let d = v.detail();
        d.request = request;
        d.table = Some(table.clone());
    }
    reload(v, table)
}

/// Load the view's table again.
pub fn reload<V: TableDetail>(v: &mut V, table: TableRef) -> Vec<Effect> {
    let d = v.detail();
    d.request += 1;
    d.load = Load::Loading;
    vec![V::effect(d.request, table)]
}
