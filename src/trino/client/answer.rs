//! The answer to a statement as its pages arrive: the columns once, each page's rows
//! decoded against them, the last update type and count, each distinct warning once.

use std::sync::Arc;

use url::Url;

use crate::trino::error::TrinoError;
use crate::trino::output::{QueryOutput, QueryProgress};
use crate::trino::value::{Column, Row};
use crate::trino::wire::{Data, QueryError, QueryResults};

use super::decode::{decode_columns, decode_row};

pub(super) struct Answer {
    query_id: String,
    /// Where the statement was posted: what a malformed page's error names.
    url: String,
    columns: Option<Arc<Vec<Column>>>,
    rows: Vec<Row>,
    update_type: Option<String>,
    update_count: Option<i64>,
    warnings: Vec<String>,
}

impl Answer {
    pub(super) fn new(query_id: &str, url: &Url) -> Answer {
        Answer {
            query_id: query_id.to_string(),
            url: url.to_string(),
            columns: None,
            rows: Vec::new(),
            update_type: None,
            update_count: None,
            warnings: Vec::new(),
        }
    }

    /// Take what `page` carries for the answer: its columns (the first time), its rows, its
    /// update type and count, its warnings. Its error and next URI are the caller's.
    pub(super) fn take(&mut self, page: &mut QueryResults) -> Result<(), TrinoError> {
        if self.columns.is_none()
            && let Some(cols) = &page.columns
        {
            self.columns = Some(Arc::new(decode_columns(cols, &self.query_id)?));
        }
        if let Some(data) = page.data.take() {
            self.take_data(data)?;
        }
        if page.update_type.is_some() {
            self.update_type = page.update_type.clone();
        }
        if page.update_count.is_some() {
            self.update_count = page.update_count;
        }
        for w in page.warnings.drain(..) {
            let text = match &w.warning_code {
                Some(c) if !c.name.is_empty() => format!("{}: {}", c.name, w.message),
                _ => w.message,
            };
            if !self.warnings.contains(&text) {
                self.warnings.push(text);
            }
        }
        Ok(())
    }

    fn take_data(&mut self, data: Data) -> Result<(), TrinoError> {
        let query_id = &self.query_id;
        let cols = self.columns.clone().ok_or_else(|| TrinoError::Malformed {
            url: self.url.clone(),
            message: format!("query {query_id}: data arrived before columns"),
        })?;
        match data {
            Data::Rows(raw) => {
                self.rows.reserve(raw.len());
                for r in raw {
                    self.rows.push(decode_row(&cols, r, query_id)?);
                }
                Ok(())
            }
            Data::Spooled => Err(TrinoError::Malformed {
                url: self.url.clone(),
                message: format!(
                    "query {query_id}: the server sent spooled data, which floe does not request"
                ),
            }),
        }
    }

    /// The complete answer, once the last page is in.
    pub(super) fn finish(
        self,
        info_uri: Option<String>,
        progress: QueryProgress,
        retries: u32,
    ) -> QueryOutput {
        QueryOutput {
            query_id: self.query_id,
            info_uri,
            columns: self.columns.unwrap_or_default(),
            rows: self.rows,
            update_type: self.update_type,
            update_count: self.update_count,
            warnings: self.warnings,
            progress,
            retries,
        }
    }
}

/// The error of a query that failed, as a page reported it.
pub(super) fn query_error(query_id: String, e: QueryError) -> TrinoError {
    TrinoError::Query {
        query_id,
        error_name: if e.error_name.is_empty() {
            "UNKNOWN_ERROR".into()
        } else {
            e.error_name
        },
        error_code: e.error_code,
        error_type: e.error_type,
        message: e.message,
        location: e.error_location.map(|l| (l.line_number, l.column_number)),
    }
}
