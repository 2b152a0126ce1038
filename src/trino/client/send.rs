//! Sending one request: [`net::send`]'s retries, the one login a 401 may trigger, and the
//! error an answer other than 200/204 makes; the JSON page of a statement on top.

use reqwest::Method;
use reqwest::header::HeaderMap;
use tokio::time::Instant;
use url::Url;

use super::{Body, Client};
use crate::net::{self, BodyLimit, Idempotency, NetFailure};
use crate::trino::error::TrinoError;
use crate::trino::oauth2;
use crate::trino::wire::QueryResults;

impl Client {
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn request_json(
        &self,
        method: Method,
        url: &Url,
        body: Body<'_>,
        deadline: Option<Instant>,
        headers: &HeaderMap,
        mutation: bool,
        retries: &mut u32,
    ) -> Result<QueryResults, TrinoError> {
        let replayable = method != Method::POST;
        let mut malformed = 0;
        loop {
            let (text, headers) = self
                .request(
                    method.clone(),
                    url,
                    body,
                    deadline,
                    headers,
                    mutation,
                    retries,
                )
                .await?;
            match serde_json::from_str::<QueryResults>(&text) {
                Ok(page) => {
                    self.apply_response_headers(&headers);
                    return Ok(page);
                }
                Err(e) => {
                    malformed += 1;
                    if replayable && malformed <= self.cfg.retry.max_malformed {
                        tracing::warn!(%url, error = %e, "malformed Trino page; fetching it again");
                        *retries += 1;
                        tokio::time::sleep(self.cfg.retry.initial_backoff).await;
                        continue;
                    }
                    if mutation && !replayable {
                        // Accepted (2xx): the statement may be running with its id unread.
                        return Err(TrinoError::MayHaveRun {
                            url: url.to_string(),
                            message: format!("the answer accepting it is not a Trino page ({e})"),
                        });
                    }
                    let snippet: String = text.chars().take(120).collect();
                    return Err(TrinoError::Malformed {
                        url: url.to_string(),
                        message: format!("{e} (body starts {snippet:?})"),
                    });
                }
            }
        }
    }

    /// One HTTP exchange with the retries of [`net::send`]: 502/503/504 with exponential
    /// backoff, 429 after Retry-After, transport errors; a `mutation` only after what
    /// proves it never started (see [`never_started`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn request(
        &self,
        method: Method,
        url: &Url,
        body: Body<'_>,
        deadline: Option<Instant>,
        headers: &HeaderMap,
        mutation: bool,
        retries: &mut u32,
    ) -> Result<(String, HeaderMap), TrinoError> {
        let mut reply = self
            .send_once(&method, url, body, deadline, headers, mutation, retries)
            .await?;
        if reply.status.as_u16() == 401
            && let Some(o) = &self.oauth
        {
            let sent = headers.get(reqwest::header::AUTHORIZATION);
            // A 401 means nothing ran: the request is sent again with the new token.
            if let Some(token) = o
                .unauthorized(self, url, &reply.headers, sent, deadline)
                .await?
            {
                let fresh = oauth2::with_token(headers, &token)?;
                reply = self
                    .send_once(&method, url, body, deadline, &fresh, mutation, retries)
                    .await?;
            }
        }
        let status = reply.status.as_u16();
        if matches!(status, 200 | 204) {
            return Ok((reply.text, reply.headers));
        }
        let message = body_message(&reply.text);
        let url = url.to_string();
        Err(match status {
            401 | 403 => TrinoError::Auth {
                status,
                url,
                message,
            },
            _ if reply.gave_up => TrinoError::Http {
                status,
                url,
                message: format!("{message} (gave up after {} attempts)", reply.attempts)
                    .trim_start()
                    .to_string(),
            },
            _ => TrinoError::Http {
                status,
                url,
                message,
            },
        })
    }

    /// One request through [`net::send`]'s retries: the answer, whatever its status.
    #[allow(clippy::too_many_arguments)]
    async fn send_once(
        &self,
        method: &Method,
        url: &Url,
        body: Body<'_>,
        deadline: Option<Instant>,
        headers: &HeaderMap,
        mutation: bool,
        retries: &mut u32,
    ) -> Result<net::Reply, TrinoError> {
        let idempotency = if mutation {
            Idempotency::Mutation
        } else {
            Idempotency::Idempotent
        };
        let build = || {
            let req = self
                .http
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            match &body {
                Body::Sql(sql) => req
                    .header("content-type", "text/plain; charset=utf-8")
                    .body(sql.to_string()),
                Body::None => req,
            }
        };
        let policy = self
            .cfg
            .retry
            .policy()
            .with_body(BodyLimit::Whole(self.max_response_size));
        let reply = net::send(&policy, idempotency, deadline, url, build)
            .await
            .map_err(|f| match f {
                NetFailure::Transport { message } => TrinoError::Transport {
                    url: url.to_string(),
                    message,
                },
                NetFailure::MayHaveRun { message } => TrinoError::MayHaveRun {
                    url: url.to_string(),
                    message,
                },
                NetFailure::TooLarge { limit } => TrinoError::TooLarge {
                    url: url.to_string(),
                    limit,
                },
            })?;
        *retries += reply.attempts - 1;
        Ok(reply)
    }
}

/// A short message from an error body: JSON `message`/`detail`, else the text itself.
fn body_message(text: &str) -> String {
    let t = text.trim();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(t) {
        for k in ["message", "detail", "error"] {
            if let Some(s) = v.get(k).and_then(|x| x.as_str()) {
                return s.to_string();
            }
        }
    }
    net::text_reason(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies() {
        assert_eq!(
            body_message(r#"{"message":"Query not found"}"#),
            "Query not found"
        );
        assert_eq!(
            body_message("Error 503 Service Unavailable\n"),
            "Error 503 Service Unavailable"
        );
        assert_eq!(
            body_message("<html><head><title>502 Bad Gateway</title></head></html>"),
            "502 Bad Gateway"
        );
    }
}
