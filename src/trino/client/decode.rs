//! Decoding a statement's page: the columns and their types, then every row's values.

use std::sync::Arc;

use crate::trino::error::TrinoError;
use crate::trino::output::QueryProgress;
use crate::trino::types::TrinoType;
use crate::trino::value::{Column, Row, Value};
use crate::trino::wire::{Data, QueryResults};

pub(super) fn decode_columns(
    cols: &[crate::trino::wire::WireColumn],
    query_id: &str,
) -> Result<Vec<Column>, TrinoError> {
    cols.iter()
        .map(|c| {
            let ty = match &c.type_signature {
                Some(sig) => TrinoType::from_signature(sig),
                None => TrinoType::parse(&c.type_text),
            }
            .or_else(|_| TrinoType::parse(&c.type_text))
            .map_err(|e| TrinoError::Malformed {
                url: String::new(),
                message: format!(
                    "query {query_id}: column {:?} has an unreadable type {:?}: {e}",
                    c.name, c.type_text
                ),
            })?;
            Ok(Column {
                name: c.name.clone(),
                type_text: c.type_text.clone(),
                ty,
            })
        })
        .collect()
}

pub(super) fn decode_row(
    cols: &Arc<Vec<Column>>,
    raw: Vec<serde_json::Value>,
    query_id: &str,
) -> Result<Row, TrinoError> {
    if raw.len() != cols.len() {
        return Err(TrinoError::Malformed {
            url: String::new(),
            message: format!(
                "query {query_id}: a row has {} values for {} columns",
                raw.len(),
                cols.len()
            ),
        });
    }
    let values = cols
        .iter()
        .zip(raw.iter())
        .map(|(c, v)| {
            Value::decode(&c.ty, v).map_err(|e| TrinoError::Malformed {
                url: String::new(),
                message: format!("query {query_id}: column {:?}: {e}", c.name),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Row {
        columns: cols.clone(),
        values,
    })
}

/// One `QueryResults` page decoded as [`Client::execute`] decodes each page: the columns
/// (types from `typeSignature`, else from the type text) and the rows, every value typed,
/// with the errors the client would report. Public so the fuzz targets can reach it.
#[doc(hidden)]
pub fn decode_page(text: &str) -> Result<(Arc<Vec<Column>>, Vec<Row>), TrinoError> {
    let page: QueryResults = serde_json::from_str(text).map_err(|e| TrinoError::Malformed {
        url: String::new(),
        message: e.to_string(),
    })?;
    let _ = QueryProgress::from_stats(&page.id, &page.info_uri, &page.stats);
    let columns = Arc::new(match &page.columns {
        Some(cols) => decode_columns(cols, &page.id)?,
        None => Vec::new(),
    });
    let mut rows = Vec::new();
    match page.data {
        Some(Data::Rows(raw)) => {
            for r in raw {
                rows.push(decode_row(&columns, r, &page.id)?);
            }
        }
        Some(Data::Spooled) | None => {}
    }
    Ok((columns, rows))
}
