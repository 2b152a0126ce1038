//! What the Partitions and Snapshots tabs share: each is about one table, the one the
//! operator opened (`TablesView::opened`, else the selected row; never a row that a
//! re-sort put under the selection), and reloads when asked or when that table changed.

use super::action::Effect;
use super::state::Load;
use crate::lakehouse::model::TableRef;

/// A view about one table, loaded by request number (older results are dropped).
pub trait TableDetail: Default {
    fn table(&self) -> Option<&TableRef>;
    fn set_table(&mut self, table: TableRef);
    fn load_state(&self) -> &Load;
    fn set_load(&mut self, load: Load);
    fn request_mut(&mut self) -> &mut u64;
    /// The effect that loads request `request` of `table`.
    fn effect(request: u64, table: TableRef) -> Effect;
}

/// Point the view at `selected` (else the table it is about) and load it, unless it is
/// loaded or loading and not `force`d.
pub fn load<V: TableDetail>(v: &mut V, selected: Option<TableRef>, force: bool) -> Vec<Effect> {
    let Some(table) = selected.or_else(|| v.table().cloned()) else {
        return Vec::new();
    };
    let same = v.table() == Some(&table);
    if same && !force && matches!(v.load_state(), Load::Loaded | Load::Loading) {
        return Vec::new();
    }
    if !same {
        let request = *v.request_mut();
        *v = V::default();
        *v.request_mut() = request;
        v.set_table(table.clone());
    }
    reload(v, table)
}

/// Load the view's table again.
pub fn reload<V: TableDetail>(v: &mut V, table: TableRef) -> Vec<Effect> {
    let request = v.request_mut();
    *request += 1;
    let request = *request;
    v.set_load(Load::Loading);
    vec![V::effect(request, table)]
}
