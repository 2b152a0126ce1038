//! Finding the server: which REST API it speaks, and its version.

use secrecy::ExposeSecret;
use url::Url;

use super::error::{AirflowError, body_message, snippet};
use super::http::{JSON, RetryPolicy, join};
use super::model::{ApiVersion, ServerVersion, major_of};
use crate::config::{AirflowApi, AirflowSettings};
use crate::net::{self, BodyLimit, Idempotency, Reply};

/// Find the server and its major version. Version endpoints need no auth on 2.10 and 3.x;
/// credentials are sent to v1's only if it asks for them.
pub(super) async fn detect(
    http: &reqwest::Client,
    base: &Url,
    settings: &AirflowSettings,
    retry: &RetryPolicy,
) -> Result<(ApiVersion, ServerVersion), AirflowError> {
    let candidates: &[ApiVersion] = match settings.api {
        AirflowApi::Auto => &[ApiVersion::V2, ApiVersion::V1],
        AirflowApi::V2 => &[ApiVersion::V2],
        AirflowApi::V1 => &[ApiVersion::V1],
    };
    let mut tried = Vec::new();
    for &api in candidates {
        let url = join(base, &format!("{}/version", api.prefix()))?;
        let mut r = get_version(http, &url, settings, retry, false).await?;
        if matches!(r.status.as_u16(), 401 | 403) && api == ApiVersion::V1 {
            r = get_version(http, &url, settings, retry, true).await?;
        }
        let version = if r.status.is_success() {
            serde_json::from_str::<ServerVersion>(&r.text).ok()
        } else {
            None
        };
        let Some(version) = version else {
            let what = if r.status.is_success() {
                format!(
                    "HTTP 200 without a version document ({:?})",
                    snippet(&r.text)
                )
            } else {
                let m = body_message(&r.text);
                format!(
                    "HTTP {}{}",
                    r.status.as_u16(),
                    if m.is_empty() {
                        String::new()
                    } else {
                        format!(" ({m})")
                    }
                )
            };
            tried.push(format!("GET {url}: {what}"));
            continue;
        };
        let chosen = match major_of(&version.version) {
            Some(m) if m >= 3 => ApiVersion::V2,
            Some(2) => ApiVersion::V1,
            _ => {
                return Err(AirflowError::Unsupported {
                    url: base.to_string(),
                    version: version.version,
                    message: "floe speaks the REST APIs of Airflow 2 (v1) and 3 (v2)".into(),
                });
            }
        };
        if settings.api != AirflowApi::Auto && chosen != api {
            return Err(AirflowError::Unsupported {
                url: base.to_string(),
                version: version.version,
                message: format!(
                    "the settings force API {api}, which this major version does not serve"
                ),
            });
        }
        return Ok((chosen, version));
    }
    Err(AirflowError::NotAirflow {
        url: base.to_string(),
        message: tried.join("; "),
    })
}

async fn get_version(
    http: &reqwest::Client,
    url: &Url,
    settings: &AirflowSettings,
    retry: &RetryPolicy,
    auth: bool,
) -> Result<Reply, AirflowError> {
    let build = || {
        let req = http.get(url.clone()).header("accept", JSON);
        match (&settings.token, &settings.user, &settings.password, auth) {
            (Some(t), _, _, true) => req.bearer_auth(t.expose_secret()),
            (None, Some(u), Some(p), true) => req.basic_auth(u, Some(p.expose_secret())),
            _ => req,
        }
    };
    let policy = retry
        .policy()
        .with_body(BodyLimit::Whole(settings.max_response_size));
    net::send(&policy, Idempotency::Idempotent, None, url, build)
        .await
        .map_err(|f| AirflowError::from_net(&reqwest::Method::GET, url, f))
}
