//! Cancelling an abandoned query with `DELETE nextUri`.

use std::time::Duration;

use reqwest::header::HeaderMap;
use url::Url;

use crate::net::error_chain;

/// Sends `DELETE nextUri` when a query is abandoned: on cancel, on deadline, and when the
/// future running it is dropped mid-way.
pub(super) struct CancelGuard {
    pub(super) http: reqwest::Client,
    pub(super) headers: HeaderMap,
    pub(super) url: Option<Url>,
}

impl CancelGuard {
    pub(super) async fn cancel_now(&mut self) {
        if let Some(url) = self.url.take() {
            cancel_with_retries(self.http.clone(), self.headers.clone(), url).await;
        }
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(url) = self.url.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(cancel_with_retries(
                self.http.clone(),
                self.headers.clone(),
                url,
            ));
        }
    }
}

/// `DELETE nextUri`, retried briefly through the same transient failures as any request
/// (a proxy storm that made the client give up may be over a moment later).
pub(super) async fn cancel_with_retries(http: reqwest::Client, headers: HeaderMap, url: Url) {
    let mut wait = Duration::from_millis(100);
    for attempt in 1..=5 {
        let r = http
            .delete(url.clone())
            .headers(headers.clone())
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        match r {
            Ok(resp) if !matches!(resp.status().as_u16(), 429 | 502..=504) => {
                tracing::info!(%url, status = resp.status().as_u16(), "cancelled Trino query");
                return;
            }
            Ok(resp) => {
                tracing::debug!(%url, attempt, status = resp.status().as_u16(), "cancel not accepted yet")
            }
            Err(e) => tracing::debug!(%url, attempt, error = %error_chain(&e), "cancel failed"),
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
    tracing::warn!(%url, "could not cancel the Trino query; the coordinator abandons it when polling stops");
}
